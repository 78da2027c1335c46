"""HTTP serving shared by the sidecar and the plane: listening sockets and the guarded
protocol, error rendering and body bounds, offline API docs."""

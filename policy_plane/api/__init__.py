"""The plane's HTTP API: one router per resource, auth dependencies, error rendering, body bounds."""

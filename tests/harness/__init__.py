"""The one layer of shared test infrastructure: what more than one test module uses.

Real processes and how to start them (``sidecar_process``, ``plane_process``, ``launch``),
whole deployments (``cluster``: one nats-server; ``r3_cluster``: a 3-node JetStream
cluster), the worlds those start from (keys, bundles, relations files), stand-ins (a plane
publishing signed events, an Envoy, an upstream app, an IdP's tokens), and raw protocol
clients (HTTP, HTTP/2, NATS) for bytes no client library would send.

The rules, kept by ``tests/test_layout.py``:

* no module imports a test module (``test_*.py``): a helper two test modules share lives
  here, never in one of them;
* a test package reaches another package's helpers only through this one (no importing
  another package's ``conftest`` or helper modules);
* this package imports no test package: it is the bottom layer.

Fixtures stay in each package's ``conftest.py``; they build on what is here. A helper
module that serves one package only (``tests/fuzz/strategies.py``) may stay beside it.
"""

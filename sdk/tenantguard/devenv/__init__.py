"""Local orchestration: ``tenantguard dev`` and ``tenantguard demo``.

This package starts the services, so it sits outside the library: it depends on the
plane and the sidecar only through their CLI in subprocesses (it never imports
``authz_sidecar``), and its commands reach the ``tenantguard`` CLI through the
``tenantguard.cli`` entry-point group. The demo's services live in :mod:`.services`
and use the SDK only.
"""

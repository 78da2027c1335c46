"""Failures the fuzzers found in areas other branches were fixing when they were found.

How the list works: each entry names the branch that owns the fix and a minimal
reproducer; draws of its class are kept out of the fuzzers by an ``excluded_*``
predicate, and ``test_known.py`` replays the reproducer and asserts it still fails as
described. When the fix lands (after ``git merge main``) the replay fails on purpose:
delete the entry, its replay and its exclusion, and the fuzzers cover the class again.
Nothing is silently skipped or xfailed.

Found and since fixed on main (entries removed, classes back in the fuzzers):

* ``doors``/``opa``: ``GET /v1/data/...?input=`` nested 5,000 deep was a 500 (RecursionError).
* ``tokens``: a signed ``exp`` of ``10**400`` raised OverflowError (a 500 at every door).
* ``tokens``: a signed ``exp`` of ``NaN`` was accepted and never expired.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    name: str
    branch: str
    what: str


ENVOY_HTTP_EMPTY_ALLOW = Known(
    "envoy_http_empty_allow", "envoy",
    "GET /envoy/ext_authz/0 with a valid token answers 200 with an empty body (Envoy's http_service "
    "contract) while the sidecar's OpenAPI document declares an application/json response for it; "
    "schema conformance is not checked under /envoy/ext_authz/ (test_schemas.ENVOY_PREFIX)",
)
OPA_GET_NEWLINE_PATH = Known(
    "opa_get_newline_path", "opa",
    "GET (or PUT) /v1/data/a%0Ab (a newline inside the data path): the route's {path:path} does not match a "
    "newline, so the framework answers 404 {error: not_found} without the OPA 'code' member the "
    "documented 404 schema requires (found by the long schemathesis pass); schema conformance is not "
    "checked for /v1/data 404s (test_schemas.conforms)",
)
KNOWN: tuple[Known, ...] = (ENVOY_HTTP_EMPTY_ALLOW, OPA_GET_NEWLINE_PATH)

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
* ``envoy``: ``GET /envoy/ext_authz/0`` answered 200 with an empty body while the OpenAPI
  document declared a JSON response (it now documents the empty 200).
* ``opa``: ``/v1/data/a%0Ab`` (a newline no route matches) got the framework's 404 without
  OPA's ``code`` member (framework 404/405s under OPA's paths are now in OPA's shape).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    name: str
    branch: str
    what: str


KNOWN: tuple[Known, ...] = ()

"""Publishing a policy bundle: verify or (compile, test, sign), order-check, store, announce.

* A signed upload must verify against the plane's bundle key (a bundle signed by
  anyone else never reaches a sidecar).
* Every upload is compiled and its Rego tests run (the publish gate); any failing test
  refuses it, naming the tests, unless the upload says ``skip_tests`` (the audit log and the
  answer record it). An unsigned upload (from an admin) is then signed with the bundle key.
* ``.manifest`` ``metadata.services`` (a list) picks the scopes the bundle is for;
  absent means ``all``. Each scope has its own :class:`BundleStore`, whose ordering
  rules refuse rollbacks (an older serial, or the same serial with other content).
* The bytes go to object ``bundles/<scope>/<revision>`` in ``tg-bundles`` first; only
  then is the signed ``bundle.announce`` published on ``tg.bundles.<scope>``, so a
  sidecar never hears of bytes that are not there yet.

The package is split by concern, so a change to one of them is made in one room:
``checks`` (what a bundle must be: scopes, revision form, compile and tests), ``core``
(accepting an upload and announcing it to one scope, with the ordering check every path
shares), ``impact`` (the impact gate: replaying the decision sample), ``shadows``,
``rollback``, ``rollouts`` (staged rollouts and their reconciler) and ``service``
(:class:`BundleService`, which composes them and publishes).
"""

from .checks import REVISION_RE, bundle_scopes, compile_and_test, within_declared
from .impact import IMPACT_GROUPS_SHOWN, IMPACT_MODES, ImpactGate
from .rollouts import RECONCILED_KEPT, Reconciled
from .service import BundleService

__all__ = ["IMPACT_GROUPS_SHOWN", "IMPACT_MODES", "RECONCILED_KEPT", "REVISION_RE", "BundleService", "ImpactGate",
           "Reconciled", "bundle_scopes", "compile_and_test", "within_declared"]

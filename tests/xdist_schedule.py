"""How the xdist controller hands out tests (``--dist loadfile``, set in pyproject's addopts).

A work unit is a whole file, so module-scoped servers start once, or a whole package listed
in :data:`SHARED_PACKAGES`, whose files share a package-scoped deployment. (``xdist_group``
marks would say that at the tests, but ``--dist loadgroup`` carries a group in the node id,
which pytest 9.2's structured node ids drop: every test went its own way,
pytest-dev/pytest-xdist#1386.) Units go out longest first, so that no worker picks up a long
one while the others run out of work: the known long ones by their figure in
:data:`SLOW_UNITS`, the rest by test count (xdist's own order). The figures decide the order
only; a stale one costs balance, never a result.
"""

from __future__ import annotations

from collections import OrderedDict

from xdist.scheduler import LoadScopeScheduling

# Packages whose conftest starts one deployment for all their files (package-scoped fixture).
SHARED_PACKAGES: tuple[str, ...] = (
    "tests/cluster/",  # dep: 3 NATS nodes, 2 plane replicas, 3 sidecars
    "tests/exchange/",  # mesh: 5 sidecars and a local IdP
)

# Serial seconds of the slowest units on a quiet 2-core machine (--durations=0, rounded).
SLOW_UNITS: dict[str, float] = {
    "tests/cluster/": 225,
    "tests/plane/test_trust_admin.py": 44,
    "tests/e2e/test_rollout.py": 36,
    "tests/e2e/test_distribution.py": 34,
    "tests/exchange/": 31,
    "tests/plane/test_groupcommit.py": 27,
    "tests/e2e/test_faults.py": 27,
    "tests/docs/test_readme_tour.py": 24,
    "tests/natsio/test_natscluster.py": 20,
    "tests/e2e/test_decision_records.py": 19,
    "tests/plane/test_config_and_cli.py": 18,
    "tests/plane/test_replicas.py": 18,
    "tests/proxy_envoy/test_real_envoy.py": 17,
    "tests/devenv/test_demo.py": 17,
    "tests/plane/test_bundles.py": 17,
}


def unit_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return next((package for package in SHARED_PACKAGES if path.startswith(package)), path)


def unit_order(units: dict[str, dict[str, bool]]) -> list[str]:
    """Longest first: the units of :data:`SLOW_UNITS` by their figure, then by test count."""
    return sorted(units, key=lambda unit: (-SLOW_UNITS.get(unit, 0), -len(units[unit])))


class FileOrPackageScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def schedule(self) -> None:
        """xdist's ``LoadScopeScheduling.schedule``, with the queue in :func:`unit_order`."""
        if self.collection is not None or not self._check_nodes_have_same_collection():  # type: ignore[has-type]
            super().schedule()  # later calls: top up every worker; a collection mismatch: logged there
            return
        collection = list(next(iter(self.registered_collections.values())))
        self.collection = collection
        if not collection:
            return
        units: dict[str, dict[str, bool]] = {}
        for nodeid in collection:
            units.setdefault(unit_of(nodeid), {})[nodeid] = False
        self.workqueue = OrderedDict((unit, units[unit]) for unit in unit_order(units))
        for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than units
            unused, _assigned = self.assigned_work.popitem()
            unused.shutdown()
        # two units each to start with where there are enough: a worker runs a test only once it
        # knows the next one, so a worker holding one single-test unit would wait forever
        for node in self.nodes:
            self._assign_work_unit(node)
        for node in self.nodes:
            self._reschedule(node)
        if not self.workqueue:
            for node in self.nodes:
                node.shutdown()

"""How the xdist controller hands out tests (``--dist loadgroup``, set in pyproject's addopts).

A work unit is a whole file, or a whole ``xdist_group`` (files sharing a package-scoped
deployment): most real servers here are module- or package-scoped fixtures, so a file split
over two workers would start them twice. Units go out longest first, so that no worker picks
up a long one near the end while the others sit idle; the known long ones are listed in
:data:`SLOW_UNITS`, and the rest follow by test count (xdist's own ``loadscope`` order). The
figures decide the order only: a stale one costs balance, never a result.
"""

from __future__ import annotations

from collections import OrderedDict

from xdist.scheduler import LoadScopeScheduling

# Serial seconds of the slowest units on a quiet 2-core machine (rounded; --durations=0).
SLOW_UNITS: dict[str, float] = {
    "group:cluster": 110,
    "tests/plane/test_trust_admin.py": 44,
    "tests/e2e/test_rollout.py": 36,
    "tests/e2e/test_distribution.py": 34,
    "group:exchange-mesh": 28,
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


class FileOrGroupScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # xdist appends "@<group>" under loadgroup
            return "group:" + nodeid.rsplit("@", 1)[1]
        return nodeid.split("::", 1)[0]

    def schedule(self) -> None:
        """xdist's ``LoadScopeScheduling.schedule`` with the queue in :func:`unit_order`."""
        if self.collection is not None or not self._check_nodes_have_same_collection():  # type: ignore[has-type]
            super().schedule()  # later calls: top up every worker; a collection mismatch: logged there
            return
        collection = list(next(iter(self.registered_collections.values())))
        self.collection = collection
        if not collection:
            return
        units: dict[str, dict[str, bool]] = {}
        for nodeid in collection:
            units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
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


def unit_order(units: dict[str, dict[str, bool]]) -> list[str]:
    """Longest first: the units of :data:`SLOW_UNITS` by their figure, then by test count."""
    return sorted(units, key=lambda unit: (-SLOW_UNITS.get(unit, 0), -len(units[unit])))

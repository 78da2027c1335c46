"""Opt-in pytest fixtures for services built on tenantguard.

Not loaded automatically. Enable it in a test suite with ``pytest_plugins =
["tenantguard.pytest_plugin"]`` in a conftest, ``-p tenantguard.pytest_plugin``, or
(for a distribution that wants it always on) the entry point documented in
docs/sdk.md::

    [project.entry-points.pytest11]
    tenantguard = "tenantguard.pytest_plugin"

Fixtures: ``tg_issuer`` (a :class:`~tenantguard.testing.TestIssuer`, per session) and
``tg_sidecar`` (a factory that starts :class:`~tenantguard.testing.LocalSidecar`
processes and stops them at the end of the test).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tenantguard.testing import LocalSidecar, TestIssuer


@pytest.fixture(scope="session")
def tg_issuer() -> TestIssuer:
    return TestIssuer("edge")


@pytest.fixture()
def tg_sidecar(tg_issuer: TestIssuer, tmp_path: Path) -> Iterator[Callable[..., LocalSidecar]]:
    started: list[LocalSidecar] = []

    def start(service: str, bundle_dir: str | Path, **kwargs: Any) -> LocalSidecar:
        workdir = tmp_path / f"sidecar-{service}-{len(started)}"
        workdir.mkdir()
        sidecar = LocalSidecar(service, bundle_dir, issuer=kwargs.pop("issuer", tg_issuer), workdir=workdir,
                               **kwargs)
        started.append(sidecar.start())
        return sidecar

    yield start
    for sidecar in started:
        sidecar.stop()

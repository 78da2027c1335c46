"""A real nats-server per test: free port, its own JetStream store, always stopped.

Other test packages start servers the same way, importing :mod:`tenantguard.dev.natsserver`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tenantguard.dev.natsserver import NatsServer


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "nats") as server:
        yield server

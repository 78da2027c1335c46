"""NatsCluster: three real nats-server processes forming a JetStream cluster on loopback."""

from __future__ import annotations

import asyncio
import collections
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.js.api import StreamConfig
from tenantguard.dev.natscluster import NatsCluster
from tenantguard.feed.natsconn import parse_servers

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    with NatsCluster(tmp_path_factory.mktemp("natscluster")) as running:
        yield running


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _quiet(_exc: Exception) -> None:
    pass


async def _ensure_stream(urls: str, name: str) -> None:
    nc = await nats.connect(urls.split(","), connect_timeout=2, error_cb=_quiet)
    try:
        js = nc.jetstream(timeout=10)
        try:
            await js.stream_info(name)
        except nats.js.errors.NotFoundError:
            await js.add_stream(StreamConfig(name=name, subjects=[f"{name.lower()}.x"], num_replicas=3))
    finally:
        await nc.close()


def test_urls_is_a_server_list_of_every_node(cluster: NatsCluster) -> None:
    servers = parse_servers(cluster.urls)
    assert len(servers) == 3
    assert [cluster.index_of(s) for s in servers] == [0, 1, 2]
    assert len({cluster.pid(i) for i in range(3)}) == 3
    assert cluster.wait_healthy() in {"n0", "n1", "n2"}


def test_expected_sequence_races_on_an_r3_stream_are_10071_or_10164(cluster: NatsCluster) -> None:
    """What JetStream really answers when writers through different nodes race on one subject:
    both codes occur on a clustered stream, and the plane maps both to SequenceConflict."""
    from policy_plane.publisher import _WRONG_LAST_SEQUENCE

    _run(_ensure_stream(cluster.urls, "RACE"))
    codes: collections.Counter[int] = collections.Counter()

    async def writer(url: str, n: int) -> None:
        nc = await nats.connect(url, connect_timeout=2, error_cb=_quiet)
        js = nc.jetstream(timeout=10)
        done = attempts = 0
        try:
            while done < n and attempts < n * 20:  # bounded: a loaded machine may time requests out
                attempts += 1
                try:
                    last = (await js.get_last_msg("RACE", "race.x")).seq or 0
                except nats.js.errors.NotFoundError:
                    last = 0
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                try:
                    await js.publish("race.x", b"x", headers={"Nats-Expected-Last-Subject-Sequence": str(last)})
                    done += 1
                except nats.js.errors.APIError as exc:
                    codes[exc.err_code or 0] += 1
                except (TimeoutError, nats.errors.TimeoutError):
                    continue  # an ambiguous outcome, not a race: not what this test counts
        finally:
            await nc.close()

    async def race() -> None:
        await asyncio.gather(*(writer(url, 40) for url in parse_servers(cluster.urls) for _ in range(2)))

    _run(race())
    assert codes, "six writers on three nodes never collided"
    assert set(codes) <= _WRONG_LAST_SEQUENCE, codes


def test_stream_leader_and_consumer_holder_are_found(cluster: NatsCluster) -> None:
    _run(_ensure_stream(cluster.urls, "PLACES"))
    cluster.wait_healthy(streams=["PLACES"])
    leader = cluster.stream_leader("PLACES")
    assert leader in (0, 1, 2)

    async def follow() -> tuple[int | None, list[str]]:
        nc = await nats.connect(cluster.urls.split(","), name="holder-probe", error_cb=_quiet)
        try:
            sub = await nc.jetstream().subscribe("places.x", stream="PLACES", ordered_consumer=True,
                                                 cb=_ignore, idle_heartbeat=0.5)
            holder = await asyncio.to_thread(_eventually, lambda: cluster.consumer_holder("PLACES", "holder-probe"))
            conns = await asyncio.to_thread(cluster.connections, "holder-probe")
            await sub.unsubscribe()
            return holder, [c.node for c in conns]
        finally:
            await nc.close()

    holder, nodes = _run(follow())
    assert holder in (0, 1, 2) and len(nodes) == 1


async def _ignore(_msg: Any) -> None:
    pass


def _eventually(probe: Any, timeout: float = 20.0) -> Any:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.1)
    raise AssertionError("not found in time")


def test_kill_pause_and_restart_nodes(cluster: NatsCluster) -> None:
    _run(_ensure_stream(cluster.urls, "FAULTS"))
    cluster.wait_healthy(streams=["FAULTS"])
    leader = cluster.stream_leader("FAULTS")
    assert leader is not None
    pid = cluster.pid(leader)
    cluster.kill(leader)
    assert pid is not None and not _alive(pid)
    assert cluster.running() == [i for i in range(3) if i != leader]
    # two of three keep a quorum: a new stream leader is elected among them
    new_leader = _eventually(lambda: next((x for x in [cluster.stream_leader("FAULTS")] if x not in (None, leader)),
                                          None))
    assert new_leader != leader
    cluster.start_node(leader)  # same ports, same store
    assert cluster.pid(leader) != pid
    cluster.wait_healthy(streams=["FAULTS"])

    cluster.pause(new_leader)
    assert new_leader not in cluster.running() and _alive(cluster.pid(new_leader) or 0)
    _eventually(lambda: x if (x := cluster.stream_leader("FAULTS")) not in (None, new_leader) else None)
    cluster.resume(new_leader)
    cluster.wait_healthy(streams=["FAULTS"])

    cluster.restart(0)
    cluster.wait_healthy(streams=["FAULTS"])
    assert sorted(cluster.running()) == [0, 1, 2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_close_stops_every_node_even_a_paused_one(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path / "c").start()
    pids = [cluster.pid(i) for i in range(3)]
    cluster.pause(1)
    cluster.close()
    assert not any(_alive(p or 0) for p in pids)


async def _connect_urls(url: str) -> list[str]:
    nc = await nats.connect([url], connect_timeout=2, error_cb=_quiet, allow_reconnect=False)
    try:
        return list(nc._server_info.get("connect_urls") or [])
    finally:
        await nc.close()


def test_clients_learn_the_other_nodes_unless_no_advertise(cluster: NatsCluster, tmp_path: Path) -> None:
    """By default a node tells its clients every node's address (INFO ``connect_urls``) and nats-py
    adds them to its server list, so a client given proxies would dial around them; with
    ``no_advertise`` it tells none, and a client dials only what it was given (the partition tests)."""
    told = _run(_connect_urls(cluster.nodes[0].url))
    assert {f"127.0.0.1:{cluster.nodes[j].port}" for j in (1, 2)} <= set(told), told
    quiet = NatsCluster(tmp_path / "quiet", no_advertise=True)
    assert "no_advertise: true" in quiet.nodes[0]._config_text()
    with quiet:
        assert _run(_connect_urls(quiet.nodes[0].url)) == []


def test_routes_can_be_dialled_and_advertised_elsewhere(tmp_path: Path) -> None:
    """``route_through`` rewrites every node's routes and advertised address (before the start)."""
    cluster = NatsCluster(tmp_path / "c")
    cluster.route_through(lambda i, j: f"127.0.0.1:{40000 + 10 * i + j}", lambda i: f"127.0.0.1:{41000 + i}")
    text = cluster.nodes[1]._config_text()
    assert '"nats-route://127.0.0.1:40010"' in text and '"nats-route://127.0.0.1:40012"' in text
    assert "40011" not in text  # a node does not dial itself
    assert 'advertise: "127.0.0.1:41001"' in text
    assert f'listen: "127.0.0.1:{cluster.route_ports[1]}"' in text

"""Queue envelopes against a real nats-server with JetStream: the consumer re-verifies the
token, restores the context, and terminates forged, tokenless or cross-tenant messages."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from tenantguard.client.embedded import EmbeddedAuthorizer
from tenantguard.context import current_context, current_tenant, use_context
from tenantguard.dev.natsserver import NatsServer
from tenantguard.envelope import HEADER, MESSAGES_REJECTED, consumer, job_headers, nats_headers, unwrap, wrap
from tenantguard.errors import TokenError
from tenantguard.identity.keys import SigningKey
from tenantguard.relations import RelationIndex
from tenantguard.testing import TestIssuer

from .conftest import SignedBundle, embedded_for

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

SUBJECT = "jobs.invoices"


@pytest.fixture()
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "nats") as server:
        yield server


@pytest.fixture()
async def js(nats_server: NatsServer) -> AsyncIterator[Any]:
    nc = await nats.connect(nats_server.url, connect_timeout=5)
    jetstream = nc.jetstream(timeout=5)
    await jetstream.add_stream(name="JOBS", subjects=["jobs.>"])
    yield jetstream
    await nc.drain()


def rejected(reason: str) -> float:
    return MESSAGES_REJECTED.labels(reason)._value.get()


async def test_consumer_accepts_valid_and_terminates_forged_missing_and_cross_tenant(
    js: Any, issuer: TestIssuer
) -> None:
    worker = issuer.verifier("orders")
    handled: list[tuple[str, str, Any]] = []
    done = asyncio.Event()

    @consumer(worker)
    async def handle(msg: Any) -> None:
        body = json.loads(msg.data)
        handled.append((current_tenant(), current_context().subject, body["n"]))
        done.set()

    before = {r: rejected(r) for r in ("token_missing", "unknown_kid", "message_tenant_mismatch")}
    acme = issuer.context(audience="orders")
    forged = TestIssuer("edge").mint(audience="orders")  # same issuer name, key nobody trusts
    await js.publish(SUBJECT, json.dumps({"n": 1}).encode())  # no token at all
    await js.publish(SUBJECT, json.dumps({"n": 2, "tenant_id": "acme"}).encode(), headers={HEADER: forged})
    await js.publish(SUBJECT, json.dumps({"n": 3, "tenant_id": "globex"}).encode(), headers=nats_headers(acme.token))
    with use_context(acme):
        await js.publish(SUBJECT, json.dumps({"n": 4, "tenant_id": "acme"}).encode(), headers=nats_headers())

    config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=2, max_deliver=3)
    sub = await js.subscribe(SUBJECT, durable="worker", cb=handle, config=config, manual_ack=True)
    await asyncio.wait_for(done.wait(), timeout=10)
    info = await _settled(js)
    await sub.unsubscribe()

    assert handled == [("acme", "alice", 4)]
    assert info.num_ack_pending == 0 and info.num_redelivered == 0  # terminated, not left to redeliver
    assert info.delivered.stream_seq == 4
    assert rejected("token_missing") == before["token_missing"] + 1
    assert rejected("unknown_kid") == before["unknown_kid"] + 1
    assert rejected("message_tenant_mismatch") == before["message_tenant_mismatch"] + 1


async def _settled(js: Any) -> Any:
    for _ in range(100):
        info = await js.consumer_info("JOBS", "worker")
        if info.num_ack_pending == 0:
            return info
        await asyncio.sleep(0.05)
    return info


async def test_a_failing_handler_naks_and_the_message_comes_back(js: Any, issuer: TestIssuer) -> None:
    attempts: list[str] = []
    done = asyncio.Event()

    @consumer(issuer.verifier("orders"))
    async def flaky(msg: Any) -> None:
        attempts.append(current_tenant())
        if len(attempts) == 1:
            raise RuntimeError("transient")
        done.set()

    await js.publish(SUBJECT, b'{"tenant_id": "acme"}', headers=nats_headers(issuer.mint(audience="orders")))
    sub = await js.subscribe(SUBJECT, durable="worker", cb=flaky, manual_ack=True,
                             config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=5))
    await asyncio.wait_for(done.wait(), timeout=10)
    await sub.unsubscribe()
    assert attempts == ["acme", "acme"]


async def test_job_token_is_exchanged_for_the_worker_with_narrowed_scope(
    js: Any, issuer: TestIssuer, signed_bundle: SignedBundle, relations_index: RelationIndex
) -> None:
    """Enqueue-time exchange: the worker (billing) trusts the producer's exchange key."""
    key = SigningKey.generate()
    producer: EmbeddedAuthorizer = embedded_for("orders", issuer, signed_bundle, relations_index, exchange_key=key)
    worker_trust = TestIssuer("sidecar:orders", key=key)
    received: list[Any] = []
    done = asyncio.Event()

    @consumer(worker_trust.verifier("billing"))
    async def work(msg: Any) -> None:
        ctx = current_context()
        received.append((ctx.tenant, ctx.scope, ctx.actor_chain))
        done.set()

    with use_context(issuer.context(audience="orders")):
        headers = await job_headers(producer, "billing", ["invoices:read"])
    await js.publish("jobs.billing", b'{"tenant_id": "acme"}', headers=headers)
    sub = await js.subscribe("jobs.billing", durable="billing", cb=work, manual_ack=True)
    await asyncio.wait_for(done.wait(), timeout=10)
    await sub.unsubscribe()
    assert received == [("acme", ("invoices:read",), ["svc:orders"])]


async def test_core_nats_messages_are_verified_too(nats_server: NatsServer, issuer: TestIssuer) -> None:
    nc = await nats.connect(nats_server.url, connect_timeout=5)
    seen: list[str] = []
    done = asyncio.Event()

    @consumer(issuer.verifier("orders"))
    async def handle(msg: Any) -> None:
        seen.append(current_tenant())
        done.set()

    await nc.subscribe("plain", cb=handle)
    await nc.publish("plain", b"{}")  # dropped: no token
    await nc.publish("plain", b'{"tenant_id": "globex"}', headers=nats_headers(issuer.mint(audience="orders")))
    await nc.publish("plain", b"{}", headers=nats_headers(issuer.mint("mallory", "globex", audience="orders")))
    await asyncio.wait_for(done.wait(), timeout=10)
    await nc.drain()
    assert seen == ["globex"]


def test_plain_dict_envelope(issuer: TestIssuer) -> None:
    with use_context(issuer.context(audience="orders")):
        envelope = wrap({"tenant_id": "acme", "n": 1})
    ctx, body = unwrap(envelope, issuer.verifier("orders"))
    assert ctx.tenant == "acme" and body == {"tenant_id": "acme", "n": 1}
    with pytest.raises(TokenError):
        unwrap({**envelope, "body": {"tenant_id": "globex"}}, issuer.verifier("orders"))
    with pytest.raises(TokenError):
        unwrap({"body": {}}, issuer.verifier("orders"))

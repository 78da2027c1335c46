"""Single writer per cell: replicas hand relation writes to the replica that writes the cell.

Without this, every plane replica commits the writes it receives itself, and two replicas
writing one cell race for its next sequence: a loser has signed and published a batch for
nothing, catches up on the winner's, and builds again, and each replica's batches are half
as large. Measured with two replicas and 8 clients, that cost a third of the throughput of
one replica (BENCHMARKS.md, "Policy plane writes").

Now each cell has one writer, chosen among the live replicas (:mod:`.peers`); the others
queue that cell's writes and hand them over in signed groups (:mod:`.forwarder`), and the
writer commits them in its own batches with its own requests (:mod:`.receiver`). Each caller
still gets its own consistency token, after its own replica has applied it.

Correctness never depends on it: a batch is ordered by JetStream's expected-sequence check
whoever publishes it, and whatever cannot be forwarded (no live writer, the writer does not
listen or refuses) is committed where it arrived. What forwarding adds is an authenticated
channel between replicas (:mod:`.wire`): a forwarded request becomes a signed batch, so it
carries a MAC under a key derived from the plane's event key, is checked for freshness and
is never accepted twice.
"""

from __future__ import annotations

from typing import Any

from nats.aio.msg import Msg
from tenantguard.keys import SigningKey, TrustSet
from tenantguard.topology import SUBJECT_HEARTBEAT, forward_subject, replica_token, replies_subject

from ..publisher import Publisher
from .forwarder import Forwarder, NotDelivered
from .peers import Peers
from .receiver import ForwardReceiver
from .wire import Write, channel_key

__all__ = ["Forwarding", "NotDelivered", "Write"]


class Forwarding:
    """Both sides of forwarding for one replica, on its NATS connection."""

    def __init__(self, replica: str, key: SigningKey, trust: TrustSet, publisher: Publisher, *,
                 heartbeat_seconds: float, timeout: float, receiver: dict[str, Any]) -> None:
        self.me = replica_token(replica)
        self.publisher = publisher
        self.peers = Peers(self.me, trust, heartbeat_seconds)
        secret = channel_key(key)
        self.forwarder = Forwarder(self.me, secret, self.peers, publisher.publish_core,
                                   timeout=timeout, max_bytes=publisher.max_payload)
        self.receiver = ForwardReceiver(self.me, secret, publish=publisher.publish_core,
                                        max_bytes=publisher.max_payload, **receiver)

    async def start(self) -> None:
        """Listen for requests and answers before this replica's first heartbeat says it is alive."""
        self.forwarder.max_bytes = self.receiver.max_bytes = self.publisher.max_payload
        await self.publisher.subscribe_core(forward_subject(self.me), self.receiver.on_message)
        await self.publisher.subscribe_core(replies_subject(self.me), self._on_answer)
        await self.publisher.subscribe_core(SUBJECT_HEARTBEAT, self._on_heartbeat)

    async def close(self) -> None:
        await self.forwarder.close()
        await self.receiver.close()

    async def _on_answer(self, msg: Msg) -> None:
        self.forwarder.on_answer(msg)

    async def _on_heartbeat(self, msg: Msg) -> None:
        self.peers.on_heartbeat(msg.data)

    def status(self) -> dict[str, Any]:
        return {"replica_token": self.me, "peers": sorted(self.peers.live()),
                "sent": dict(self.forwarder.counts), "received": dict(self.receiver.counts)}

"""Reading a subject's stored history, for subjects where the newest *signed* version wins.

Trust sets, bundle announces and snapshot manifests are "newest wins": a reader wants the
one with the highest signed ``seq``. Asking the broker for the *last* message would let
anyone who can publish make a genuine old event the answer (a replay), so readers walk
what is stored, verify each message and keep the highest; the plane compacts these
subjects after every commit, so the walk is a handful of messages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

import nats.js.errors
from nats.js.api import RawStreamMsg
from nats.js.client import JetStreamContext

SCAN_LIMIT: Final = 10_000


async def subject_history(js: JetStreamContext, stream: str, subject: str, *,
                          limit: int = SCAN_LIMIT, start_seq: int = 1) -> AsyncIterator[RawStreamMsg]:
    """Every message stored on ``subject`` from stream sequence ``start_seq``, oldest first, at
    most ``limit`` of them.

    One JetStream "next by subject" request per message (it reads what is stored, whether or
    not the stream still lists the subject); nats-py errors other than "no more messages"
    propagate for the caller's boundary to translate.
    """
    seq = max(1, start_seq)
    for _ in range(limit):
        try:
            msg = await js.get_msg(stream, seq, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return
        yield msg
        seq = int(msg.seq or 0) + 1

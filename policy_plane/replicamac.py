"""MACs only plane replicas can make, keyed from the event signing key they all hold.

Every replica holds the plane's event private key (it signs batches and heartbeats) and
nothing else may, so a key derived from it with HKDF authenticates "a replica made this" as
well as the key's signature does, at a fraction of the cost: HMAC-SHA256 is ~2 us, an
Ed25519 signature ~30 us to make and ~90 us to check. Each use derives its own key (HKDF
``info``), so a MAC made for one purpose proves nothing for another.

Used by :class:`BatchSeal`: the header a replica adds to each relations batch it publishes,
so that the other replicas apply it without checking its signature again (sidecars cannot
make or check the MAC: they verify the signature, as before). With two replicas each one
checked the other's batches at ~90 us each, ~13 % of a core at 2,200 writes/s.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Final

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from tenantguard.feed.events import RELATIONS_BATCH, Event
from tenantguard.feed.topology import PLANE_ISSUER
from tenantguard.identity.keys import SigningKey

BATCH_MAC_HEADER: Final = "Tg-Replica-Mac"


def replica_key(event_key: SigningKey, purpose: bytes) -> bytes:
    """A 32-byte key for ``purpose``, derived from the event key every replica holds."""
    secret = event_key.private_key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption())
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"tenantguard plane " + purpose).derive(secret)


class BatchSeal:
    """The replicas' MAC on the relations batches they publish (a NATS header beside the signed bytes)."""

    def __init__(self, event_key: SigningKey) -> None:
        self._key = replica_key(event_key, b"relations batches v1")
        self._kid = event_key.kid

    def headers(self, data: bytes) -> dict[str, str]:
        return {BATCH_MAC_HEADER: base64.urlsafe_b64encode(self._mac(data)).decode()}

    def open(self, data: bytes, headers: Mapping[str, str]) -> Event | None:
        """The batch event in ``data`` when its header MAC is a replica's; None otherwise (then the
        caller verifies the signature, as for a batch published before replicas sealed them)."""
        mac = headers.get(BATCH_MAC_HEADER)
        if not mac:
            return None
        try:
            given = base64.urlsafe_b64decode(mac.encode())
        except ValueError:
            return None
        if not hmac.compare_digest(given, self._mac(data)):
            return None
        body = json.loads(data)  # bytes a replica signed with sign_batch: canonical JSON
        if body.get("type") != RELATIONS_BATCH or body.get("kid") != self._kid:
            return None
        return Event(RELATIONS_BATCH, body["seq"], body["issued_at_ms"] / 1000, body["kid"], PLANE_ISSUER,
                     body["payload"])

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self._key, data, hashlib.sha256).digest()

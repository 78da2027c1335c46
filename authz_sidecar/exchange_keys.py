"""The sidecar's own exchange signing key through its life, and the token trust it lives in.

Token trust (what :meth:`ExchangeKeys.replace_trust` implements):

* the sidecar's own exchange key is always in its own trust set (issuer
  ``sidecar:<service>``), unless the plane withdraws it (see below);
* without NATS, the ``--trust`` file is the whole token trust set;
* with NATS, the plane's trust set is authoritative: the ``--trust`` file (if any) is
  only the bootstrap used until the first ``trust.update`` is applied (from NATS, or
  the one persisted under ``--state-dir``); from then on the set is exactly the
  plane's (plus the own key), and keys found only in the file are dropped. A key
  removed at the plane must stop being trusted everywhere, which a local file that
  kept it alive would defeat. Once the plane's set has listed the own key, a later
  set without it means the plane withdrew it, and the sidecar stops trusting it too.

A revoked own key is replaced (persisted, trusted instead of the old one, registered with
the plane): every verifier refuses tokens signed by a revoked kid.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tenantguard.exchange import KeyRegistrar, LocalTrustOnly, TokenExchanger, replace_signing_key
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.keys import TrustedKey, TrustSet
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import TokenVerifier

from .registration import PlaneRegistrar

# The logger the sidecar's key messages have always been written under (operators filter on it).
log = logging.getLogger("authz_sidecar.runtime")


class ExchangeKeys:
    """The own exchange key of one sidecar: trusted locally, kept or withdrawn as the plane's trust
    set says, replaced when revoked, registered with the plane (``registrar``, with ``--plane-url``)."""

    def __init__(self, service: str, state_dir: Path | None, exchange: TokenExchanger, trust: TrustSet,
                 verifier: TokenVerifier, revocations: RevocationList) -> None:
        self._service = service
        self._state_dir = state_dir
        self._exchange = exchange
        self._trust = trust
        self._verifier = verifier
        self._revocations = revocations
        self.own_key = TrustedKey.of(exchange.key.public_key, sidecar_issuer(service))
        if self.own_key.kid not in trust:
            trust.add(self.own_key)
        self.source = "local"  # "plane" once a trust update from the plane is applied
        self.in_plane = False  # whether the plane's last trust set listed the own key
        self.withdrawn = False
        self.registrar: PlaneRegistrar | None = None  # set by Sidecar.from_config with --plane-url

    def register(self, registrar: KeyRegistrar | None = None) -> None:
        """Hand the public key to the trust publisher; the plane's registrar plugs in here."""
        (registrar or LocalTrustOnly()).register(self._service, self._exchange.jwks()["keys"][0])

    def rotate_if_revoked(self) -> bool:
        """Replace the exchange key when its kid is revoked; True when it did.

        Every verifier refuses tokens signed by a revoked kid, so the sidecar would
        otherwise mint only refused tokens until an operator deleted its key file. The
        new key is persisted, trusted locally and registered with the plane (which
        refuses to register a revoked kid again).
        """
        if self.own_key.kid not in self._revocations.kids:
            return False
        self.rotate()
        return True

    def rotate(self) -> None:
        """A new exchange key: persisted, trusted locally instead of the old one, registered."""
        old = self.own_key
        key = replace_signing_key(self._state_dir, self._exchange.key.alg)
        self._exchange.key = key
        self.own_key = TrustedKey.of(key.public_key, sidecar_issuer(self._service))
        if old.kid in self._trust:
            self._trust.remove(old.kid)
        self._trust.add(self.own_key)
        self.in_plane = self.withdrawn = False
        self._verifier.invalidate()
        self.register(self.registrar)
        log.warning("exchange key %s replaced; now signing with %s", old.kid, key.kid)

    def replace_trust(self, keys: Iterable[TrustedKey]) -> None:
        """Adopt the plane's token trust set and forget every cached verification.

        The plane's set is authoritative (module docstring): it replaces whatever the
        ``--trust`` file bootstrapped. The own exchange key is kept trusted unless the
        plane, having listed it before, no longer does (withdrawn at the plane).
        """
        plane_keys = list(keys)
        listed = any(k.kid == self.own_key.kid for k in plane_keys)
        if self.in_plane and not listed and not self.withdrawn:
            self.withdrawn = True
            log.warning("the plane withdrew this sidecar's exchange key %s; no longer trusting it", self.own_key.kid)
        if listed:
            self.withdrawn = False
        self.in_plane = listed
        if not listed and not self.withdrawn:
            plane_keys.append(self.own_key)
        self._trust.replace_all(plane_keys)
        self.source = "plane"
        self._verifier.invalidate()

    def status(self) -> dict[str, Any]:
        """The status's ``trust`` member: where the set comes from and where the own key stands in it."""
        return {"source": self.source, "keys": len(self._trust), "issuers": self._trusted_issuers(),
                "own_kid": self.own_key.kid, "own_key_trusted": self.own_key.kid in self._trust,
                "own_key_in_plane_set": self.in_plane}

    def _trusted_issuers(self) -> dict[str, int]:
        """How many keys are trusted per issuer (kids stay out of the status: a set may hold hundreds)."""
        counts: dict[str, int] = {}
        for key in self._trust:
            counts[key.issuer] = counts.get(key.issuer, 0) + 1
        return dict(sorted(counts.items()))

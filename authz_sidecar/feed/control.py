"""Trust, revocations, bundles and heartbeats: the small, rarely changing part of the feed.

Rules shared with the relations follower: verify first (type bound to the subject), act
only on a ``seq`` newer than the last one acted on, so a replayed genuine event changes
nothing. Versions only move forward, for a warm sidecar and a cold one alike:

* Trust and bundles are "newest wins" subjects whose stream keeps history. A follower
  starting without a position reads the whole stored history first and applies only the
  verified event with the highest ``seq`` once it has read up to the subject's last
  message: never the last message stored (which anyone able to publish can make a
  replayed old one), and never an older state in passing.
* The highest ``seq`` applied is persisted (``feed.json``), so a restart refuses anything
  older than what the sidecar had already applied.
* A bundle announce names its scope; one replayed onto another scope's subject is refused.
* Heartbeats carry a signed expiry and the plane's newest versions
  (:mod:`tenantguard.feed.freshness`): an expired one is refused, and a sidecar behind a
  believable heartbeat reports it (and refuses high-risk actions).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError
from tenantguard.errors import BundleRejected, KeyMaterialError
from tenantguard.feed import topology
from tenantguard.feed.events import BUNDLE_ANNOUNCE, REVOCATION, TRUST_UPDATE, Event, EventMalformed, EventRejected
from tenantguard.feed.freshness import Heartbeat
from tenantguard.identity.keys import TrustSet
from tenantguard.identity.revocations import RevocationList
from tenantguard.rollout.shadow import ShadowSettings

from .base import FeedContext, fetch_object
from .catchup import CatchUp, StreamEnd

log = logging.getLogger(__name__)

JTI_HOLD_SECONDS = 24 * 3600  # a jti revocation without exp is kept this long (tokens live minutes)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_OBJECT = re.compile(r"[A-Za-z0-9_.\-/=]{1,255}")


class NewestWins:
    """Where a "newest wins" follower starts, and the best event held back while history is read.

    Without a position, the consumer delivers the subject's whole stored history and
    ``take`` holds back the verified event with the highest ``seq`` until the message that
    was last when the follower started has been seen; only then is it released. With a
    position (a reconnect), it resumes after it and releases each newer event at once.
    """

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.stream_seq = 0  # the last message of the subject seen (any session)
        self._until = 0
        self._held: tuple[Event, bytes] | None = None

    async def start(self, js: JetStreamContext, stream: str) -> ConsumerConfig:
        self._held = None
        if self.stream_seq:
            self._until = 0
            return ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self.stream_seq + 1)
        try:
            self._until = int((await js.get_last_msg(stream, self.subject)).seq or 0)
        except NotFoundError:
            self._until = 0
        return ConsumerConfig(deliver_policy=DeliverPolicy.ALL)

    def take(self, event: Event | None, data: bytes, stream_seq: int) -> tuple[Event, bytes] | None:
        """Note one delivered message; return the event to apply now, if any."""
        self.stream_seq = max(self.stream_seq, stream_seq)
        if event is not None and (self._held is None or event.seq > self._held[0].seq):
            self._held = (event, data)
        if stream_seq < self._until:
            return None  # still reading history: hold back
        held, self._held = self._held, None
        return held


# --------------------------------------------------------------------------- trust


class TrustFollower:
    """``tg.trust.jwks``: the whole token trust set, replaced at once, only by a newer seq."""

    kind = "trust"
    stream = topology.STREAM_TRUST
    subject = topology.SUBJECT_TRUST

    def __init__(self, ctx: FeedContext) -> None:
        self._ctx = ctx
        self.seq = 0
        self.raw: str | None = None  # the applied event, kept for the state file
        self._newest = NewestWins(self.subject)

    async def start(self, js: JetStreamContext) -> ConsumerConfig:
        return await self._newest.start(js, self.stream)

    async def handle(self, js: JetStreamContext, data: bytes, stream_seq: int) -> bool:
        event = self._ctx.gate.verify(data, TRUST_UPDATE, where=self.subject)
        ready = self._newest.take(event, data, stream_seq)
        if ready is not None:
            self._apply(*ready)
        return True

    def apply(self, data: bytes, *, where: str) -> bool:
        """Verify and apply one trust event (the persisted one at start)."""
        event = self._ctx.gate.verify(data, TRUST_UPDATE, where=where)
        return event is not None and self._apply(event, data)

    def _apply(self, event: Event, data: bytes) -> bool:
        if event.seq <= self.seq:
            self._ctx.metrics.events_duplicate.labels(self.kind).inc()
            return False
        try:
            keys = list(TrustSet.from_jwks(_mapping(event.payload.get("jwks"), "jwks")))
        except (KeyMaterialError, EventMalformed) as exc:
            self._ctx.gate.reject(EventMalformed.code, self.subject, f"trust update {event.seq}: {exc.message}")
            return False
        self._ctx.sidecar.replace_trust(keys)
        self.seq, self.raw = event.seq, data.decode("ascii")
        self._ctx.sidecar.trust_seq = event.seq
        self._ctx.metrics.events_applied.labels(self.kind).inc()
        log.info("trust set %d applied (%d keys)", event.seq, len(keys))
        return True


# --------------------------------------------------------------------------- revocations


@dataclass(slots=True)
class _Kept:
    """A revocation event kept for the state file, with when it stops mattering (None: never)."""

    raw: str
    forget_after: float | None


class RevocationsFollower:
    """``tg.revocations``: every event kept by the stream, applied in seq order.

    A gap is rescanned once from the stream's start. If the stream itself lacks the
    missing seq, later revocations are still applied (and the gap alarmed): refusing
    every future revocation because one is lost would keep revoked tokens alive.

    Decisions are held until the replay reaches the stream's end as JetStream states it at
    each (re)subscribe (:mod:`.catchup`). A message the client dropped (slow consumer) is
    loss: held again and replayed from the last message handled. A position restored from
    the state directory is checked against the live stream before the replay starts there.
    """

    kind = "revocations"
    stream = topology.STREAM_REVOCATIONS
    subject = topology.SUBJECT_REVOCATIONS

    def __init__(self, ctx: FeedContext, *, stream_seq: int = 0) -> None:
        self._ctx = ctx
        self.seq = 0
        self.stream_seq = stream_seq
        self.kept: list[_Kept] = []
        self._rescanned = False
        self.catch_up = CatchUp(ctx.sidecar.core.hold)
        self.restored = False  # stream_seq came from the state dir: check it against the stream first
        self.lost_from: int | None = None  # stream seq of the first message the client dropped

    async def start(self, js: JetStreamContext) -> ConsumerConfig:
        state = (await js.stream_info(self.stream)).state
        if self.stream_seq > state.last_seq:
            log.warning("revocations: position %d is past the stream's end %d (a new stream?); reading it all",
                        self.stream_seq, state.last_seq)
            self.stream_seq = 0
        elif self.restored and self.stream_seq and not await self._position_holds(js):
            log.warning("revocations: the persisted position %d does not hold revocation %d; reading it all",
                        self.stream_seq, self.seq)
            self.stream_seq = 0
        self.restored, self.lost_from = False, None
        self.catch_up.begin(self.stream_seq, StreamEnd(state.last_seq, state.messages))
        if self.stream_seq:
            return ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self.stream_seq + 1)
        return ConsumerConfig(deliver_policy=DeliverPolicy.ALL)

    async def _position_holds(self, js: JetStreamContext) -> bool:
        """The message at the persisted position is the newest revocation restored with it."""
        try:
            stored = await js.get_msg(self.stream, self.stream_seq)
        except NotFoundError:
            return False
        event = self._ctx.gate.peek(stored.data or b"", REVOCATION)
        return event is not None and event.seq == self.seq

    async def handle(self, js: JetStreamContext, data: bytes, stream_seq: int) -> bool:
        if self.lost_from is not None and stream_seq >= self.lost_from:
            return False  # past a dropped message: resubscribe after the last one handled
        event = self._ctx.gate.verify(data, REVOCATION, where=self.subject)
        if event is not None and event.seq > self.seq + 1 and not self._rescanned:
            self._ctx.metrics.gaps.labels(self.kind).inc()
            log.warning("revocations: expected seq %d, got %d; rescanning from the start", self.seq + 1, event.seq)
            self._rescanned, self.stream_seq = True, 0
            return False
        if event is not None:
            self.apply(event, data)
        self.stream_seq = stream_seq
        return True

    def advanced(self, num_pending: int) -> None:
        """After :meth:`handle`: ``num_pending`` is what the consumer still has after this message."""
        self.catch_up.advance(self.stream_seq, num_pending)

    def dropped(self, stream_seq: int) -> None:
        """The client dropped the message at ``stream_seq`` (slow consumer): held until replayed."""
        if self.lost_from is None:
            self.catch_up.lost(f"revocation at stream seq {stream_seq} dropped by a slow consumer; replaying")
        self.lost_from = stream_seq if self.lost_from is None else min(self.lost_from, stream_seq)

    def apply(self, event: Event, data: bytes) -> bool:
        if event.seq <= self.seq:
            self._ctx.metrics.events_duplicate.labels(self.kind).inc()
            return False
        if event.seq > self.seq + 1:
            self._ctx.metrics.gaps.labels(self.kind).inc()
            log.error("revocations %d..%d are missing from the stream; applying %d anyway",
                      self.seq + 1, event.seq - 1, event.seq)
        try:
            forget_after = apply_revocation(self._ctx.sidecar.revocations, event)
        except EventMalformed as exc:
            self._ctx.gate.reject(exc.code, self.subject, exc.message, seq=event.seq)
            forget_after = time.time()  # keep the seq moving; nothing applied
        self.seq = event.seq
        self._ctx.sidecar.revocations_seq = event.seq
        self._rescanned = False
        self.kept.append(_Kept(data.decode("ascii"), forget_after))
        self._ctx.metrics.events_applied.labels(self.kind).inc()
        if event.payload.get("kind") == "kid":
            self._ctx.sidecar.exchange_keys.rotate_if_revoked()  # our own key revoked: stop signing with it
        return True

    def to_keep(self, now: float) -> list[str]:
        """The signed events still worth persisting (expired jti revocations are dropped, except
        the newest: it is what the persisted stream position is checked against at restart,
        so a quiet stream's restart resumes there instead of replaying everything)."""
        newest = self.kept[-1] if self.kept else None
        self.kept = [k for k in self.kept if k.forget_after is None or k.forget_after >= now or k is newest]
        return [k.raw for k in self.kept]


def apply_revocation(revocations: RevocationList, event: Event) -> float | None:
    """Apply one verified ``revocation`` event; return when it may be forgotten (None: never).

    Payload by kind (times are integer epoch seconds, as the plane's revocation API writes them)::

        {"kind": "jti", "jti": "...", "exp": <the token's exp>}         forget after exp
        {"kind": "kid", "kid": "..."}
        {"kind": "subject", "tenant": "...", "sub": "...", "issued_before": N}
        {"kind": "tenant", "tenant": "...", "issued_before": N}        the kill switch
        {"kind": "lift_tenant", "tenant": "..."}

    A missing cut-off or ``exp`` defaults from the event's ``issued_at``, never from "now":
    replaying the stream after a restart must not kill tokens issued after the revocation.
    """
    p, kind = event.payload, event.payload.get("kind")
    if kind == "jti":
        until = _seconds(p, "exp", event.issued_at + JTI_HOLD_SECONDS)
        revocations.revoke_jti(_text(p, "jti"), until)
        return until
    if kind == "kid":
        revocations.revoke_kid(_text(p, "kid"))
    elif kind == "subject":
        revocations.revoke_subject(_text(p, "tenant"), _text(p, "sub"), _seconds(p, "issued_before", event.issued_at))
    elif kind == "tenant":
        revocations.revoke_tenant(_text(p, "tenant"), _seconds(p, "issued_before", event.issued_at))
    elif kind == "lift_tenant":
        revocations.lift_tenant(_text(p, "tenant"))
    else:
        raise EventMalformed(f"revocation {event.seq} has unknown kind {kind!r:.40}")
    return None


def _text(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not 0 < len(value) <= 512:
        raise EventMalformed(f"revocation member {name!r} must be a non-empty string")
    return value


def _seconds(payload: dict[str, Any], name: str, default: float) -> float:
    value = payload.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise EventMalformed(f"revocation member {name!r} must be integer epoch seconds")
    return float(value)


def _mapping(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EventMalformed(f"payload member {name!r} must be an object")
    return value


# --------------------------------------------------------------------------- bundles


@dataclass(frozen=True, slots=True)
class Announce:
    """A verified ``bundle.announce`` payload."""

    scope: str
    revision: str
    sha256: str
    size: int
    object: str
    services: tuple[str, ...]

    @classmethod
    def from_event(cls, event: Event) -> Announce:
        p = event.payload
        scope, revision, digest, size, obj = (p.get("scope"), p.get("revision"), p.get("sha256"), p.get("size"),
                                              p.get("object"))
        services = p.get("services") or []
        if not isinstance(scope, str) or not scope:
            raise EventMalformed("announce scope must be a non-empty string")
        if not isinstance(revision, str) or not revision:
            raise EventMalformed("announce revision must be a non-empty string")
        if not isinstance(digest, str) or _SHA256.fullmatch(digest) is None:
            raise EventMalformed("announce sha256 must be 64 lowercase hex digits")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise EventMalformed("announce size must be a positive integer")
        if not isinstance(obj, str) or _OBJECT.fullmatch(obj) is None:
            raise EventMalformed("announce object must be an object name")
        if not isinstance(services, list) or not all(isinstance(s, str) for s in services):
            raise EventMalformed("announce services must be a list of names")
        return cls(scope, revision, digest, size, obj, tuple(services))


class _ScopedFollower:
    """A "newest wins" subject of one scope whose events name that scope: verify with the
    subject's event type, refuse one replayed from another scope, hold back while the history
    is read, skip what is not newer, then :meth:`act` (a network failure there re-reads the
    history next time, so the event is not lost)."""

    stream = topology.STREAM_BUNDLES
    event_type = ""

    def __init__(self, ctx: FeedContext, scope: str, kind: str, subject: str) -> None:
        self._ctx = ctx
        self.scope = scope
        self.kind = kind
        self.subject = subject
        self.seq = 0
        self.raw: str | None = None  # the newest event acted on, signed, for the state file
        self._newest = NewestWins(subject)

    def restore(self, raw: str | None, *, where: str) -> None:
        """Resume after the persisted announce, re-verified and bound to this scope; a position
        without its signed event (edited, or written by an older release) is not believed."""
        if raw is None:
            return
        event = self._ctx.gate.verify(raw.encode("ascii"), self.event_type, where=where)
        if event is None or event.payload.get("scope") != self.scope:
            return
        if event.seq > self.seq:
            self.seq, self.raw = event.seq, raw

    async def start(self, js: JetStreamContext) -> ConsumerConfig:
        return await self._newest.start(js, self.stream)

    async def handle(self, js: JetStreamContext, data: bytes, stream_seq: int) -> bool:
        event = self._ctx.gate.verify(data, self.event_type, where=self.subject)
        if event is not None and event.payload.get("scope") != self.scope:
            # scopes number their events apart: one replayed onto another scope's subject is refused
            self._ctx.gate.reject(EventMalformed.code, self.subject,
                                  f"event for scope {str(event.payload.get('scope'))[:64]!r} on this subject",
                                  seq=event.seq)
            event = None
        ready = self._newest.take(event, data, stream_seq)
        if ready is None:
            return True
        event, data = ready
        if event.seq <= self.seq:
            self._ctx.metrics.events_duplicate.labels(self.kind).inc()
            return True
        try:
            acted = await self.act(js, event)
        except EventMalformed as exc:
            self._ctx.gate.reject(exc.code, self.subject, exc.message, seq=event.seq)
            acted = True  # the signed announce itself is unusable: waiting for it again helps nothing
        except BaseException:
            self._newest.stream_seq = 0  # a network failure: read the history again next time
            raise
        if acted:
            self.seq, self.raw = event.seq, data.decode("ascii")
        return True

    async def act(self, js: JetStreamContext, event: Event) -> bool:
        """Act on a verified, newer event; False when the bytes it names could not be had, so
        ``seq`` stays behind it: the sidecar then reports this stream lagging behind the plane's
        heartbeat (and refuses high-risk actions) instead of counting as applied an announce
        whose bundle it never ran (a freeze by swapping or deleting the announced object)."""
        raise NotImplementedError


class BundleFollower(_ScopedFollower):
    """``tg.bundles.<scope>`` for one scope (``all`` or this service): fetch, check, activate.

    Activation (signature, file hashes, rollback refusal, keep-last-good) is the sidecar's
    :meth:`~authz_sidecar.policy_slot.PolicySlot.activate`; this only makes sure the bytes
    are the ones the plane announced before handing them over.
    """

    event_type = BUNDLE_ANNOUNCE

    def __init__(self, ctx: FeedContext, scope: str) -> None:
        super().__init__(ctx, scope, f"bundle:{scope}", topology.bundle_subject(scope))
        self.revision: str | None = None

    async def act(self, js: JetStreamContext, event: Event) -> bool:
        return await self._activate(js, Announce.from_event(event))

    async def _activate(self, js: JetStreamContext, announce: Announce) -> bool:
        """False when the announced bytes could not be had (missing, swapped, too large)."""
        sidecar, options = self._ctx.sidecar, self._ctx.options
        service = sidecar.config.service
        if announce.services and not {service, topology.BUNDLE_SCOPE_ALL} & set(announce.services):
            return True  # announced for other services only
        active = sidecar.policy.bundles.active
        if active is not None and hashlib.sha256(active.archive).hexdigest() == announce.sha256:
            return True  # already serving exactly these bytes (e.g. from the persisted copy)
        try:
            archive = await fetch_object(js, topology.BUCKET_BUNDLES, announce.object, size=announce.size,
                                         sha256=announce.sha256, limit=options.max_bundle_bytes,
                                         timeout=options.fetch_timeout)
        except EventRejected as exc:
            sidecar.metrics.bundles_rejected.labels(exc.code).inc()
            log.warning("bundle %s (%s) refused: %s; this scope stays behind the plane", announce.revision,
                        self.subject, exc)
            return False
        try:
            await sidecar.activate_bundle_async(archive)  # counts and logs its own rejections; never stalls
        except BundleRejected:
            return True  # the plane's own bytes, refused on their merits: logged, counted, last good kept
        self.revision = announce.revision
        self._ctx.metrics.events_applied.labels("bundle").inc()
        return True


# --------------------------------------------------------------------------- shadows


class ShadowFollower(_ScopedFollower):
    """``tg.shadows.<scope>``: a candidate to evaluate beside the active bundle, never to activate.

    Verified as ``bundle.shadow`` (a ``bundle.announce`` never passes here, and this type never
    passes the bundle follower), bound to its scope, newest ``seq`` wins; the bytes must match
    the announce and verify against the bundle key like any bundle. ``stop`` ends the shadow.
    """

    event_type = topology.BUNDLE_SHADOW

    def __init__(self, ctx: FeedContext, scope: str) -> None:
        super().__init__(ctx, scope, f"shadow:{scope}", topology.shadow_subject(scope))

    async def act(self, js: JetStreamContext, event: Event) -> bool:
        sidecar = self._ctx.sidecar
        if event.payload.get("stop") is True:
            sidecar.policy.stop_shadow(self.scope)
            return True
        announce = Announce.from_event(event)
        try:
            archive = await fetch_object(js, topology.BUCKET_BUNDLES, announce.object, size=announce.size,
                                         sha256=announce.sha256, limit=self._ctx.options.max_bundle_bytes,
                                         timeout=self._ctx.options.fetch_timeout)
            await sidecar.policy.set_shadow(archive, ShadowSettings.from_wire(event.payload), self.scope)
        except (EventRejected, BundleRejected) as exc:
            log.warning("shadow %s (%s) refused: %s", announce.revision, self.subject, exc)
            return True  # a shadow only observes: nothing to lag behind
        self._ctx.metrics.events_applied.labels("shadow").inc()
        return True


# --------------------------------------------------------------------------- heartbeats


@dataclass(slots=True)
class PlaneView:
    """What the plane last said about itself (heartbeats), for staleness, lag and status."""

    relations_seq: int = 0
    trust_seq: int = 0
    revocations_seq: int = 0
    bundles: dict[str, int] = field(default_factory=dict)
    issued_at: float = 0.0
    expires_at: float = 0.0
    received_at: float = 0.0
    heartbeats: int = 0
    cells: int | None = None  # the plane's cell count (None: no heartbeat yet)
    cell_seqs: dict[str, int] = field(default_factory=dict)  # cell -> the plane's newest relations seq

    def accept(self, event: Event) -> bool:
        """Take a verified heartbeat if unexpired and newer than the last one.

        Raises :class:`~tenantguard.feed.freshness.HeartbeatExpired` (a replay, or a clock far
        off) or ``EventMalformed``; returns False for one not newer than the last taken.
        """
        beat = Heartbeat.from_event(event)
        if beat.issued_at <= self.issued_at:
            return False
        self.relations_seq, self.trust_seq, self.revocations_seq = beat.relations_seq, beat.trust_seq, \
            beat.revocations_seq
        self.bundles = dict(beat.bundles)
        self.cells, self.cell_seqs = beat.cells, dict(beat.relations)
        if not self.cell_seqs and beat.cells == 1:  # a plane from before cells: its one sequence is c0's
            self.cell_seqs = {"c0": beat.relations_seq}
        self.issued_at, self.expires_at, self.received_at = beat.issued_at, beat.expires_at, time.time()
        self.heartbeats += 1
        return True

    def believable(self, now: float) -> bool:
        """A heartbeat was taken and has not expired: the plane's versions are known."""
        return self.expires_at > now

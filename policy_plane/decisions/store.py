"""Decision records on the plane: a recent window in memory, the stream behind it.

Every replica follows TG_DECISIONS from ``keep`` messages before its end, so after a
restart it has the same recent window as before and as every other replica (the window
is a view of the stream, not state of its own). Records are sidecar output, unsigned:
each message is parsed as bounded I-JSON and each record checked by
:func:`tenantguard.decisionlog.validate_record`; what is refused is counted by reason and
never served, from the window or from a scan.

Queries (:class:`~.query.DecisionQuery`) read the window first; positions older than the
window are read from the stream with an ephemeral consumer whose subject filter is the
service and tenant asked for, so JetStream only sends matching messages. A request reads
at most ``max_scan`` stream sequences and ``max_scan_bytes`` of messages (a sidecar chooses
how large its messages are, up to 256 KiB each); past either it returns what it found and a
cursor. The window holds at most ``keep`` records and ``max_window_bytes`` of their messages.

What scales: the window (O(keep) per query, no I/O), tenant/service-filtered scans (the
server filters by subject), retention by age and size. What does not: filters on other
fields beyond the window (subject, resource, reason, decision id) read every message of
the tenant/service in range, bounded per request; there is no secondary index.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Iterable
from typing import Any, Final, Protocol

from tenantguard.decisionlog import MAX_MESSAGE_BYTES, RecordRefused, validate_record
from tenantguard.decisionlog.wire import MAX_DEPTH, MAX_RECORDS_PER_MESSAGE
from tenantguard.errors import JsonInvalid, PayloadTooLarge
from tenantguard.feed import topology as topo
from tenantguard.util.jsonlimits import loads_object

from ..config import SERVICE_RE
from ..publisher import StoredMsg
from .query import Cursor, DecisionQuery, Page, Position

log = logging.getLogger(__name__)

MAX_SCAN: Final = 50_000  # stream sequences one request may read beyond the window
MAX_SCAN_BYTES: Final = 128 * 1024 * 1024  # and message bytes: past either, the page ends with a cursor
BLOCK: Final = 1_000  # sequences per block (one ephemeral consumer each), all held at once: up to 256 MiB
MAX_WINDOW_BYTES: Final = 64 * 1024 * 1024  # message bytes the in-memory window holds, besides its record count
CLOCK_SKEW: Final = 300.0  # a sidecar's record time may trail the stream's order by this much
MAX_INDEX: Final = MAX_RECORDS_PER_MESSAGE + 1


class Scanner(Protocol):
    async def stream_bounds(self, stream: str) -> tuple[int, int]: ...

    async def scan(self, stream: str, subject: str, *, start_seq: int, end_seq: int,
                   max_msgs: int) -> list[StoredMsg]: ...


Entry = tuple[int, int, dict[str, Any]]  # (stream seq, index in message, record)


def parse_message(subject: str, data: bytes, refused: Counter[str] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """The records of one TG_DECISIONS message that pass validation, with their index.

    Raises :class:`RecordRefused` (``malformed``) for a message that is not a batch on a
    well-formed subject; refused records are counted in ``refused`` by reason."""
    parts = subject.split(".")
    if len(parts) != 4 or SERVICE_RE.fullmatch(parts[2]) is None:
        raise RecordRefused("malformed", "not a tg.decisions.<service>.<tenant> subject")
    try:
        tenant = topo.tenant_of_token(parts[3])
    except ValueError:
        raise RecordRefused("malformed", "the subject's tenant token is not canonical") from None
    if len(data) > MAX_MESSAGE_BYTES:
        raise RecordRefused("malformed", "message too large")
    try:
        batch = loads_object(data, max_depth=MAX_DEPTH).get("decisions")
    except (JsonInvalid, PayloadTooLarge):
        raise RecordRefused("malformed", "not bounded I-JSON") from None
    if not isinstance(batch, list):
        raise RecordRefused("malformed", "decisions must be a list")
    out = []
    for index, item in enumerate(batch[:MAX_RECORDS_PER_MESSAGE]):
        try:
            out.append((index, validate_record(item, service=parts[2], tenant=tenant)))
        except RecordRefused as exc:
            if refused is not None:
                refused[exc.reason] += 1
    if refused is not None and len(batch) > MAX_RECORDS_PER_MESSAGE:
        refused["too_many"] += len(batch) - MAX_RECORDS_PER_MESSAGE
    return out


class DecisionStore:
    def __init__(self, scanner: Scanner, keep: int, *, max_scan: int = MAX_SCAN, block: int = BLOCK,
                 max_scan_bytes: int = MAX_SCAN_BYTES, max_window_bytes: int = MAX_WINDOW_BYTES) -> None:
        self.scanner = scanner
        self.keep = keep
        self.max_scan = max_scan
        self.block = block
        self.max_scan_bytes = max_scan_bytes
        self.max_window_bytes = max_window_bytes
        self.window: deque[Entry] = deque()
        self._sizes: deque[int] = deque()  # each window entry's share of its message's bytes
        self.window_bytes = 0
        self.covered_from: Position = (1, 0)  # the window holds every kept record from here on
        self.last_seq = 0  # last stream sequence consumed
        self.received = 0
        self.malformed = 0  # messages that were no batch at all
        self.refused: Counter[str] = Counter()  # records refused, by reason
        self.by_outcome: Counter[tuple[str, str]] = Counter()  # (service, allow|deny)

    async def start_seq(self) -> int:
        """Where this replica's window starts: ``keep`` messages before the end (each message
        holds one or more records, so the window fills)."""
        first, last = await self.scanner.stream_bounds(topo.STREAM_DECISIONS)
        start = max(first, last - self.keep + 1, 1)
        self.covered_from = (start, 0)
        return start

    @property
    def records(self) -> list[dict[str, Any]]:
        """The kept records, oldest first (the publish gate's impact sample)."""
        return [record for _, _, record in self.window]

    # ------------------------------------------------------------------ arrival

    async def on_message(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        """Follower handler: validate and keep (never raises: a bad message is counted)."""
        self.last_seq = max(self.last_seq, stream_seq)
        try:
            records = parse_message(subject, data, self.refused)
        except RecordRefused:
            self.malformed += 1
            return
        share = len(data) // max(1, len(records))
        for index, record in records:
            self.window.append((stream_seq, index, record))
            self._sizes.append(share)
            self.window_bytes += share
            self._evict()
            self.received += 1
            self.by_outcome[(record["service"], "allow" if record["allow"] else "deny")] += 1

    def _evict(self) -> None:
        """Drop the oldest entries past ``keep`` records or ``max_window_bytes``: the window is
        bounded by bytes too, since a sidecar chooses how large its records are (10,000 records
        of 64 KiB were 640 MB of JSON held by every replica)."""
        while self.window and (len(self.window) > self.keep or self.window_bytes > self.max_window_bytes):
            seq, idx, _ = self.window.popleft()
            self.window_bytes -= self._sizes.popleft()
            self.covered_from = (seq, idx + 1)

    # ------------------------------------------------------------------ queries

    async def query(self, query: DecisionQuery, cursor: Cursor | None = None) -> Page:
        page = Page()
        if query.order == "desc":
            await self._desc(query, cursor.position if cursor else (2**62, 0), page)
        else:
            await self._asc(query, cursor, page)
        return page

    def _take(self, query: DecisionQuery, page: Page, entries: Iterable[Entry], source: str) -> Position | None:
        """Add matching entries; the position of the one that filled the page, else None."""
        for seq, index, record in entries:
            if query.matches(record):
                page.records.append(record)
                page.sources.add(source)
                if len(page.records) >= query.limit:
                    return (seq, index)
        return None

    async def _desc(self, query: DecisionQuery, pos: Position, page: Page) -> None:
        fp = query.fingerprint()
        if pos > self.covered_from:
            newer = ((s, i, r) for s, i, r in reversed(self.window) if (s, i) < pos)
            full = self._take(query, page, newer, "window")
            if full is not None:
                page.next_cursor = Cursor(full, "desc", fp).encode()
                return
            pos = self.covered_from
        first, _ = await self.scanner.stream_bounds(topo.STREAM_DECISIONS)
        hi, budget, byte_budget = pos[0], self.max_scan, self.max_scan_bytes
        while hi >= max(first, 1) and budget > 0 and byte_budget > 0:
            lo = max(first, hi - min(self.block, budget) + 1, 1)
            msgs = await self.scanner.scan(topo.STREAM_DECISIONS, query.subject_filter, start_seq=lo, end_seq=hi,
                                           max_msgs=hi - lo + 1)
            budget -= hi - lo + 1
            byte_budget -= sum(len(m.data) for m in msgs)
            page.scanned += len(msgs)
            newest_time = 0.0
            parsed = await self._parsed(msgs)
            for msg, records in zip(reversed(msgs), reversed(parsed), strict=True):
                entries = [(msg.stream_seq, i, r) for i, r in reversed(records)
                           if (msg.stream_seq, i) < pos]
                newest_time = max([newest_time, *(r["time"] for _, _, r in entries)])
                full = self._take(query, page, entries, "stream")
                if full is not None:
                    page.next_cursor = Cursor(full, "desc", fp).encode()
                    return
            hi = lo - 1
            if query.since is not None and msgs and newest_time < query.since - CLOCK_SKEW:
                page.complete = True  # everything older is older still
                return
        if hi < max(first, 1):
            page.complete = True
        else:
            page.next_cursor = Cursor((hi + 1, 0), "desc", fp).encode()

    async def _asc(self, query: DecisionQuery, cursor: Cursor | None, page: Page) -> None:
        fp = query.fingerprint()
        pos: Position = cursor.position if cursor else (0, 0)
        window_start = self.window[0] if self.window else None
        if (cursor is None and query.since is not None and window_start is not None
                and window_start[2]["time"] < query.since - CLOCK_SKEW):
            pos = (self.covered_from[0], self.covered_from[1] - 1)  # the window reaches back far enough
        if pos < self.covered_from:
            first, _ = await self.scanner.stream_bounds(topo.STREAM_DECISIONS)
            lo, end = max(pos[0], first, 1), self.covered_from[0]
            budget, byte_budget = self.max_scan, self.max_scan_bytes
            while lo <= end and budget > 0 and byte_budget > 0:
                hi = min(end, lo + min(self.block, budget) - 1)
                msgs = await self.scanner.scan(topo.STREAM_DECISIONS, query.subject_filter, start_seq=lo,
                                               end_seq=hi, max_msgs=hi - lo + 1)
                budget -= hi - lo + 1
                byte_budget -= sum(len(m.data) for m in msgs)
                page.scanned += len(msgs)
                for msg, records in zip(msgs, await self._parsed(msgs), strict=True):
                    entries = [(msg.stream_seq, i, r) for i, r in records
                               if pos < (msg.stream_seq, i) < self.covered_from]
                    full = self._take(query, page, entries, "stream")
                    if full is not None:
                        page.next_cursor = Cursor(full, "asc", fp).encode()
                        return
                lo = hi + 1
            if lo <= end:  # budget spent before reaching the window
                page.next_cursor = Cursor((lo - 1, MAX_INDEX), "asc", fp).encode()
                return
            pos = (self.covered_from[0], self.covered_from[1] - 1)
        newer = [(s, i, r) for s, i, r in self.window if (s, i) > pos]
        full = self._take(query, page, newer, "window")
        if full is not None:
            page.next_cursor = Cursor(full, "asc", fp).encode()
            return
        last = (newer[-1][0], newer[-1][1]) if newer else max(pos, (self.last_seq, MAX_INDEX))
        page.next_cursor = Cursor(last, "asc", fp).encode()
        page.complete = True

    async def _parsed(self, msgs: list[StoredMsg]) -> list[list[tuple[int, dict[str, Any]]]]:
        """The records of each message of a scanned block, parsed in a worker thread: a block is up
        to 256 MiB of JSON that the event loop would otherwise parse while serving nothing else."""
        return await asyncio.to_thread(lambda: [self._records(m) for m in msgs])

    @staticmethod
    def _records(msg: StoredMsg) -> list[tuple[int, dict[str, Any]]]:
        try:
            return parse_message(msg.subject, msg.data)
        except RecordRefused:
            return []

    async def find(self, decision_id: str, *, tenant: str | None = None, service: str | None = None,
                   passes: int = 4) -> dict[str, Any] | None:
        """The record of ``decision_id``: the window, then up to ``passes`` bounded stream scans."""
        query = DecisionQuery(tenant=tenant, service=service, decision_id=decision_id, limit=1)
        cursor: Cursor | None = None
        for _ in range(passes):
            page = await self.query(query, cursor)
            if page.records:
                return page.records[0]
            if page.next_cursor is None:
                return None
            cursor = Cursor.decode(page.next_cursor, query)
        return None

    def stats(self) -> dict[str, Any]:
        return {"received": self.received, "malformed": self.malformed, "refused": dict(sorted(self.refused.items())),
                "kept": len(self.window), "kept_bytes": self.window_bytes, "window_from_seq": self.covered_from[0],
                "last_seq": self.last_seq,
                "by_outcome": {f"{s}:{o}": n for (s, o), n in sorted(self.by_outcome.items())}}

"""The decision store's bounds by bytes, not only by counts: a sidecar chooses how large its
records and messages are (up to 64 KiB and 256 KiB), so the in-memory window and every query's
scan are bounded by message bytes too. The scanner is the store's own protocol, served from
a list of stored messages (what JetStream hands back, byte for byte)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from tenantguard.feed import topology as topo

import policy_plane.decisions.store as store_module
from policy_plane.decisions import DecisionQuery
from policy_plane.decisions.query import Cursor
from policy_plane.decisions.store import DecisionStore
from policy_plane.publisher import StoredMsg
from tests.harness.decision_records import record


class ListScanner:
    """Stored TG_DECISIONS messages, scanned as JetStream's filtered consumer would; counts the
    bytes it handed out."""

    def __init__(self, messages: list[StoredMsg]) -> None:
        self.messages = messages
        self.handed = 0

    async def stream_bounds(self, stream: str) -> tuple[int, int]:
        return (self.messages[0].stream_seq, self.messages[-1].stream_seq) if self.messages else (0, 0)

    async def scan(self, stream: str, subject: str, *, start_seq: int, end_seq: int,
                   max_msgs: int) -> list[StoredMsg]:
        out = [m for m in self.messages if start_seq <= m.stream_seq <= end_seq][:max_msgs]
        self.handed += sum(len(m.data) for m in out)
        return out


def _message(seq: int, i: int, padding: int) -> StoredMsg:
    big = record(i, input={**record(i)["input"], "context": {"service": "billing", "pad": "x" * padding}})
    return StoredMsg(seq, json.dumps({"decisions": [big]}).encode(), {}, topo.decisions_subject("billing", "acme"))


def _filled(count: int, padding: int, **bounds: Any) -> tuple[DecisionStore, ListScanner]:
    messages = [_message(seq, seq, padding) for seq in range(1, count + 1)]
    scanner = ListScanner(messages)
    store = DecisionStore(scanner, 10_000, **bounds)

    async def arrive() -> None:
        for m in messages:
            await store.on_message(m.subject, m.stream_seq, m.data, {})

    asyncio.run(arrive())
    return store, scanner


def test_the_window_is_bounded_by_bytes_and_queries_reach_past_it() -> None:
    store, _ = _filled(40, 60_000, max_window_bytes=1_000_000)  # 40 records of 60 KB, far fewer than 10,000
    assert store.stats()["kept"] < 20 and store.window_bytes <= 1_000_000
    ids: list[str] = []
    query = DecisionQuery(limit=7)
    cursor = None
    for _ in range(20):  # every record once, newest first: the window, then the stream
        page = asyncio.run(store.query(query, cursor))
        ids += [r["decision_id"] for r in page.records]
        if page.next_cursor is None:
            break
        cursor = Cursor.decode(page.next_cursor, query)
    assert ids == [f"d{i:04d}" for i in range(40, 0, -1)]


def test_a_scan_is_bounded_by_bytes_and_continues_with_a_cursor() -> None:
    store, scanner = _filled(60, 60_000, max_window_bytes=200_000, max_scan_bytes=600_000, block=4)
    query = DecisionQuery(subject="user:nobody")  # matches nothing: every page scans until a bound
    found, pages, cursor = [], 0, None
    for _ in range(60):
        scanner.handed = 0
        page = asyncio.run(store.query(query, cursor))
        found += page.records
        pages += 1
        assert scanner.handed <= 600_000 + 4 * 70_000  # the bound, overshot by one block at most
        if page.next_cursor is None:
            assert page.complete
            break
        cursor = Cursor.decode(page.next_cursor, query)
    assert not found and pages > 3  # several bounded pages, and the last one says it is complete


def test_scanned_blocks_are_parsed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    store, _ = _filled(30, 60_000, max_window_bytes=200_000, block=8)
    threads: list[int] = []
    real_parse = store_module.parse_message

    def recording_parse(*args: Any, **kwargs: Any) -> Any:  # the real parser, noting where it ran
        threads.append(threading.get_ident())
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(store_module, "parse_message", recording_parse)

    async def scan() -> int:
        page = await store.query(DecisionQuery(subject="user:nobody"))
        assert page.complete and page.scanned >= 25
        return threading.get_ident()

    loop_thread = asyncio.run(scan())
    assert len(threads) >= 25 and loop_thread not in threads

"""The idempotency key window of the replicated relations state (no NATS needed)."""

from __future__ import annotations

import asyncio
import time

import pytest
from tenantguard.feed.events import EventMalformed
from tenantguard.relations import RelationChange, Relationship

from policy_plane.groupcommit import Member, plan
from policy_plane.idempotency import KeyWindow, changes_digest, key_hash, keys_of, legacy_key_hash

NOW = 1_767_225_600.0


def _change(obj: str) -> RelationChange:
    return RelationChange("write", Relationship("acme", obj, "member", "user:alice"))


def test_a_key_keeps_its_first_outcome() -> None:
    window = KeyWindow()
    k, d1, d2 = key_hash("k", ["acme"]), changes_digest([_change("doc:a")]), changes_digest([_change("doc:b")])
    window.record(3, [(k, d1)], NOW, now=NOW)
    window.record(9, [(k, d2)], NOW, now=NOW)  # a replayed or forged later batch cannot change the first outcome
    assert window.lookup(k, now=NOW) == (3, d1)
    assert window.lookup(key_hash("other", ["acme"]), now=NOW) is None


def test_keys_expire_by_the_time_their_batch_was_issued() -> None:
    window = KeyWindow(seconds=600)
    k, d = key_hash("k", ["acme"]), changes_digest([_change("doc:a")])
    window.record(1, [(k, d)], NOW, now=NOW)
    assert window.lookup(k, now=NOW + 599) == (1, d)
    assert window.lookup(k, now=NOW + 601) is None


def test_the_count_bound_drops_the_oldest_keys_first() -> None:
    window = KeyWindow(limit=3)
    d = changes_digest([_change("doc:a")])
    for i in range(5):
        window.record(i + 1, [(key_hash(f"k{i}", ["acme"]), d)], NOW, now=NOW)
    assert len(window) == 3
    found = [window.lookup(key_hash(f"k{i}", ["acme"]), now=NOW) for i in range(5)]
    assert found == [None, None, (3, d), (4, d), (5, d)]


def test_a_key_is_scoped_to_the_tenants_of_its_write() -> None:
    """One key in writes for two tenant sets is two keys (see policy_plane.idempotency)."""
    assert key_hash("k", ["acme"]) != key_hash("k", ["beta"]) != key_hash("k", ["acme", "beta"])
    assert key_hash("k", ["beta", "acme", "beta"]) == key_hash("k", ["acme", "beta"])  # a set
    assert key_hash("k", ["acme"]) != legacy_key_hash("k")
    assert key_hash("a,b", ["c"]) != key_hash("b", ["a", "c"])  # the text cannot be shifted across the parts


def test_a_write_accepted_by_an_older_replica_is_still_found_by_its_legacy_hash() -> None:
    """During an upgrade the window holds batches that carry unscoped hashes: a retry still
    replays (same changes) or is refused (other changes), never committed a second time."""
    window = KeyWindow()
    loop = asyncio.new_event_loop()
    try:
        d1, d2 = changes_digest([_change("doc:a")]), changes_digest([_change("doc:b")])
        now = time.time()  # plan() asks the window about now
        window.record(4, [(legacy_key_hash("k"), d1)], now, now=now)

        def member(digest: str) -> Member:
            return Member((_change("doc:a"),), key_hash("k", ["acme"]), digest, loop.create_future(),
                          legacy_key_hash("k"))

        p = plan([member(d1), member(d2)], window)
        assert [(m.digest, seq) for m, seq in p.replayed] == [(d1, 4)]
        assert [(m.digest, seq) for m, seq in p.reused] == [(d2, 4)]
        assert p.included == []
    finally:
        loop.close()


def test_the_digest_covers_the_changes_and_their_order() -> None:
    a, b = _change("doc:a"), _change("doc:b")
    assert changes_digest([a, b]) != changes_digest([b, a])
    assert changes_digest([a]) != changes_digest([RelationChange("delete", a.rel)])
    assert key_hash("k", ["acme"]) != key_hash("K", ["acme"]) and len(key_hash("k", ["acme"])) == 32


@pytest.mark.parametrize("keys", ["x", [["ab", "cd"]], [[key_hash("k", ["acme"])]],
                                  [[key_hash("k", ["acme"]), "zz" * 16]],
                                  [[key_hash("k", ["acme"]), key_hash("d", ["acme"])]] * 1001])
def test_malformed_keys_in_a_batch_are_refused(keys: object) -> None:
    with pytest.raises(EventMalformed):
        keys_of({"keys": keys})


def test_a_batch_without_keys_has_none() -> None:
    assert keys_of({"changes": []}) == []

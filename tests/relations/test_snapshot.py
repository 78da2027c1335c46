"""Snapshots: round trip, determinism, atomic write, and rejection of bad files."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from tenantguard.relations import (
    ChangeBatch,
    RelationChange,
    RelationIndex,
    Relationship,
    SnapshotInvalid,
    SnapshotTooLarge,
    index_from_snapshot_bytes,
    read_header,
    read_snapshot,
    snapshot_bytes,
    snapshot_digest,
    write_snapshot,
)

TUPLES = [
    "acme / project:p1#viewer @ group:eng#member",
    "acme / group:eng#member @ user:alice@example.com",
    "acme / project:p1#owner @ user:bob",
    "globex / project:p1#viewer @ user:carol",
    "globex / doc:a.b|c#editor @ user:x+y=z",
]


def build(texts: list[str]) -> RelationIndex:
    index = RelationIndex()
    for seq, text in enumerate(texts, 1):
        index.apply(ChangeBatch(seq, (RelationChange("write", Relationship.parse(text)),)))
    return index


@pytest.fixture()
def index() -> RelationIndex:
    return build(TUPLES)


def test_round_trip_bytes(index: RelationIndex) -> None:
    data = snapshot_bytes(index)
    loaded = index_from_snapshot_bytes(data)
    assert loaded.digest() == index.digest()
    assert loaded.applied_seq == index.applied_seq == len(TUPLES)
    assert loaded.count() == len(TUPLES)
    assert loaded.list("acme") == index.list("acme")
    assert loaded.check("acme", "project:p1", "viewer", "user:alice@example.com")
    # the loaded index continues from the snapshot's sequence
    assert loaded.apply(ChangeBatch(len(TUPLES) + 1, ()))


def test_header_describes_the_state(index: RelationIndex) -> None:
    data = snapshot_bytes(index)
    header = read_header(data)
    assert (header.seq, header.count, header.tenants) == (5, 5, 2)
    body = data[data.index(b"\n") + 1 :]
    assert header.body_sha256 == hashlib.sha256(body).hexdigest()
    assert snapshot_digest(data) == hashlib.sha256(data).hexdigest()
    lines = gzip.decompress(body).decode().splitlines()
    assert [json.loads(line)[0] for line in lines] == ["acme", "globex"]


def test_same_state_gives_identical_bytes() -> None:
    a = build(TUPLES)
    b = build(list(reversed(TUPLES)))
    assert snapshot_bytes(a) == snapshot_bytes(b)
    b.apply(ChangeBatch(b.applied_seq + 1, ()))  # same tuples, later sequence
    assert snapshot_bytes(a) != snapshot_bytes(b)


def test_empty_index_round_trips() -> None:
    loaded = index_from_snapshot_bytes(snapshot_bytes(RelationIndex()))
    assert (loaded.count(), loaded.applied_seq) == (0, 0)
    assert loaded.digest() == RelationIndex().digest()


def test_file_round_trip_and_atomic_replace(index: RelationIndex, tmp_path: Path) -> None:
    path = tmp_path / "relations.snap"
    path.write_bytes(b"old contents")
    header = write_snapshot(index, path)
    assert header.seq == index.applied_seq
    assert [p.name for p in tmp_path.iterdir()] == ["relations.snap"]  # no temp file left
    assert read_snapshot(path).digest() == index.digest()


def test_failed_write_keeps_the_old_file(index: RelationIndex, tmp_path: Path) -> None:
    path = tmp_path / "relations.snap"
    write_snapshot(index, path)
    before = path.read_bytes()
    (tmp_path / "sub").mkdir()
    with pytest.raises(OSError):
        write_snapshot(index, tmp_path / "sub")  # target is a directory: replace fails
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["relations.snap", "sub"]


def corrupt(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1 :]


def test_corrupted_body_is_rejected(index: RelationIndex) -> None:
    data = snapshot_bytes(index)
    for position in (data.index(b"\n") + 1, len(data) // 2 + 40, len(data) - 1):
        with pytest.raises(SnapshotInvalid, match="corrupted"):
            index_from_snapshot_bytes(corrupt(data, position))


def test_corrupted_header_is_rejected(index: RelationIndex) -> None:
    data = snapshot_bytes(index)
    header = json.loads(data[: data.index(b"\n")])
    rest = data[data.index(b"\n") :]
    for key, value in (("count", 4), ("seq", -1), ("tenants", 3), ("version", 3),
                       ("format", "other"), ("body_sha256", "AB" * 32), ("seq", True)):
        bad = json.dumps({**header, key: value}).encode() + rest
        with pytest.raises(SnapshotInvalid):
            index_from_snapshot_bytes(bad)
    with pytest.raises(SnapshotInvalid, match="not JSON"):
        index_from_snapshot_bytes(b"{nope" + rest)


@pytest.mark.parametrize("keep", [0, 1, 50, -1, -20])
def test_truncated_snapshot_is_rejected(index: RelationIndex, keep: int) -> None:
    data = snapshot_bytes(index)
    with pytest.raises(SnapshotInvalid):
        index_from_snapshot_bytes(data[:keep])


def test_truncated_file_is_rejected(index: RelationIndex, tmp_path: Path) -> None:
    path = tmp_path / "relations.snap"
    write_snapshot(index, path)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(SnapshotInvalid, match="truncated"):
        read_snapshot(path)


def test_trailing_bytes_are_rejected(index: RelationIndex) -> None:
    with pytest.raises(SnapshotInvalid):
        index_from_snapshot_bytes(snapshot_bytes(index) + b"\n")


def forge(lines: list[object], **header_overrides: object) -> bytes:
    """A well-formed snapshot (hash correct) around arbitrary body content."""
    raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
    body = gzip.compress(raw, mtime=0)
    header = {"format": "tenantguard.relations.snapshot", "version": 1, "seq": 1,
              "count": 1, "tenants": len(lines), "body_size": len(body),
              "body_sha256": hashlib.sha256(body).hexdigest(), **header_overrides}
    return json.dumps(header).encode() + b"\n" + body


def test_forged_body_is_validated_while_loading() -> None:
    good = ["acme", [["project:p1", [["viewer", ["user:a"]]]]]]
    assert index_from_snapshot_bytes(forge([good])).check("acme", "project:p1", "viewer", "user:a")
    for bad in (
        ["acme.*", [["project:p1", [["viewer", ["user:a"]]]]]],
        ["acme", [["project:p>", [["viewer", ["user:a"]]]]]],
        ["acme", [["project:p1", [["Viewer", ["user:a"]]]]]],
        ["acme", [["project:p1", [["viewer", ["user:a b"]]]]]],
        ["acme", [["project:p1", [["viewer", "user:a"]]]]],
        ["acme", [["project:p1", ["viewer", ["user:a"]]]]],
        {"acme": []},
        "acme",
    ):
        with pytest.raises(SnapshotInvalid):
            index_from_snapshot_bytes(forge([bad]))


def test_count_must_match_the_body() -> None:
    line = ["acme", [["project:p1", [["viewer", ["user:a", "user:a"]]]]]]
    with pytest.raises(SnapshotInvalid, match="header says 2"):
        index_from_snapshot_bytes(forge([line], count=2))


def test_size_limits(index: RelationIndex, tmp_path: Path) -> None:
    path = tmp_path / "relations.snap"
    write_snapshot(index, path)
    with pytest.raises(SnapshotTooLarge):
        read_snapshot(path, max_bytes=100)
    with pytest.raises(SnapshotTooLarge):
        read_snapshot(path, max_expanded_bytes=50)
    assert read_snapshot(path, max_bytes=path.stat().st_size).count() == len(TUPLES)


def test_gzip_bomb_is_stopped_by_the_expansion_cap() -> None:
    huge = ["acme", [["project:p1", [["viewer", ["user:" + "a" * 200] * 20_000]]]]]
    data = forge([huge], count=1)
    assert len(data) < 50_000
    with pytest.raises(SnapshotTooLarge) as info:
        index_from_snapshot_bytes(data, max_expanded_bytes=1_000_000)
    assert info.value.http_status == 413

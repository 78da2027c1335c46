"""Relations snapshots: one self-checking object a sidecar can cold-start from.

Format: one JSON header line, then a gzip body::

    {"format":"tenantguard.relations.snapshot","version":1,"seq":N,"count":M,
     "tenants":T,"body_size":B,"body_sha256":"<hex>"}\\n
    <gzip of JSON lines, one per tenant: [tenant, [[object, [[relation, [subject, ...]], ...]], ...]]>

Version 2 is written only when some tuple has meta (a condition or an expiry): a tenant
line then may have a third member, its tuples with meta,
``[[object, relation, subject, {"condition": {...}, "expires_at": "..."}], ...]`` (the wire
fields of :func:`~tenantguard.relations.model.meta_to_wire`). An index of plain tuples
(wildcards included) is written as version 1, byte for byte as before, so a reader that
predates meta keeps reading it; such a reader refuses a version 2 snapshot by its version
(it could not hold the meta) rather than loading it without.

Everything is in canonical (sorted) order and gzip carries no timestamp, so two replicas
at the same sequence produce byte-identical snapshots. The body hash is over the
compressed bytes, so a corrupted or truncated file is rejected before anything is
decompressed; expansion is capped (gzip bombs), and every name and id is validated again
while loading. The plane signs :func:`snapshot_digest` (SHA-256 of the whole object,
header included, so ``seq`` and ``count`` are covered too); verifying that signature is
the caller's job, before calling :func:`index_from_snapshot_bytes`.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tenantguard.relations.errors import RelationshipInvalid, SnapshotInvalid, SnapshotTooLarge
from tenantguard.relations.index import IndexView, RelationIndex
from tenantguard.relations.model import MAX_SEQ, NAME_RE, OBJECT_RE, SUBJECT_RE, meta_from_wire, meta_to_wire
from tenantguard.relations.reads import TupleMeta
from tenantguard.util.fsutil import atomic_write

FORMAT = "tenantguard.relations.snapshot"
VERSION = 1  # plain tuples only
META_VERSION = 2  # some tuple has meta
VERSIONS = (VERSION, META_VERSION)
MAX_HEADER_BYTES = 4096
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_EXPANDED_BYTES = 4 * 1024 * 1024 * 1024
_CHUNK = 1024 * 1024
_GZIP_WBITS = 31


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    """What a snapshot claims about itself; trusted only once its digest is verified."""

    seq: int
    count: int
    tenants: int
    body_size: int
    body_sha256: str
    version: int = VERSION

    def to_wire(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "seq": self.seq,
            "count": self.count,
            "tenants": self.tenants,
            "body_size": self.body_size,
            "body_sha256": self.body_sha256,
        }


# --------------------------------------------------------------------------- write


def _tenant_lines(view: IndexView, with_meta: list[bool]) -> Iterator[bytes]:
    """One JSON line per tenant; sets ``with_meta[0]`` once a tenant has tuples with meta."""
    for tenant in view.tenants():
        rows = [[obj, [[rel, subjects] for rel, subjects in rels]] for obj, rels in view.rows(tenant)]
        line: list[Any] = [tenant, rows]
        metas = view.meta_rows(tenant)
        if metas:
            with_meta[0] = True
            line.append([[o, r, s, meta_to_wire(m)] for o, r, s, m in metas])
        yield json.dumps(line, separators=(",", ":"), sort_keys=True).encode() + b"\n"


def snapshot_bytes(index: RelationIndex) -> bytes:
    """The whole snapshot of the index's current state, header first (version 2 only when
    some tuple has meta)."""
    view = index.view()
    compressor = zlib.compressobj(6, zlib.DEFLATED, _GZIP_WBITS)
    parts: list[bytes] = []
    tenants = 0
    with_meta = [False]
    for line in _tenant_lines(view, with_meta):
        tenants += 1
        parts.append(compressor.compress(line))
    parts.append(compressor.flush())
    body = b"".join(parts)
    header = SnapshotHeader(
        view.seq, view.count, tenants, len(body), hashlib.sha256(body).hexdigest(),
        META_VERSION if with_meta[0] else VERSION,
    )
    return _encode_header(header) + body


def _encode_header(header: SnapshotHeader) -> bytes:
    return json.dumps(header.to_wire(), separators=(",", ":")).encode() + b"\n"


def snapshot_digest(data: bytes) -> str:
    """SHA-256 (hex) of a whole snapshot object: what the plane signs."""
    return hashlib.sha256(data).hexdigest()


def write_snapshot(index: RelationIndex, path: str | os.PathLike[str]) -> SnapshotHeader:
    """Write atomically and durably (see :func:`tenantguard.util.fsutil.atomic_write`)."""
    data = snapshot_bytes(index)
    atomic_write(path, data)
    return read_header(data)


# --------------------------------------------------------------------------- read


def read_snapshot(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
) -> RelationIndex:
    """Load and verify a snapshot file; never reads more than ``max_bytes``."""
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise SnapshotTooLarge(f"snapshot exceeds {max_bytes} bytes", limit=max_bytes)
    return index_from_snapshot_bytes(data, max_expanded_bytes=max_expanded_bytes)


def read_header(data: bytes) -> SnapshotHeader:
    """Parse and check the header and the body's size and hash (no decompression)."""
    header, body = _split(data)
    if len(body) != header.body_size:
        raise SnapshotInvalid(
            f"body is {len(body)} bytes, header says {header.body_size}: truncated or padded"
        )
    if hashlib.sha256(body).hexdigest() != header.body_sha256:
        raise SnapshotInvalid("body SHA-256 does not match the header: corrupted")
    return header


def index_from_snapshot_bytes(
    data: bytes, *, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
    keep_types: frozenset[str] | None = None,
) -> RelationIndex:
    """Verify, decompress (capped) and load a snapshot into a new index.

    ``keep_types``: load only tuples whose object type is listed (a reader scoped to some
    object types); every tuple is still parsed and counted against the header."""
    header = read_header(data)
    body = memoryview(data)[len(data) - header.body_size :]
    tuples = _tuples(_lines(body, max_expanded_bytes), header)
    if keep_types is None:
        index = RelationIndex.from_trusted(header.seq, tuples)
        if index.count() != header.count:
            raise SnapshotInvalid(f"holds {index.count()} tuples, header says {header.count}")
        return index
    seen = [0]

    def kept() -> Iterator[tuple[str, str, str, str] | tuple[str, str, str, str, TupleMeta | None]]:
        for t in tuples:
            seen[0] += 1
            if t[1].partition(":")[0] in keep_types:
                yield t

    index = RelationIndex.from_trusted(header.seq, kept())
    if seen[0] != header.count:  # the writer stores each tuple once, so lines read = tuples held
        raise SnapshotInvalid(f"holds {seen[0]} tuples, header says {header.count}")
    return index


def _split(data: bytes) -> tuple[SnapshotHeader, bytes]:
    end = data.find(b"\n", 0, MAX_HEADER_BYTES)
    if end < 0:
        raise SnapshotInvalid("no snapshot header in the first 4096 bytes")
    try:
        raw = json.loads(data[:end])
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than json.loads can go
        raise SnapshotInvalid(f"header is not JSON: {str(exc)[:120]}") from None
    return _header_from(raw), data[end + 1 :]


def _header_from(raw: Any) -> SnapshotHeader:
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise SnapshotInvalid("not a tenantguard relations snapshot")
    version = raw.get("version")
    if version not in VERSIONS or isinstance(version, bool):
        raise SnapshotInvalid(f"snapshot version {version!r} is not supported")
    ints = {k: raw.get(k) for k in ("seq", "count", "tenants", "body_size")}
    for key, value in ints.items():
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SEQ:
            raise SnapshotInvalid(f"header {key} must be a non-negative integer")
    digest = raw.get("body_sha256")
    if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
        raise SnapshotInvalid("header body_sha256 must be 64 lowercase hex digits")
    return SnapshotHeader(body_sha256=digest, version=version, **ints)  # type: ignore[arg-type]


def _lines(body: memoryview, limit: int) -> Iterator[bytes]:
    """Decompress in chunks, never holding more than ``limit`` expanded bytes in total."""
    inflater = zlib.decompressobj(_GZIP_WBITS)
    pending: list[bytes] = []  # pieces of a line longer than one chunk
    expanded = 0
    for start in range(0, len(body), _CHUNK):
        chunk: bytes | memoryview = body[start : start + _CHUNK]
        while chunk:
            try:
                out = inflater.decompress(chunk, _CHUNK)
            except zlib.error as exc:
                raise SnapshotInvalid(f"body is not valid gzip: {exc}") from exc
            expanded += len(out)
            if expanded > limit:
                raise SnapshotTooLarge(f"body expands beyond {limit} bytes", limit=limit)
            if b"\n" in out:
                first, *complete, rest = out.split(b"\n")
                yield b"".join((*pending, first))
                yield from complete
                pending = [rest]
            else:
                pending.append(out)
            chunk = inflater.unconsumed_tail
    if not inflater.eof or inflater.unused_data or any(pending):
        raise SnapshotInvalid("body ends early or has trailing data")


def _tuples(lines: Iterator[bytes], header: SnapshotHeader
            ) -> Iterator[tuple[str, str, str, str] | tuple[str, str, str, str, TupleMeta | None]]:
    """Parse and re-validate every tenant line; the structure is checked strictly."""
    seen = 0
    for line in lines:
        seen += 1
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than json.loads can go
            raise SnapshotInvalid(f"tenant line {seen} is not JSON") from None
        if header.version == META_VERSION and isinstance(item, list) and len(item) == 3:
            tenant, rows, metas = item
        else:
            _expect_list(item, 2)
            (tenant, rows), metas = item, None
        _expect(NAME_RE, tenant, "tenant")
        for obj, rel, subject in _rows(rows):
            yield tenant, obj, rel, subject
        if metas is not None:
            for obj, rel, subject, meta in _meta_rows(metas):
                yield tenant, obj, rel, subject, meta
    if seen != header.tenants:
        raise SnapshotInvalid(f"holds {seen} tenants, header says {header.tenants}")


def _rows(rows: Any) -> Iterator[tuple[str, str, str]]:
    _expect_list(rows)
    for row in rows:
        _expect_list(row, 2)
        obj, rels = row
        _expect(OBJECT_RE, obj, "object")
        _expect_list(rels)
        for entry in rels:
            _expect_list(entry, 2)
            rel, subjects = entry
            _expect(NAME_RE, rel, "relation")
            _expect_list(subjects)
            for subject in subjects:
                _expect(SUBJECT_RE, subject, "subject")
                yield obj, rel, subject


def _meta_rows(metas: Any) -> Iterator[tuple[str, str, str, TupleMeta]]:
    _expect_list(metas)
    for entry in metas:
        _expect_list(entry, 4)
        obj, rel, subject, wire = entry
        _expect(OBJECT_RE, obj, "object")
        _expect(NAME_RE, rel, "relation")
        _expect(SUBJECT_RE, subject, "subject")
        if not isinstance(wire, dict):
            raise SnapshotInvalid("snapshot body has an unexpected structure")
        try:
            meta = meta_from_wire(wire)
        except RelationshipInvalid as exc:
            raise SnapshotInvalid(f"snapshot holds an invalid tuple meta: {exc.message}") from None
        if meta is None:
            raise SnapshotInvalid("snapshot holds a tuple with empty meta among those with meta")
        yield obj, rel, subject, meta


def _expect(pattern: Any, value: Any, what: str) -> None:
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        raise SnapshotInvalid(f"snapshot holds an invalid {what}: {value!r:.80}")


def _expect_list(value: Any, length: int | None = None) -> None:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise SnapshotInvalid("snapshot body has an unexpected structure")

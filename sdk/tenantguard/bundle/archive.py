"""Reading and writing bundle archives (gzipped tar) safely and deterministically.

Reading never trusts the archive: the compressed size is capped before anything is
inflated, the inflated stream is counted as it is read (so a gzip bomb stops at the
bound instead of after inflating), every member is read in chunks up to the per-file
cap, and only regular files and directories with safe relative names are accepted.

Member names: OPA's ``opa build`` writes bundle-rooted names with a leading ``/``
(``/data.json``, ``/x/policy.rego``) and ``tar -C dir .`` writes ``./x``. Both are
accepted and normalised to ``data.json``, ``x/policy.rego`` (the names the signature
lists, as OPA strips the ``/`` too). Anything else that could escape or be read two
ways (``..``, ``.``, empty segments, ``//``, backslashes, control characters) is refused,
as are two members that normalise to the same name. Names are bundle paths, never
file-system paths: nothing here extracts to disk.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from tenantguard.errors import BundleMalformed, BundleTooLarge, BundleUnsafePath

MiB = 1024 * 1024
CHUNK = 64 * 1024
_FIXED_MODE = 0o644


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """Upper bounds applied while reading; the defaults fit policy bundles comfortably.

    ``max_total_bytes`` bounds the whole inflated tar stream (headers included).
    """

    max_compressed_bytes: int = 64 * MiB
    max_total_bytes: int = 64 * MiB
    max_file_bytes: int = 8 * MiB
    max_files: int = 10_000


DEFAULT_LIMITS = ArchiveLimits()


def read_archive(
    source: bytes | str | os.PathLike[str], limits: ArchiveLimits = DEFAULT_LIMITS
) -> dict[str, bytes]:
    """Return ``{normalised name: content}`` for every regular file, in archive order."""
    compressed = source if isinstance(source, bytes) else read_capped(source, limits)
    if len(compressed) > limits.max_compressed_bytes:
        raise BundleTooLarge(
            f"archive is {len(compressed)} bytes; the limit is {limits.max_compressed_bytes}",
            limit=limits.max_compressed_bytes,
        )
    if not compressed.startswith(b"\x1f\x8b"):
        raise BundleMalformed("not a gzip-compressed archive")
    stream = _CountingReader(gzip.GzipFile(fileobj=io.BytesIO(compressed)), limits.max_total_bytes)
    try:
        files = _read_members(stream, limits)
        while stream.read(CHUNK):  # drain so gzip checks its CRC and length trailer
            pass
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise BundleMalformed(f"archive cannot be read: {exc}") from None
    return files


def read_capped(path: str | os.PathLike[str], limits: ArchiveLimits = DEFAULT_LIMITS) -> bytes:
    """Read a bundle file, never more than one byte past the compressed-size limit."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limits.max_compressed_bytes + 1)
    except OSError as exc:
        raise BundleMalformed(f"cannot read bundle file {path}: {exc.strerror}") from None
    if len(data) > limits.max_compressed_bytes:
        raise BundleTooLarge(
            f"bundle file {path} exceeds {limits.max_compressed_bytes} bytes",
            limit=limits.max_compressed_bytes,
        )
    return data


class _CountingReader(io.RawIOBase):
    """Counts inflated bytes and fails as soon as they pass ``limit``."""

    def __init__(self, inner: gzip.GzipFile, limit: int) -> None:
        self._inner = inner
        self._limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = CHUNK if size is None or size < 0 else min(size, CHUNK)
        data = self._inner.read(want)
        self.count += len(data)
        if self.count > self._limit:
            raise BundleTooLarge(
                f"archive inflates past {self._limit} bytes",
                limit=self._limit,
                inflated_bytes=self.count,
            )
        return data


def _read_members(stream: _CountingReader, limits: ArchiveLimits) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    seen = 0
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            seen += 1
            if seen > limits.max_files:
                raise BundleTooLarge(f"archive has more than {limits.max_files} members")
            if member.isdir():
                if member.name not in ("", ".", "/"):
                    safe_name(member.name)
                continue
            name = safe_name(member.name)
            if not member.isreg() or member.issparse():
                raise BundleUnsafePath(
                    f"member {name!r} is not a regular file (type {member.type!r})", file=name
                )
            if name in files:
                raise BundleMalformed(f"member {name!r} appears more than once", file=name)
            files[name] = _read_member(tar, member, name, limits.max_file_bytes)
    return files


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, limit: int) -> bytes:
    """Read in chunks and stop at ``limit``; the header's size is only an early hint."""
    if member.size > limit:
        raise BundleTooLarge(f"{name} is {member.size} bytes; the limit is {limit}", file=name)
    handle = tar.extractfile(member)
    if handle is None:
        raise BundleUnsafePath(f"member {name!r} has no content", file=name)
    content = bytearray()
    while chunk := handle.read(CHUNK):
        content += chunk
        if len(content) > limit:
            raise BundleTooLarge(f"{name} exceeds {limit} bytes", file=name)
    return bytes(content)


def safe_name(raw: str) -> str:
    """Normalise a member name to a bundle path, or refuse it (see module docstring)."""
    if any(ord(c) < 0x20 or c == "\\" or 0xD800 <= ord(c) <= 0xDFFF for c in raw):
        raise BundleUnsafePath(f"member name {raw!r} has forbidden characters", file=raw)
    name = raw[2:] if raw.startswith("./") else raw[1:] if raw.startswith("/") else raw
    if not name or any(segment in ("", ".", "..") for segment in name.split("/")):
        raise BundleUnsafePath(f"member name {raw!r} is not a safe relative path", file=raw)
    return name


def write_archive(files: Mapping[str, bytes]) -> bytes:
    """A tar.gz whose bytes depend only on ``files``: sorted names, fixed metadata.

    Only regular files are written (no directory members, as ``opa build`` does);
    mtime 0, uid/gid 0, empty owner names, mode 0644, gzip header without name or time.
    """
    out = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name in sorted(files):
            content = files[name]
            info = tarfile.TarInfo(safe_name(name))
            info.size, info.mtime, info.mode = len(content), 0, _FIXED_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


"""Building and re-signing bundle archives.

``build_bundle`` packs a directory in the bundle repository layout: ``*.rego`` and
``data.json`` files anywhere below the root, plus an optional root ``.manifest``.
Hidden files and directories (``.git``...) and every other file are left out; a
symlink is refused rather than followed out of the tree. A mapping of path to content
is packed as given. The
content (manifest, data, file names, package roots) is parsed before it is signed; the
Rego is compiled by the callers that hold an engine (``tenantguard bundle build`` and
``sign``, the plane on upload), since this layer does not import one.

Content revisions. Without an explicit revision, a bundle is named
``<manifest revision>-<12 hex>`` (:func:`content_revision`), the hex the start of
:func:`revision_digest`: a SHA-256 over every file the bundle holds, sorted by name, with
``.manifest`` in its normalised form without ``revision`` and ``metadata.serial`` and
``.signatures.json`` left out. The same sources always give the same revision, whenever and
wherever they are built (the serial, which only orders bundles, is not content); any change to
a file, a file name or the rest of the manifest gives another. The digest of a built archive's
files equals the digest of the sources it was built from.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tenantguard.bundle.archive import DEFAULT_LIMITS, ArchiveLimits, read_archive, safe_name, write_archive
from tenantguard.bundle.content import classify, load_json, parse_contents
from tenantguard.bundle.model import MANIFEST_FILE, SIGNATURES_FILE, Manifest
from tenantguard.bundle.signing import Signer, as_signer, digests, signatures_file
from tenantguard.errors import BundleMalformed, BundleTooLarge, BundleUnsafePath
from tenantguard.identity.keys import SigningKey

Source = str | os.PathLike[str] | Mapping[str, bytes | str]
REVISION_DIGEST_CHARS: Final = 12  # hex digits of revision_digest in a content revision (48 bits)


def build_bundle(
    source: Source,
    revision: str | None = None,
    *,
    signing_key: SigningKey | Signer | None = None,
    metadata: Mapping[str, Any] | None = None,
    roots: Sequence[str] | None = None,
    serial: int | None = None,
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> bytes:
    """Return the tar.gz bytes of a new bundle, signed when a key or signer is given.

    ``revision`` is taken as given; ``None`` names the bundle after its content,
    ``<manifest revision>-<12 hex>`` (see the module docstring; ``BundleMalformed`` when the
    source ``.manifest`` names no revision). ``roots`` override the source ``.manifest``;
    ``metadata`` is merged over it; ``metadata["serial"]`` is set to ``serial`` (else
    ``metadata["serial"]``, else now in milliseconds) so that activation can refuse rollbacks.
    """
    files = _collect(source, limits)
    files.pop(SIGNATURES_FILE, None)
    base = _manifest_of(files)
    extra = dict(metadata or {})
    if serial is None:
        serial = extra.get("serial", time.time_ns() // 1_000_000)
    wire = base.to_wire()
    wire["metadata"] = {**base.metadata, **extra, "serial": serial}
    if roots is not None:
        wire["roots"] = list(roots)
    files[MANIFEST_FILE] = _manifest_bytes(wire)
    if revision is None:
        revision = _named_after(base.revision, _digest(files))
    files[MANIFEST_FILE] = _manifest_bytes(wire | {"revision": revision})
    parse_contents(files)
    return _finish(files, signing_key, limits)


def revision_digest(source: Source, *, limits: ArchiveLimits = DEFAULT_LIMITS) -> str:
    """SHA-256 (hex) of what a bundle built from ``source`` holds, apart from its revision,
    its serial and its signature (see the module docstring).

    ``source``: a bundle directory (the files ``build_bundle`` would pack) or a mapping of
    path to content, e.g. ``read_archive(archive)`` (a signature in it is ignored).
    """
    return _digest(_content(source, limits))


def content_revision(source: Source, *, base: str | None = None, limits: ArchiveLimits = DEFAULT_LIMITS) -> str:
    """The revision ``build_bundle(source)`` gives a bundle: ``<base>-<12 hex of revision_digest>``.

    ``base`` defaults to the source ``.manifest``'s revision (``BundleMalformed`` when it
    names none).
    """
    files = _content(source, limits)
    return _named_after(_manifest_of(files).revision if base is None else base, _digest(files))


def _content(source: Source, limits: ArchiveLimits) -> dict[str, bytes]:
    """The files a bundle built from ``source`` holds (a manifest always: the build writes one)."""
    files = _collect(source, limits)
    files.pop(SIGNATURES_FILE, None)
    files[MANIFEST_FILE] = _manifest_bytes(_manifest_of(files).to_wire())
    return files


def _manifest_of(files: Mapping[str, bytes]) -> Manifest:
    return Manifest.from_wire(load_json(files[MANIFEST_FILE], MANIFEST_FILE)) if (
        MANIFEST_FILE in files
    ) else Manifest()


def _named_after(base: str, digest: str) -> str:
    if not base:
        raise BundleMalformed(".manifest names no revision to name the bundle after (<revision>-<12 hex of the "
                              "content>)", file=MANIFEST_FILE)
    return f"{base}-{digest[:REVISION_DIGEST_CHARS]}"


def _digest(files: Mapping[str, bytes]) -> str:
    """Over every file but the signature, by name; the manifest without revision and serial."""
    outer = hashlib.sha256()
    for name in sorted(files):
        if name == SIGNATURES_FILE:
            continue
        content = _manifest_content(files[name]) if name == MANIFEST_FILE else files[name]
        outer.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return outer.hexdigest()


def _manifest_content(manifest: bytes) -> bytes:
    """The manifest as content: normalised, without ``revision`` and ``metadata.serial``."""
    wire = Manifest.from_wire(load_json(manifest, MANIFEST_FILE)).to_wire()
    del wire["revision"]
    metadata = {k: v for k, v in wire.pop("metadata", {}).items() if k != "serial"}
    if metadata:
        wire["metadata"] = metadata
    return _manifest_bytes(wire)


def sign_bundle(
    bundle: bytes | str | os.PathLike[str],
    key: SigningKey | Signer,
    *,
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> bytes:
    """Re-sign an existing archive (any previous signature is dropped, not checked).

    The content is kept byte for byte; member names are normalised and the archive is
    rewritten deterministically.
    """
    files = read_archive(bundle, limits)
    files.pop(SIGNATURES_FILE, None)
    parse_contents(files)
    return _finish(files, key, limits)


def _finish(
    files: dict[str, bytes], key: SigningKey | Signer | None, limits: ArchiveLimits
) -> bytes:
    if key is not None:
        token = as_signer(key).sign(digests(files))
        files[SIGNATURES_FILE] = signatures_file(token)
    _check_sizes(files, limits)
    archive = write_archive(files)
    read_archive(archive, limits)  # what we write must be what we accept
    return archive


def _manifest_bytes(wire: dict[str, Any]) -> bytes:
    return json.dumps(wire, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _collect(source: Source, limits: ArchiveLimits) -> dict[str, bytes]:
    if isinstance(source, Mapping):
        return {
            safe_name(name): content.encode() if isinstance(content, str) else bytes(content)
            for name, content in source.items()
        }
    return _collect_dir(Path(source), limits)


def _collect_dir(root: Path, limits: ArchiveLimits) -> dict[str, bytes]:
    if not root.is_dir():
        raise BundleUnsafePath(f"{root} is not a directory")
    files: dict[str, bytes] = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            path = Path(directory, filename)
            name = path.relative_to(root).as_posix()
            if not _wanted(name):
                continue
            if path.is_symlink() or not path.is_file():
                raise BundleUnsafePath(f"{name} is not a regular file", file=name)
            if path.stat().st_size > limits.max_file_bytes:
                raise BundleTooLarge(f"{name} exceeds {limits.max_file_bytes} bytes", file=name)
            files[name] = path.read_bytes()
    return files


def _wanted(name: str) -> bool:
    if name == MANIFEST_FILE:
        return True
    if any(part.startswith(".") for part in name.split("/")):
        return False
    return classify(name) in ("module", "data", "schema")


def _check_sizes(files: Mapping[str, bytes], limits: ArchiveLimits) -> None:
    for name, content in files.items():
        if len(content) > limits.max_file_bytes:
            raise BundleTooLarge(f"{name} exceeds {limits.max_file_bytes} bytes", file=name)
    if len(files) > limits.max_files:
        raise BundleTooLarge(f"bundle has more than {limits.max_files} files")

"""Hostile archives, each built by hand with tarfile, must be refused with a typed error."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
from tenantguard.bundle import ArchiveLimits, read_archive, verify_bundle
from tenantguard.bundle.archive import CHUNK, MiB
from tenantguard.errors import (
    BundleFileUnsigned,
    BundleMalformed,
    BundleTooLarge,
    BundleUnsafePath,
)


@pytest.mark.parametrize(
    "name",
    ["../x.rego", "a/../../x.rego", "a/./x.rego", "//etc/x.rego", "/../x.rego", "a//x.rego", "a\\x.rego"],
)
def test_unsafe_names_are_refused(tar, name: str) -> None:
    archive = tar.gz([tar.member(name, b"package x\n")])
    with pytest.raises(BundleUnsafePath) as exc:
        read_archive(archive)
    assert exc.value.file == name


def test_rooted_names_stay_inside_the_bundle(tar) -> None:
    """OPA writes ``/x.rego``: read as bundle-rooted, so ``/etc/x.rego`` is ``etc/x.rego``."""
    files = read_archive(tar.gz([tar.member("/etc/x.rego", b"p"), tar.member("./y.rego", b"q")]))
    assert files == {"etc/x.rego": b"p", "y.rego": b"q"}


def test_an_injected_rooted_member_is_not_signed(tar, key, verifier, source) -> None:
    from tenantguard.bundle import build_bundle

    signed = build_bundle(source, "r", signing_key=key)
    hostile = tar.repack(signed, lambda files: files.update({"/etc/x.rego": b"package evil\n"}))
    with pytest.raises(BundleFileUnsigned) as exc:
        verify_bundle(hostile, verifier)
    assert exc.value.file == "etc/x.rego"


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("symlink", {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}),
        ("hardlink", {"type": tarfile.LNKTYPE, "linkname": "data.json"}),
        ("char device", {"type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3}),
        ("block device", {"type": tarfile.BLKTYPE, "devmajor": 8, "devminor": 0}),
        ("fifo", {"type": tarfile.FIFOTYPE}),
    ],
)
def test_non_regular_members_are_refused(tar, kind: str, fields: dict) -> None:
    archive = tar.gz([tar.member("data.json", b"{}"), tar.member("link.rego", **fields)])
    with pytest.raises(BundleUnsafePath, match="not a regular file") as exc:
        read_archive(archive)
    assert exc.value.file == "link.rego", kind


@pytest.mark.parametrize("names", [("a.rego", "a.rego"), ("a.rego", "/a.rego"), ("./a.rego", "a.rego")])
def test_duplicate_names_are_refused(tar, names: tuple[str, str]) -> None:
    archive = tar.gz([tar.member(names[0], b"one"), tar.member(names[1], b"two")])
    with pytest.raises(BundleMalformed, match="more than once") as exc:
        read_archive(archive)
    assert exc.value.file == "a.rego"


def test_a_file_over_the_per_file_bound_is_refused(tar) -> None:
    limits = ArchiveLimits(max_file_bytes=1024)
    assert read_archive(tar.gz([tar.member("ok.rego", b"x" * 1024)]), limits)
    with pytest.raises(BundleTooLarge) as exc:
        read_archive(tar.gz([tar.member("big.rego", b"x" * 1025)]), limits)
    assert exc.value.file == "big.rego"


def _bomb(members: int, member_size: int) -> bytes:
    """``members`` x ``member_size`` zero bytes, streamed so the test never holds them."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz, tarfile.open(
        fileobj=gz, mode="w|"
    ) as tar:
        for i in range(members):
            info = tarfile.TarInfo(f"part{i}/data.json")
            info.size = member_size
            tar.addfile(info, _Zeros(member_size))
    return out.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)


def test_gzip_bomb_is_stopped_at_the_total_bound() -> None:
    """200 MiB inflated from a tiny archive: refused once 64 MiB have been inflated."""
    bomb = _bomb(members=25, member_size=8 * MiB)
    assert len(bomb) < 1 * MiB  # the compression ratio is what makes it a bomb
    with pytest.raises(BundleTooLarge, match="inflates past") as exc:
        read_archive(bomb)
    inflated = exc.value.detail["inflated_bytes"]
    assert 64 * MiB < inflated <= 64 * MiB + CHUNK  # stopped at the bound, not at 200 MiB


def test_gzip_bomb_in_one_member_is_stopped_at_the_file_bound() -> None:
    with pytest.raises(BundleTooLarge) as exc:
        read_archive(_bomb(members=1, member_size=200 * MiB))
    assert exc.value.file == "part0/data.json"


def test_a_compressed_archive_over_the_bound_is_refused(tar, tmp_path: Path) -> None:
    archive = tar.gz([tar.member(f"f{i}.rego", bytes(range(256)) * 8) for i in range(4)])
    limits = ArchiveLimits(max_compressed_bytes=len(archive) - 1)
    with pytest.raises(BundleTooLarge):
        read_archive(archive, limits)
    path = tmp_path / "b.tar.gz"
    path.write_bytes(archive)
    with pytest.raises(BundleTooLarge):
        read_archive(path, limits)
    assert read_archive(path, ArchiveLimits(max_compressed_bytes=len(archive)))


def test_too_many_members_are_refused(tar) -> None:
    limits = ArchiveLimits(max_files=10)
    assert len(read_archive(tar.gz([tar.member(f"{i}.rego") for i in range(10)]), limits)) == 10
    with pytest.raises(BundleTooLarge, match="more than 10"):
        read_archive(tar.gz([tar.member(f"{i}.rego") for i in range(11)]), limits)


@pytest.mark.parametrize("mangle", ["not gzip", "truncated", "bad crc", "garbage tar"])
def test_damaged_archives_are_malformed(tar, mangle: str) -> None:
    good = tar.gz([tar.member("a.rego", b"package a\n" * 100)])
    damaged = {
        "not gzip": b"PK\x03\x04 a zip file",
        "truncated": good[: len(good) // 2],
        "bad crc": good[:-8] + bytes(4) + good[-4:],
        "garbage tar": gzip.compress(b"\x01" * 2048),
    }[mangle]
    with pytest.raises(BundleMalformed):
        read_archive(damaged)


@pytest.mark.parametrize(
    "name", ["sub/.manifest", "x.manifest", "sub/.signatures.json", "signatures.json", "data.yaml", "a/patch.json"]
)
def test_files_opa_would_read_differently_are_refused(tar, name: str) -> None:
    archive = tar.gz([tar.member(name, b"{}")])
    with pytest.raises(BundleMalformed) as exc:
        verify_bundle(archive, None, require_signature=False)
    assert exc.value.file == name

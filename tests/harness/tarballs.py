"""Tarballs built by hand with the standard library only, so tests control every header (bundle
archives a normal builder would never write)."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable
from typing import Any


class Tar:
    """Builds tarballs by hand (with the stdlib only) so tests control every header."""

    @staticmethod
    def member(name: str, content: bytes = b"", **fields: Any) -> tuple[tarfile.TarInfo, bytes]:
        info = tarfile.TarInfo(name)
        info.size = len(content)
        for field, value in fields.items():
            setattr(info, field, value)
        return info, content

    @staticmethod
    def gz(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
            for info, content in members:
                tar.addfile(info, io.BytesIO(content) if info.isreg() else None)
        return out.getvalue()

    @staticmethod
    def unpack(archive: bytes) -> dict[str, bytes]:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            return {
                m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers()
                if m.isreg()
            }

    @classmethod
    def pack(cls, files: dict[str, bytes]) -> bytes:
        return cls.gz([cls.member(name, content) for name, content in files.items()])

    @classmethod
    def repack(cls, archive: bytes, mutate: Callable[[dict[str, bytes]], None]) -> bytes:
        files = cls.unpack(archive)
        mutate(files)
        return cls.pack(files)

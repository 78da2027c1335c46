"""Straight into NATS, as anyone with access to the server could: raw publishes, stored messages,
objects read and replaced. One short connection per call, bounded by a timeout."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import nats
import nats.js.errors
from nats.aio.client import Client

TIMEOUT = 30.0  # bounds a hang of one call, never its expected duration


@dataclass(frozen=True)
class Stored:
    subject: str
    seq: int
    data: bytes
    headers: dict[str, str]


async def _quiet(_exc: Exception) -> None:
    pass


async def _connect(url: str) -> Client:
    return await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)


async def _read_stream(url: str, stream: str) -> list[Stored]:
    nc = await _connect(url)
    try:
        js = nc.jetstream(timeout=5)
        info = await js.stream_info(stream)
        out = []
        for seq in range(info.state.first_seq or 1, (info.state.last_seq or 0) + 1):
            try:
                msg = await js.get_msg(stream, seq)
            except nats.js.errors.NotFoundError:
                continue  # replaced (last value per subject)
            out.append(Stored(msg.subject or "", seq, msg.data or b"", dict(msg.headers or {})))
        return out
    finally:
        await nc.close()


async def _get_object(url: str, bucket: str, name: str) -> bytes:
    nc = await _connect(url)
    try:
        store = await nc.jetstream(timeout=5).object_store(bucket)
        return bytes((await store.get(name)).data or b"")
    finally:
        await nc.close()


async def _put_object(url: str, bucket: str, name: str, data: bytes) -> None:
    nc = await _connect(url)
    try:
        store = await nc.jetstream(timeout=5).object_store(bucket)
        await store.put(name, data)
    finally:
        await nc.close()


async def _publish_core(url: str, subject: str, data: bytes) -> None:
    nc = await _connect(url)
    try:
        await nc.publish(subject, data)
        await nc.flush(timeout=5)
    finally:
        await nc.close()


async def _publish_js(url: str, subject: str, data: bytes, stream: str | None) -> int:
    nc = await _connect(url)
    try:
        return int((await nc.jetstream(timeout=5).publish(subject, data, stream=stream)).seq)
    finally:
        await nc.close()


async def _next_core_message(url: str, subject: str) -> bytes:
    nc = await _connect(url)
    try:
        sub = await nc.subscribe(subject, max_msgs=1)
        msg = await sub.next_msg(timeout=20)
        return bytes(msg.data)
    finally:
        await nc.close()


def read_stream(url: str, stream: str) -> list[Stored]:
    """Every message a stream holds, oldest first."""
    return asyncio.run(asyncio.wait_for(_read_stream(url, stream), TIMEOUT))


def get_object(url: str, bucket: str, name: str) -> bytes:
    return asyncio.run(asyncio.wait_for(_get_object(url, bucket, name), TIMEOUT))


def put_object(url: str, bucket: str, name: str, data: bytes) -> None:
    """Replace an object's bytes, as anyone with NATS write access to the bucket can."""
    asyncio.run(asyncio.wait_for(_put_object(url, bucket, name, data), TIMEOUT))


def publish_core(url: str, subject: str, data: bytes) -> None:
    asyncio.run(asyncio.wait_for(_publish_core(url, subject, data), TIMEOUT))


def next_core_message(url: str, subject: str) -> bytes:
    return asyncio.run(asyncio.wait_for(_next_core_message(url, subject), TIMEOUT))


def publish_js(url: str, subject: str, data: bytes, stream: str | None = None) -> int:
    """Store raw bytes on a stream subject (in ``stream`` when named), as anyone with NATS write
    access can; the stream seq."""
    return asyncio.run(asyncio.wait_for(_publish_js(url, subject, data, stream), TIMEOUT))

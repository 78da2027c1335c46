"""NATS with authorization and TLS on: what each tenantguard identity may and may not do.

A real nats-server runs with the users ``tenantguard dev`` and deploy/ give it (the
permissions of :mod:`tenantguard.feed.topology`): the plane as a password user, a billing
sidecar as an nkey user. The sidecar's credential must be enough to follow the feed and
publish its own decision logs, and nothing more.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from nats.aio.client import Client
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import ConfigError, NatsAuthorizationRefused, NatsTlsRefused, Unavailable
from tenantguard.feed import natsconn, topology
from tenantguard.feed.natsconfig import NatsServerTls
from tenantguard.feed.natsconn import NatsConnection
from tenantguard.identity.keys import write_private

from authz_sidecar.config import SidecarConfig
from authz_sidecar.feed import Feed
from authz_sidecar.runtime import Sidecar
from policy_plane.publisher import Publisher
from tests.harness.fleet import FAST, decide, eventually
from tests.harness.secure_nats import sidecar_conn
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]

class Errors:
    """Collects the asynchronous errors nats-py reports (permission violations arrive this way)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, exc: Exception) -> None:
        self.seen.append(str(exc))


async def test_sidecar_credential_follows_the_feed_and_publishes_its_decision_logs(
        tmp_path: Path, secure_nats: NatsServer, creds: dict[str, Path], plane: TestPlane,
        plane_pem: Path, bundle_pem: Path) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    config = SidecarConfig(service="billing", nats=sidecar_conn(secure_nats, creds), plane_key=plane_pem,
                           bundle_keys=(bundle_pem,), state_dir=tmp_path / "state", grpc_port=None)
    sidecar = Sidecar.from_config(config)
    feed = Feed.for_sidecar(sidecar, FAST)
    logs: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()

    async def on_log(msg: Any) -> None:
        await logs.put((msg.subject, msg.data))

    await plane.nc.subscribe(f"{topology.SUBJECT_DECISIONS_PREFIX}.>", cb=on_log)
    await plane.nc.flush()
    await feed.start()
    try:
        await eventually(lambda: decide(sidecar, "alice", "p1").allow, "alice allowed through the secured feed")
        await plane.write("acme/project:p2#member@user:alice")  # live updates too, not only the catch-up
        await eventually(lambda: decide(sidecar, "alice", "p2").allow, "a live relations batch applied")
        status = feed.status()
        assert status["server"] == secure_nats.url and status["nats"]["auth"] == "nkey"
        assert status["last_error"] is None, status["last_error"]
        assert sidecar.metrics.registry.get_sample_value("tg_nats_server_info", {"server": secure_nats.url}) == 1

        # Its own decision logs go through; another service's subject does not (same connection,
        # in order: once the allowed one has arrived, the refused one never will).
        await feed.publish(topology.decisions_subject("orders", "acme"), b'{"decisions": ["forged"]}')
        await feed.publish(topology.decisions_subject("billing", "acme"), b'{"decisions": []}')
        subject, _ = await asyncio.wait_for(logs.get(), timeout=10)
        assert subject == topology.decisions_subject("billing", "acme") and logs.empty()
    finally:
        await feed.stop()


async def test_sidecar_credential_cannot_publish_events_purge_or_delete_streams(
        secure_nats: NatsServer, creds: dict[str, Path], plane: TestPlane) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    before = (await plane.js.stream_info(topology.STREAM_RELATIONS)).state.messages
    errors = Errors()
    nc: Client = await natsconn.connect(sidecar_conn(secure_nats, creds), timeout=5, allow_reconnect=False,
                                        error_cb=errors, inbox_prefix=topology.sidecar_inbox("billing"))
    js = nc.jetstream(timeout=1.0)
    try:
        with pytest.raises(Exception):  # the server drops the request: no reply, a nats timeout
            await js.publish(topology.relations_subject("c0"), b'{"forged": true}')
        with pytest.raises(Exception):
            await js.purge_stream(topology.STREAM_RELATIONS)
        with pytest.raises(Exception):
            await js.delete_stream(topology.STREAM_RELATIONS)
        await nc.subscribe(f"{topology.SUBJECT_DECISIONS_PREFIX}.>")  # other services' logs: refused
        await nc.flush(timeout=5)
        refusals = [f'permissions violation for publish to "{subject.lower()}"'
                    for subject in (topology.relations_subject("c0"),
                                    f"$JS.API.STREAM.PURGE.{topology.STREAM_RELATIONS}",
                                    f"$JS.API.STREAM.DELETE.{topology.STREAM_RELATIONS}")]
        refusals.append('permissions violation for subscription to "tg.decisions.>"')

        def reported() -> bool:  # nats-py lowercases the server's -ERR text; the reports arrive asynchronously
            seen = "\n".join(errors.seen).lower()
            return all(refusal in seen for refusal in refusals)

        await eventually(reported, f"every refusal reported (seen: {errors.seen})", timeout=10.0)
    finally:
        await nc.close()
    info = await plane.js.stream_info(topology.STREAM_RELATIONS)  # still there, nothing purged, nothing added
    assert info.state.messages == before


async def test_sidecar_credential_cannot_listen_on_the_plane_s_or_another_service_s_inbox(
        secure_nats: NatsServer, creds: dict[str, Path], plane: TestPlane) -> None:
    """JetStream replies and deliveries travel on inboxes: the plane's (decision records it reads
    back, say) and another service's are refused to a billing credential; its own still work."""
    await plane.write("acme/project:p1#member@user:alice")
    errors = Errors()
    nc: Client = await natsconn.connect(sidecar_conn(secure_nats, creds), timeout=5, allow_reconnect=False,
                                        error_cb=errors, inbox_prefix=topology.sidecar_inbox("billing"))
    snooped: list[str] = []

    async def snoop(msg: Any) -> None:
        snooped.append(msg.subject)

    try:
        for prefix in (topology.INBOX_PREFIX, topology.sidecar_inbox("orders")):
            await nc.subscribe(f"{prefix}.>", cb=snoop)
        await nc.flush(timeout=5)
        stored = await plane.js.get_msg(topology.STREAM_RELATIONS, 1)  # answered on the plane's inbox
        info = await nc.jetstream(timeout=2.0).stream_info(topology.STREAM_RELATIONS)  # its own inbox
        await nc.flush(timeout=5)
    finally:
        await nc.close()
    seen = "\n".join(errors.seen).lower()
    assert 'permissions violation for subscription to "_inbox.>"' in seen, seen
    assert f'permissions violation for subscription to "{topology.sidecar_inbox("orders").lower()}.>"' in seen
    assert stored.data and snooped == []
    assert info.config.name == topology.STREAM_RELATIONS


async def test_plane_publisher_works_with_its_credential_and_reports_the_node(
        secure_nats: NatsServer, creds: dict[str, Path]) -> None:
    dead = "nats://127.0.0.1:1"  # a server list with a dead node first: any healthy node will do
    conn = NatsConnection(servers=(dead, secure_nats.url), user="plane", password_file=creds["plane"])
    publisher = Publisher(conn, connect_timeout=2.0)
    await publisher.connect()
    try:
        await publisher.ensure_topology()
        stored = await publisher.publish(topology.relations_subject("c0"), b"{}")
        await publisher.put_object(topology.BUCKET_SNAPSHOTS, "relations/c0/1", b"snapshot")
        assert stored.stream_seq >= 1 and not stored.duplicate and publisher.server == secure_nats.url
        assert publisher.connection.redacted()["servers"] == [dead, secure_nats.url]
    finally:
        await publisher.close()


async def test_a_wrong_password_is_refused_at_once_and_never_printed(
        tmp_path: Path, secure_nats: NatsServer) -> None:
    wrong = tmp_path / "wrong.password"
    write_private(wrong, b"not-the-password-S3CR3T\n")
    publisher = Publisher(NatsConnection(servers=(secure_nats.url,), user="plane", password_file=wrong),
                          connect_timeout=30.0)  # plane-style reconnect-forever: must not wait out 60 s
    with pytest.raises(NatsAuthorizationRefused) as refused:
        await publisher.connect()
    text = f"{refused.value} {refused.value.to_dict()}"
    assert "authorization refused" in text and "S3CR3T" not in text
    in_url = secure_nats.url.replace("nats://", "nats://plane:S3CR3T-in-url@")
    with pytest.raises(NatsAuthorizationRefused) as refused:
        await Publisher(in_url, connect_timeout=30.0).connect()
    assert "S3CR3T" not in str(refused.value) and "plane:***@" in str(refused.value)


def test_secret_files_readable_by_others_are_refused(tmp_path: Path) -> None:
    loose = tmp_path / "password"
    loose.write_text("a-password-here\n")
    loose.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        NatsConnection(servers=("nats://127.0.0.1:4222",), user="plane", password_file=loose)
    for kind in ("token_file", "nkey_seed_file", "creds_file"):
        with pytest.raises(ConfigError, match="readable by others"):
            NatsConnection(servers=("nats://127.0.0.1:4222",), **{kind: loose})


# --------------------------------------------------------------------------- TLS


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
          *, ca: bool = False, san: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = (subject, key) if issuer is None else issuer
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer_name))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write_pair(directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_private(directory / f"{name}.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    """A CA, a server cert for 127.0.0.1, a client cert from the CA and one from a rogue CA."""
    out = tmp_path / "pki"
    out.mkdir()
    ca_key, rogue_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca, rogue = _cert("tg-test-ca", ca_key, None, ca=True), _cert("rogue-ca", rogue_key, None, ca=True)
    (out / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (out / "rogue-ca.crt").write_bytes(rogue.public_bytes(serialization.Encoding.PEM))
    for name, issuer, san in (("server", ("tg-test-ca", ca_key), True), ("client", ("tg-test-ca", ca_key), False),
                              ("rogue", ("rogue-ca", rogue_key), False)):
        key = ec.generate_private_key(ec.SECP256R1())
        _write_pair(out, name, _cert(f"tg-{name}", key, issuer, san=san), key)
    return out


@pytest.fixture
def tls_nats(tmp_path: Path, pki: Path) -> Iterator[NatsServer]:
    tls = NatsServerTls(cert_file=pki / "server.crt", key_file=pki / "server.key", ca_file=pki / "ca.crt")
    with NatsServer(tmp_path / "nats-tls", tls=tls) as server:
        yield server


async def _round_trip(conn: NatsConnection) -> bytes:
    nc = await natsconn.connect(conn, timeout=5, allow_reconnect=False)
    try:
        sub = await nc.subscribe("tg.tls.check")
        await nc.publish("tg.tls.check", b"over tls")
        msg = await sub.next_msg(timeout=5)
        return bytes(msg.data)
    finally:
        await nc.close()


async def test_mutual_tls_with_a_trusted_client_certificate_works(tls_nats: NatsServer, pki: Path) -> None:
    conn = NatsConnection(servers=(tls_nats.url,), tls_ca_file=pki / "ca.crt", tls_cert_file=pki / "client.crt",
                          tls_key_file=pki / "client.key")
    assert conn.redacted()["tls"] and conn.redacted()["client_cert"]
    assert await _round_trip(conn) == b"over tls"


@pytest.mark.parametrize("client", ["rogue", None])
async def test_a_client_without_a_trusted_certificate_is_refused(tls_nats: NatsServer, pki: Path,
                                                                  client: str | None) -> None:
    cert = {"tls_cert_file": pki / f"{client}.crt", "tls_key_file": pki / f"{client}.key"} if client else {}
    conn = NatsConnection(servers=(tls_nats.url,), tls_ca_file=pki / "ca.crt", **cert)
    with pytest.raises(Unavailable):
        await _round_trip(conn)


async def test_a_server_whose_certificate_we_do_not_trust_is_refused(tls_nats: NatsServer, pki: Path) -> None:
    conn = NatsConnection(servers=(tls_nats.url,), tls_ca_file=pki / "rogue-ca.crt",
                          tls_cert_file=pki / "client.crt", tls_key_file=pki / "client.key")
    with pytest.raises(NatsTlsRefused, match="TLS"):
        await _round_trip(conn)


def test_server_config_is_private_and_lists_no_seed(secure_nats: NatsServer, creds: dict[str, Path]) -> None:
    config = secure_nats.store_dir / "nats-server.conf"
    assert config.stat().st_mode & 0o077 == 0
    assert creds["billing"].read_text().strip() not in config.read_text()
    assert json.dumps(natsconn.nkey_public(creds["billing"].read_bytes())) in config.read_text()


# --------------------------------------------------------------------------- server lists


async def test_sidecar_feed_moves_to_another_node_of_its_list_when_its_node_dies(
        tmp_path: Path, plane_pem: Path, bundle_pem: Path) -> None:
    with NatsServer(tmp_path / "a") as a, NatsServer(tmp_path / "b") as b:
        config = SidecarConfig(service="billing", nats_url=f"{a.url}, {b.url}", plane_key=plane_pem,
                               bundle_keys=(bundle_pem,), grpc_port=None)
        sidecar = Sidecar.from_config(config)
        feed = Feed.for_sidecar(sidecar, FAST)
        await feed.start()
        try:
            await eventually(lambda: feed.attached_server() is not None, "the feed attached to a node")
            first = feed.attached_server()
            (a if first == a.url else b).stop()
            other = b.url if first == a.url else a.url
            await eventually(lambda: feed.attached_server() == other, "the feed on the surviving node")
            assert feed.connects >= 2
        finally:
            await feed.stop()

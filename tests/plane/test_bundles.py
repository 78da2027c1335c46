"""Bundle publishing: the plane signs and announces, and refuses tampering, rollbacks and failing tests."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest
from tenantguard.bundle import PublicKeyVerifier, build_bundle, content_revision, verify_bundle, write_archive
from tenantguard.feed import topology as topo
from tenantguard.feed.events import BUNDLE_ANNOUNCE, verify_event
from tenantguard.identity.keys import SigningKey

from tests.harness.nats_raw import get_object, read_stream
from tests.harness.plane_bundles import POLICY, TESTS, bundle_dir, upload
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

def test_unsigned_upload_is_tested_signed_and_announced(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    archive = build_bundle(bundle_dir(tmp_path / "b"), "r1", serial=100)
    status, body = upload(plane, archive)
    assert status == 200, body
    assert body["signed_by_plane"] is True and body["tests_passed"] == 2 and body["signed_by"] == world.bundle_key.kid
    assert [s["scope"] for s in body["scopes"]] == ["all"]  # type: ignore[union-attr]

    [announce_msg] = read_stream(world.nats.url, topo.STREAM_BUNDLES)
    assert announce_msg.subject == topo.bundle_subject("all")
    event = verify_event(announce_msg.data, world.event_trust(), expected_type=BUNDLE_ANNOUNCE)
    assert event.seq == 1 and event.payload["revision"] == "r1" and event.payload["object"] == "bundles/all/r1"
    stored = get_object(world.nats.url, topo.BUCKET_BUNDLES, "bundles/all/r1")
    assert len(stored) == event.payload["size"]
    signed = verify_bundle(stored, PublicKeyVerifier(world.bundle_key.public_key))
    assert signed.revision == "r1" and signed.kid == world.bundle_key.kid

    again_status, again = upload(plane, archive)  # same content: nothing new is announced
    assert again_status == 200 and again["scopes"][0]["unchanged"] is True  # type: ignore[index]
    assert len(read_stream(world.nats.url, topo.STREAM_BUNDLES)) == 1
    listed = plane.client().get("/v1/bundles").json()["scopes"]
    assert [(s["scope"], s["revision"], s["loaded"]) for s in listed] == [("all", "r1", True)]


def test_services_pick_the_scopes(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    archive = build_bundle(bundle_dir(tmp_path / "b", services=["orders", "billing"]), "r1", serial=1)
    status, body = upload(plane, archive)
    assert status == 200, body
    subjects = sorted(m.subject for m in read_stream(world.nats.url, topo.STREAM_BUNDLES))
    assert subjects == [topo.bundle_subject("billing"), topo.bundle_subject("orders")]


def test_signed_upload_must_verify_with_the_plane_bundle_key(world: World, plane: PlaneProcess,
                                                              tmp_path: Path) -> None:
    source = bundle_dir(tmp_path / "b")
    signed = build_bundle(source, "r2", serial=2, signing_key=world.bundle_key)
    assert upload(plane, signed)[0] == 200

    stranger = build_bundle(source, "r3", serial=3, signing_key=SigningKey.generate())
    status, body = upload(plane, stranger)
    assert status == 422 and body["error"] == "bundle_unknown_key"

    tampered = _replace_member(build_bundle(source, "r4", serial=4, signing_key=world.bundle_key),
                               "demo.rego", POLICY.replace('"alice"', '"mallory"'))
    status, body = upload(plane, tampered)
    assert status == 422 and body["error"] == "bundle_hash_mismatch"
    assert len(read_stream(world.nats.url, topo.STREAM_BUNDLES)) == 1


def test_older_revision_is_refused_with_409(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    source = bundle_dir(tmp_path / "b")
    assert upload(plane, build_bundle(source, "r200", serial=200))[0] == 200
    status, body = upload(plane, build_bundle(source, "r100", serial=100))
    assert status == 409 and body["error"] == "bundle_rollback"
    status, body = upload(plane, build_bundle(source, "r100", serial=100, signing_key=world.bundle_key))
    assert status == 409 and body["error"] == "bundle_rollback"
    assert plane.client().get("/v1/bundles").json()["scopes"][0]["revision"] == "r200"


def test_a_content_revision_tells_contents_apart_and_the_same_sources_built_again_are_unchanged(
        world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    """Issue 30: without an explicit revision a build is <.manifest revision>-<12 hex of the content>.
    The same sources built again differ only in metadata.serial: the plane reports them unchanged (it
    refused them as "already active with other content"), unless the serial is older (a rollback, as
    before); other content is another revision; a revision given explicitly that names the active one
    with other content is still refused."""
    source = bundle_dir(tmp_path / "b")
    revision = content_revision(source)
    assert re.fullmatch(r"r1-[0-9a-f]{12}", revision)
    status, body = upload(plane, build_bundle(source, serial=100))
    assert status == 200 and body["revision"] == revision, body
    status, body = upload(plane, build_bundle(source, serial=101))
    assert status == 200 and body["revision"] == revision and body["scopes"][0]["unchanged"] is True, body
    assert [m.seq for m in read_stream(world.nats.url, topo.STREAM_BUNDLES)] == [1]  # nothing announced
    status, body = upload(plane, build_bundle(source, serial=50))  # the same sources, an older serial
    assert status == 409 and body["error"] == "bundle_rollback" and "older" in body["message"], body
    (source / "more.rego").write_text('package demo\n\nextra if input.user == "carol"\n')
    changed = content_revision(source)
    assert re.fullmatch(r"r1-[0-9a-f]{12}", changed) and changed != revision
    status, body = upload(plane, build_bundle(source, serial=102))
    assert status == 200 and body["revision"] == changed and body["scopes"][0]["unchanged"] is False, body
    assert [(s["scope"], s["revision"]) for s in plane.client().get("/v1/bundles").json()["scopes"]] == [
        ("all", changed)]
    (source / "more.rego").write_text('package demo\n\nextra if input.user == "dave"\n')
    status, body = upload(plane, build_bundle(source, changed, serial=103))  # named, not derived
    assert status == 409 and body["error"] == "bundle_rollback" and "already active" in body["message"], body
    assert [m.seq for m in read_stream(world.nats.url, topo.STREAM_BUNDLES)] == [2]  # the stream keeps the last


def test_a_content_revision_counts_against_the_128_characters_a_revision_may_have(
        plane: PlaneProcess, tmp_path: Path) -> None:
    """policy-authoring.md: letters, digits, '.', '_', '-', at most 128 with the suffix (13 characters)."""
    source = bundle_dir(tmp_path / "b")
    (source / ".manifest").write_text(json.dumps({"revision": "v" * 116}))
    status, body = upload(plane, build_bundle(source, serial=1))
    assert status == 422 and body["error"] == "bundle_malformed" and "1-128 characters" in body["message"], body
    (source / ".manifest").write_text(json.dumps({"revision": "v" * 115}))
    status, body = upload(plane, build_bundle(source, serial=2))
    assert status == 200 and len(body["revision"]) == 128 and body["revision"] == content_revision(source), body


def test_failing_rego_test_is_refused_naming_the_test(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    status, body = upload(plane, build_bundle(bundle_dir(tmp_path / "b", failing=True), "r1", serial=1))
    assert status == 422 and body["error"] == "policy_tests_failed"
    assert body["detail"]["failed"] == ["data.demo_broken_test.test_bob_is_wrongly_expected"]  # type: ignore[index]
    assert "test_bob_is_wrongly_expected" in str(body["message"])
    assert read_stream(world.nats.url, topo.STREAM_BUNDLES) == []


def test_garbage_and_oversized_uploads_are_refused(plane: PlaneProcess, tmp_path: Path) -> None:
    status, body = upload(plane, b"not a tarball")
    assert status == 422 and body["error"].startswith("bundle_")  # type: ignore[union-attr]
    status, body = upload(plane, b"\0" * (16 * 1024 * 1024 + 1))
    assert status == 413 and body["error"] == "payload_too_large"


def _replace_member(archive: bytes, name: str, content: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
            if member.name.lstrip("/") == name:
                data = content.encode()
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("data", [b'{"demo": {"allow": true}}', b'{"demo": {"x": 1}, "\\ud800": 1}',
                                  b'{"demo": {"x": 1}, "demo": {"allow": true}}'])
def test_an_upload_whose_data_shadows_a_rule_or_reads_two_ways_is_refused(
    plane: PlaneProcess, data: bytes
) -> None:
    """Data at a rule's path (regorus would answer the data: allow for everyone) and JSON that
    parsers read differently are refused with a typed 4xx, before anything is signed or announced."""
    archive = write_archive({".manifest": b'{"revision":"r1","metadata":{"serial":1}}',
                             "demo.rego": POLICY.encode(), "demo_test.rego": TESTS.encode(), "data.json": data})
    status, body = upload(plane, archive)
    assert 400 <= status < 500, body
    assert body["error"] == "bundle_malformed"
    assert plane.client().get("/v1/bundles").json()["scopes"] == []


def test_the_publish_gate_tests_signed_uploads_too_and_audits_a_skip(world: World, plane: PlaneProcess,
                                                                     tmp_path: Path) -> None:
    """A bundle signed with the plane's key offline is tested like an unsigned one; an explicit
    skip_tests publishes it anyway, and the audit log says so."""
    signed = build_bundle(bundle_dir(tmp_path / "b", failing=True), "r1", serial=1, signing_key=world.bundle_key)
    status, body = upload(plane, signed)
    assert status == 422 and body["error"] == "policy_tests_failed", body
    response = plane.client().post("/v1/bundles", params={"skip_tests": "true"}, content=signed,
                                   headers={"Content-Type": "application/gzip"})
    assert response.status_code == 200, response.text
    assert response.json()["tests_skipped"] is True and response.json()["tests_passed"] == 0
    good = build_bundle(bundle_dir(tmp_path / "good"), "r2", serial=2)
    assert upload(plane, good)[0] == 200
    entries = plane.client().get("/v1/audit").json()["entries"]
    published = [e for e in entries if e["action"] == "bundles.publish"]
    assert [(e["detail"]["revision"], e["detail"]["tests_skipped"], e["detail"]["tests_passed"])
            for e in published] == [("r2", False, 2), ("r1", True, 0)], published

"""Fuzzing the bundle reader (archive + signature + contents) and the relations parsers.

Bundles: tar.gz archives with odd members (symlinks, hard links, devices, ``..``,
absolute and duplicate names, declared sizes far beyond the content, long and odd
names), and signed bundles whose signed content is odd (broken JSON, deep nesting, odd
manifests) or whose signature JWT, signed with the real key, carries odd claims.
Relations: tuples as text, wire objects, NATS keys and subjects, change batches, and
snapshots whose header and (gzipped) body lines are odd but correctly hashed.
Property: only the library's typed errors (``TenantGuardError`` subclasses) escape.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import tarfile
import zlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tenantguard.bundle import TrustSetVerifier, file_digest, read_archive, verify_bundle
from tenantguard.bundle.store import order_key
from tenantguard.errors import TenantGuardError
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import (
    ChangeBatch,
    Relationship,
    decode_id,
    index_from_snapshot_bytes,
    relationship_from_key,
    relationship_from_subject,
)
from tenantguard.relations.snapshot import FORMAT, VERSION

from .budget import budget, timeout
from .strategies import json_text, json_values, mutated, nested, odd_strings

pytestmark = timeout

KEY = SigningKey.generate("EdDSA")
TRUST = TrustSet()
TRUST.add_public_key(KEY.public_key, "plane")
VERIFIER = TrustSetVerifier(TRUST)
POLICY = b"package tenantguard\n\ndefault decision := {\"allow\": false}\n"
MANIFEST = {"revision": "7", "roots": ["tenantguard"], "metadata": {"serial": 7}}


def typed(call: Any, *args: Any, **kwargs: Any) -> Any:
    """The property: a result, or a TenantGuardError; anything else fails the case."""
    try:
        return call(*args, **kwargs)
    except TenantGuardError:
        return None


# --------------------------------------------------------------------------- archives


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwt(payload: Any, header: Any = None) -> str:
    """A JWS over exactly these (possibly odd) header and payload, signed with the real key."""
    head = json.dumps(header if header is not None else {"alg": "EdDSA", "kid": KEY.kid}).encode()
    body = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else json.dumps(payload).encode()
    message = f"{b64(head)}.{b64(body)}"
    return f"{message}.{b64(KEY.private_key.sign(message.encode()))}"


def signed_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` plus a genuine .signatures.json listing each file's digest (OPA's; raw SHA-256
    where the content has none, e.g. a .manifest that is not JSON)."""
    listed = [{"name": n, "hash": _digest(n, c), "algorithm": "SHA-256"} for n, c in files.items()]
    token = jwt({"files": listed, "iat": 1, "iss": "plane"})
    return {**files, ".signatures.json": json.dumps({"signatures": [token]}).encode()}


def _digest(name: str, content: bytes) -> str:
    try:
        return file_digest(name, content)
    except TenantGuardError:
        return hashlib.sha256(content).hexdigest()


def base_files() -> dict[str, bytes]:
    return {".manifest": json.dumps(MANIFEST).encode(), "tenantguard/policy.rego": POLICY,
            "tenantguard/data.json": b'{"config": {"calls": {}}}'}


def archive(members: list[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]], *, gz: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info, content = member if isinstance(member, tuple) else (member, b"")
            tar.addfile(info, io.BytesIO(content) if content else None)
    raw = out.getvalue()
    return gzip.compress(raw) if gz else raw


def regular(name: str, content: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    return info, content


def odd_member(kind: str, name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE,
                 "char": tarfile.CHRTYPE, "block": tarfile.BLKTYPE, "dir": tarfile.DIRTYPE,
                 "contiguous": tarfile.CONTTYPE}[kind]
    info.linkname = "../../etc/passwd"
    return info


NAMES = st.one_of(odd_strings.filter(lambda s: "\x00" not in s),
                  st.sampled_from(["../policy.rego", "/abs/data.json", "./.manifest", "a/../../b", "a//b", "./",
                                   ".", "..", "a\\b", "tenantguard/data.json", ".signatures.json", "x/.manifest",
                                   "x/signatures.json", "data.yaml", "a/patch.json", "." * 300, "a/" * 200 + "b",
                                   "\u202e.rego", "con", "a\tb"]))


@budget(120)
@given(data=st.data())
def test_archives_with_odd_members(data: st.DataObject) -> None:
    members: list[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]] = [
        regular(n, c) for n, c in signed_files(base_files()).items()]
    for _ in range(data.draw(st.integers(1, 3))):
        how = data.draw(st.sampled_from(["odd_type", "odd_name", "duplicate", "huge_size", "empty_name"]))
        name = data.draw(NAMES)
        at = data.draw(st.integers(0, len(members)))
        if how == "odd_type":
            kind = data.draw(st.sampled_from(["symlink", "hardlink", "fifo", "char", "block", "dir", "contiguous"]))
            members.insert(at, odd_member(kind, name))
        elif how == "odd_name":
            members.insert(at, regular(name, data.draw(st.binary(max_size=40))))
        elif how == "duplicate":
            members.insert(at, regular(data.draw(st.sampled_from(list(base_files()))), b"{}"))
        elif how == "huge_size":
            info, _ = regular(name, b"")
            info.size = data.draw(st.sampled_from([2**33, 8 * 1024 * 1024 + 1, 10**11]))
            members.insert(at, info)
        else:
            members.insert(at, regular("", b"x"))
    try:
        raw = archive(members)
    except (ValueError, UnicodeError, tarfile.TarError, OverflowError):  # tarfile will not write it
        return
    typed(read_archive, raw)
    typed(verify_bundle, raw, VERIFIER)


@budget(80)
@given(data=st.data())
def test_broken_archive_bytes(data: st.DataObject) -> None:
    """Truncated, bit-flipped, not gzip, gzip of garbage, concatenated gzip members."""
    raw = bytearray(archive([regular(n, c) for n, c in signed_files(base_files()).items()]))
    how = data.draw(st.sampled_from(["truncate", "flip", "plain_tar", "garbage", "concat", "trailing"]))
    if how == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif how == "flip":
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    elif how == "plain_tar":
        raw = bytearray(archive([regular("a", b"b")], gz=False))
    elif how == "garbage":
        raw = bytearray(gzip.compress(data.draw(st.binary(max_size=2000))))
    elif how == "concat":
        raw += gzip.compress(archive([regular("evil.rego", b"package x")], gz=False))
    else:
        raw += data.draw(st.binary(min_size=1, max_size=50))
    typed(verify_bundle, bytes(raw), VERIFIER)


@budget(100)
@given(data=st.data(), which=st.sampled_from([".manifest", "tenantguard/data.json", "tenantguard/policy.rego"]))
def test_signed_bundles_with_odd_content(data: st.DataObject, which: str) -> None:
    """The signature is genuine; the content it vouches for is odd."""
    files = base_files()
    if which == ".manifest":
        doc = data.draw(st.one_of(mutated(MANIFEST), json_values))
        text = data.draw(json_text(doc))
    elif which == "tenantguard/data.json":
        text = data.draw(st.one_of(json_text(), st.just(nested(data.draw(st.sampled_from([100, 1_000, 100_000]))))))
    else:
        text = data.draw(st.one_of(odd_strings, st.text(max_size=200)))
    files[which] = data.draw(st.one_of(st.just(text.encode("utf-8", "surrogatepass")),
                                       st.just(b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass")),
                                       st.just(text.encode("utf-16", "surrogatepass"))))
    raw = archive([regular(n, c) for n, c in signed_files(files).items()])
    bundle = typed(verify_bundle, raw, VERIFIER)
    if bundle is not None:
        typed(order_key, bundle.manifest)


SIGNED_CLAIMS = {"files": [{"name": ".manifest", "hash": "0" * 64, "algorithm": "SHA-256"}], "iat": 1,
                 "iss": "plane", "scope": ""}


@budget(100)
@given(data=st.data())
def test_signature_jwts_with_odd_claims_or_headers(data: st.DataObject) -> None:
    """``.signatures.json`` holding a JWT the real key signed over odd claims, or odd JSON around it."""
    files = base_files()
    how = data.draw(st.sampled_from(["claims", "claims_text", "header", "file"]))
    token = jwt(SIGNED_CLAIMS)
    if how == "claims":
        token = jwt(data.draw(mutated(SIGNED_CLAIMS)))
    elif how == "claims_text":
        token = jwt(data.draw(json_text(SIGNED_CLAIMS)))
    elif how == "header":
        header = data.draw(mutated({"alg": "EdDSA", "kid": KEY.kid, "typ": "JWT"}))
        token = jwt(SIGNED_CLAIMS, header)
    signatures = json.dumps({"signatures": [token]}).encode()
    if how == "file":
        signatures = data.draw(json_text(data.draw(mutated({"signatures": [token]})))).encode("utf-8",
                                                                                               "surrogatepass")
    members = [regular(n, c) for n, c in {**files, ".signatures.json": signatures}.items()]
    typed(verify_bundle, archive(members), VERIFIER)


# --------------------------------------------------------------------------- relations

TUPLE = {"tenant": "acme", "object": "project:p1", "relation": "member", "subject": "group:eng#member"}


@budget(150)
@given(text=st.one_of(odd_strings, st.text(max_size=80),
                      st.sampled_from(["acme / project:p1#member @ user:alice", "acme/project:p1#member@user:a#b#c",
                                       "acme / project:p1#member @ user:" + "a" * 300, " / : # @ ", "a/b:c#d@e:f",
                                       "acme/project:p1#member@user:alice\n", "ACME/project:p1#member@user:alice"])))
def test_relationship_text(text: str) -> None:
    typed(Relationship.parse, text)
    typed(relationship_from_key, text)
    typed(relationship_from_subject, text)
    typed(decode_id, text)


@budget(150)
@given(data=st.data())
def test_relationship_and_batch_wire(data: st.DataObject) -> None:
    typed(Relationship.from_wire, data.draw(st.one_of(mutated(TUPLE), json_values)))
    batch = {"seq": 3, "changes": [{"op": "write", "rel": TUPLE}, {"op": "delete", "rel": TUPLE}]}
    typed(ChangeBatch.from_wire, data.draw(st.one_of(mutated(batch), json_values)))


def snapshot(header: Any, lines: list[bytes], *, header_text: bytes | None = None) -> bytes:
    """A snapshot whose header names the body's true size and digest (so parsing goes past it)."""
    body = zlib.compressobj(6, zlib.DEFLATED, 31)
    raw = body.compress(b"".join(line + b"\n" for line in lines)) + body.flush()
    if isinstance(header, dict):
        header = {**header, "body_size": len(raw), "body_sha256": hashlib.sha256(raw).hexdigest()}
    text = header_text if header_text is not None else json.dumps(header).encode()
    return text + b"\n" + raw


HEADER = {"format": FORMAT, "version": VERSION, "seq": 4, "count": 2, "tenants": 1}
LINE = ["acme", [["project:p1", [["member", ["user:alice", "group:eng#member"]]]]]]


@budget(150)
@given(data=st.data())
def test_snapshots_with_odd_headers_and_lines(data: st.DataObject) -> None:
    how = data.draw(st.sampled_from(["header", "header_text", "line", "line_text", "deep_header", "deep_line"]))
    header: Any = dict(HEADER)
    lines = [json.dumps(LINE).encode()]
    header_text = None
    if how == "header":
        header = data.draw(mutated(HEADER))
    elif how == "header_text":
        header_text = data.draw(json_text(HEADER)).encode("utf-8", "surrogatepass")
    elif how == "line":
        lines = [json.dumps(data.draw(st.one_of(mutated(LINE), json_values))).encode()]
    elif how == "line_text":
        lines = [data.draw(json_text(LINE)).encode("utf-8", "surrogatepass")]
    elif how == "deep_header":
        header_text = nested(data.draw(st.sampled_from([500, 2_000])))[:4000].encode()
    else:
        lines = [nested(data.draw(st.sampled_from([1_000, 10_000, 100_000]))).encode()]
    typed(index_from_snapshot_bytes, snapshot(header, lines, header_text=header_text))


def test_a_valid_snapshot_and_bundle_load() -> None:
    """The bases the mutations start from are accepted, so a refusal above is the mutation's."""
    assert index_from_snapshot_bytes(snapshot(dict(HEADER), [json.dumps(LINE).encode()])).count() == 2
    bundle = verify_bundle(archive([regular(n, c) for n, c in signed_files(base_files()).items()]), VERIFIER)
    assert bundle.revision == "7"

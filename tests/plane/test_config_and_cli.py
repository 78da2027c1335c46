"""Secrets kept only hashed, the plane CLI (init, serve against a dead NATS), and the client CLIs."""

from __future__ import annotations

import asyncio
import json
import socket
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tenantguard.errors import ConfigError
from tenantguard.identity.keys import SigningKey, write_private

from policy_plane.config import PlaneConfig, parse_join_secrets
from policy_plane.secrets import HashedSecret, SecretChecker
from tests.harness.paths import TENANTGUARD
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, JOIN_SECRET, World

# 120 s: test_relation_cli runs a dozen CLI processes; with -n 6 on a busy 2-core machine it took over 60 s
pytestmark = [pytest.mark.timeout(120)]


def _reachable_values(root: object) -> list[object]:
    """Every object reachable from ``root`` through attributes, slots, mappings and sequences."""
    seen: set[int] = set()
    out: list[object] = []
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, str | bytes | int | float | type(None)):
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                stack.append(getattr(obj, name))
        if hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.extend(vars(obj).values())
    return out


def test_the_plane_keeps_only_scrypt_hashes_of_secrets(tmp_path: Path) -> None:
    token_file, join_file = tmp_path / "admin.token", tmp_path / "billing.secret"
    write_private(token_file, ADMIN_TOKEN.encode())
    write_private(join_file, JOIN_SECRET.encode())
    config = PlaneConfig(nats_url="nats://127.0.0.1:1", event_key=SigningKey.generate(),
                         bundle_key=SigningKey.generate(), admin=SecretChecker.from_file(token_file),
                         join_secrets=parse_join_secrets([f"billing={join_file}"]))
    values = _reachable_values(config)
    for secret in (ADMIN_TOKEN, JOIN_SECRET):
        assert not any(isinstance(v, str | bytes) and secret.encode() in (v.encode() if isinstance(v, str) else v)
                       for v in values)
    hashed = config.join_secrets["billing"].hashed
    assert isinstance(hashed, HashedSecret) and len(hashed.salt) == 16 and len(hashed.digest) == 32
    assert JOIN_SECRET not in repr(config) and ADMIN_TOKEN not in repr(config)

    async def checks() -> list[bool]:
        checker = config.join_secrets["billing"]
        return [await checker.check(JOIN_SECRET), await checker.check(JOIN_SECRET), await checker.check("x" * 40)]

    assert asyncio.run(checks()) == [True, True, False]


def test_secret_files_must_be_private_and_long_enough(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.write_text(JOIN_SECRET)
    loose.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        SecretChecker.from_file(loose)
    short = tmp_path / "short"
    write_private(short, b"tiny")
    with pytest.raises(ConfigError, match="characters"):
        SecretChecker.from_file(short)
    with pytest.raises(ConfigError, match="SERVICE=FILE"):
        parse_join_secrets(["billing"])


def test_plane_init_writes_private_material(tmp_path: Path) -> None:
    target = tmp_path / "dev"
    done = subprocess.run([TENANTGUARD, "plane", "init", str(target), "--service", "billing"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    for path in (target / "event.pem", target / "bundle.pem", target / "admin.token",
                 target / "join-secrets" / "billing.secret"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert summary["event_key"]["kid"] == SigningKey.load(target / "event.pem").kid
    assert (target / "admin.token").read_text().strip() not in done.stdout
    again = subprocess.run([TENANTGUARD, "plane", "init", str(target)], capture_output=True, text=True, timeout=30)
    assert again.returncode == 1 and "refusing to overwrite" in again.stderr


def test_serve_fails_fast_and_typed_when_nats_is_down(world: World) -> None:
    args = [a if a != world.nats.url else "nats://127.0.0.1:1" for a in world.args()]
    done = subprocess.run([TENANTGUARD, "plane", "serve", *args, "--connect-timeout", "1"], capture_output=True,
                          text=True, timeout=45)
    assert done.returncode == 1
    assert "error unavailable: cannot connect to NATS" in done.stderr and "Traceback" not in done.stderr


def test_serve_on_a_taken_port_names_the_flag_to_change(world: World) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        port = str(holder.getsockname()[1])
        args = world.args()
        args[args.index("--port") + 1] = port
        done = subprocess.run([TENANTGUARD, "plane", "serve", *args], capture_output=True, text=True, timeout=45)
    finally:
        holder.close()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"error config_invalid: cannot listen on 127.0.0.1:{port}: another process is using it; stop that "
            "process, or choose another --port (0 picks a free one)") in done.stderr, done.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TENANTGUARD, *args], capture_output=True, text=True, timeout=45)


def test_relation_cli(world: World, plane: PlaneProcess) -> None:
    auth = ["--plane", plane.base_url, "--token-file", str(world.token_file)]
    written = _cli("relation", "write", "acme/group:eng#member@user:bob", "acme / project:p2#member @ group:eng#member",
                   *auth)
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout) == {"consistency_token": 1}
    allowed = _cli("relation", "check", "acme/project:p2#member@user:bob", *auth)
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["allowed"] is True
    listed: dict[str, Any] = json.loads(_cli("relation", "list", "--tenant", "acme", *auth).stdout)
    assert len(listed["relations"]) == 2
    assert _cli("relation", "delete", "acme/group:eng#member@user:bob", *auth).returncode == 0
    denied = _cli("relation", "check", "acme/project:p2#member@user:bob", *auth)
    assert denied.returncode == 1 and json.loads(denied.stdout) == {"allowed": False, "consistency_token": 2}
    bad = _cli("relation", "write", "acme/project:p1#member@user:", *auth)
    assert bad.returncode == 1 and "relationship_invalid" in bad.stderr
    wrong = tmp_token(world.root)
    refused = _cli("relation", "write", "acme/project:p1#member@user:a", "--plane", plane.base_url,
                   "--token-file", str(wrong))
    assert refused.returncode == 1 and "error forbidden" in refused.stderr


def test_revoke_cli_publishes_every_kind(world: World, plane: PlaneProcess) -> None:
    auth = ["--plane", plane.base_url, "--token-file", str(world.token_file)]
    commands = [["jti", "abc123", "--exp", "2000000000"], ["subject", "alice", "--tenant", "acme"],
                ["kid", "some-kid"], ["tenant", "globex"], ["lift-tenant", "globex"]]
    seqs = []
    for args in commands:
        done = _cli("revoke", *args, *auth)
        assert done.returncode == 0, done.stderr
        seqs.append(json.loads(done.stdout)["seq"])
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    with plane.client() as client:
        listed = client.get("/v1/revocations").json()
    assert [r["kind"] for r in listed["revocations"]][-5:] == ["jti", "subject", "kid", "tenant", "lift_tenant"]
    assert listed["revocations"][-4]["sub"] == "alice" and listed["revocations"][-4]["tenant"] == "acme"
    refused = _cli("revoke", "tenant", "acme", "--plane", plane.base_url, "--token-file", str(tmp_token(world.root)))
    assert refused.returncode == 1 and "error forbidden" in refused.stderr


def tmp_token(root: Path) -> Path:
    path = root / "wrong.token"
    path.write_text("not-the-admin-token-0123456789")
    return path


def test_bundle_publish_and_push_cli(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    from tests.harness.plane_bundles import bundle_dir

    auth = ["--plane", plane.base_url, "--token-file", str(world.token_file)]
    broken = bundle_dir(tmp_path / "broken", failing=True)
    refused = _cli("bundle", "publish", str(broken), *auth)
    assert refused.returncode == 1 and "test_bob_is_wrongly_expected" in refused.stderr
    assert plane.client().get("/v1/bundles").json()["scopes"] == []  # refused locally: nothing uploaded

    good = bundle_dir(tmp_path / "good")
    published = _cli("bundle", "publish", str(good), *auth)
    assert published.returncode == 0, published.stderr
    assert json.loads(published.stdout)["signed_by_plane"] is True

    old = tmp_path / "old.tar.gz"
    assert _cli("bundle", "build", str(good), "-o", str(old), "--serial", "1",
                "--signing-key", str(world.bundle_key_file)).returncode == 0
    rollback = _cli("bundle", "push", str(old), *auth)
    assert rollback.returncode == 1 and "bundle_rollback" in rollback.stderr

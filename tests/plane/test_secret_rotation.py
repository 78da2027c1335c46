"""Rotating the admin token, the operator token or a join secret without restarting a replica.

Before: the plane read each secret file once, so a leaked admin token kept working until every
replica restarted. Now a secret file may hold the new and the old secret (one per line) while
clients move, and the plane looks at it again at most once a second: a secret removed from the
file stops working there and then (remembered successes included), and console sessions signed
in under it end. Real files, real scrypt, a real plane process.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from tenantguard.identity.keys import write_private

from policy_plane.secrets import MAX_SECRETS_PER_FILE, RELOAD_INTERVAL, HashedSecret, SecretChecker
from tests.harness.console import sign_in
from tests.harness.plane_world import ADMIN_TOKEN, World

OLD, NEW = "old-secret-" + "0" * 20, "new-secret-" + "1" * 20


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _checker(path: Path, *secrets: str) -> tuple[SecretChecker, Clock]:
    write_private(path, "\n".join(secrets).encode())
    clock = Clock()
    return SecretChecker.from_file(path, clock=clock), clock


def _rewrite(path: Path, *secrets: str, clock: Clock) -> None:
    write_private(path, "\n".join(secrets).encode())
    clock.now += RELOAD_INTERVAL + 0.1


def test_a_rotated_file_takes_the_new_secret_and_drops_the_old_one_at_once(tmp_path: Path) -> None:
    checker, clock = _checker(tmp_path / "admin.token", OLD)
    assert asyncio.run(checker.check(OLD)) and checker.known(OLD)  # remembered: no scrypt next time
    _rewrite(tmp_path / "admin.token", NEW, clock=clock)
    assert not checker.known(OLD)  # the remembered success is forgotten as soon as the change is seen
    assert asyncio.run(checker.check(OLD)) is False
    assert asyncio.run(checker.check(NEW)) is True
    assert (checker.generation, checker.reload_error) == (1, None)


def test_a_check_running_when_the_file_changed_is_decided_again_on_the_new_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check whose scrypt ran on the old secrets while the file changed: remembered, it would have
    let the removed secret through until the memory filled up."""
    path = tmp_path / "admin.token"
    checker, clock = _checker(path, OLD)
    real = HashedSecret.matches
    rotated: list[bool] = []

    def rotating(self: HashedSecret, presented: str) -> bool:  # the real scrypt; the file changes during it
        if not rotated:
            rotated.append(True)
            write_private(path, NEW.encode())
            clock.now += RELOAD_INTERVAL + 0.1
            checker.known("another-request-" + "x" * 16)  # another request sees the change meanwhile
        return real(self, presented)

    monkeypatch.setattr(HashedSecret, "matches", rotating)
    assert asyncio.run(checker.check(OLD)) is False
    assert not checker.known(OLD) and asyncio.run(checker.check(NEW)) is True


def test_the_file_is_looked_at_once_per_interval(tmp_path: Path) -> None:
    checker, clock = _checker(tmp_path / "admin.token", OLD)
    assert asyncio.run(checker.check(OLD))
    write_private(tmp_path / "admin.token", NEW.encode())
    clock.now += RELOAD_INTERVAL / 2
    assert checker.known(OLD)  # not looked at yet: a stat at most once per interval
    clock.now += RELOAD_INTERVAL
    assert not checker.known(OLD)


def test_during_a_rotation_both_secrets_count(tmp_path: Path) -> None:
    checker, clock = _checker(tmp_path / "admin.token", OLD)
    _rewrite(tmp_path / "admin.token", NEW, "", OLD, clock=clock)  # blank lines are ignored
    assert asyncio.run(checker.check(NEW)) and asyncio.run(checker.check(OLD))
    _rewrite(tmp_path / "admin.token", NEW, clock=clock)
    assert asyncio.run(checker.check(NEW)) and not asyncio.run(checker.check(OLD))
    assert checker.generation == 2


@pytest.mark.parametrize("slip", ["readable by others", "removed", "a short secret", "too many secrets"])
def test_a_change_that_cannot_be_taken_keeps_the_secrets_and_says_why(tmp_path: Path, slip: str) -> None:
    path = tmp_path / "admin.token"
    checker, clock = _checker(path, OLD)
    if slip == "readable by others":
        path.write_text(NEW)
        path.chmod(0o644)
    elif slip == "removed":
        path.unlink()
    elif slip == "a short secret":
        write_private(path, b"short")
    else:
        write_private(path, "\n".join(f"{NEW}-{i}" for i in range(MAX_SECRETS_PER_FILE + 1)).encode())
    clock.now += RELOAD_INTERVAL + 0.1
    assert asyncio.run(checker.check(OLD)) is True  # an operator is not locked out by a slip
    assert asyncio.run(checker.check(NEW)) is False
    assert checker.generation == 0 and checker.reload_error, checker.reload_error


def test_a_replica_takes_a_rotated_admin_token_without_a_restart(world: World) -> None:
    plane = world.start()
    browser, signed = sign_in(plane, ADMIN_TOKEN)
    assert signed.status_code == 303 and browser.get("/console/").status_code == 200

    def status(token: str) -> int:
        return httpx.get(f"{plane.base_url}/v1/relations/digest", headers={"Authorization": f"Bearer {token}"},
                         timeout=10).status_code

    assert (status(ADMIN_TOKEN), status(NEW)) == (200, 403)
    write_private(world.token_file, f"{NEW}\n{ADMIN_TOKEN}\n".encode())  # both while clients move
    deadline = time.monotonic() + 30
    while status(NEW) != 200:
        assert time.monotonic() < deadline, "the new token was never taken"
        time.sleep(0.2)
    assert status(ADMIN_TOKEN) == 200
    write_private(world.token_file, f"{NEW}\n".encode())  # the old one out
    while status(ADMIN_TOKEN) != 403:
        assert time.monotonic() < deadline, "the old token kept working"
        time.sleep(0.2)
    assert status(NEW) == 200
    assert plane.status()["secrets"]["admin"] == {"generation": 2, "reload_error": None}
    ended = browser.get("/console/")  # the session signed in with the token now rotated out
    assert ended.status_code in (302, 303, 307) and "/console/login" in ended.headers["location"]
    assert plane.proc.poll() is None  # never restarted

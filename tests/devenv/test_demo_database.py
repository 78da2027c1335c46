"""The demo's PostgreSQL step: a DSN the user set fails loudly, only the default may be skipped.

A dead server is a real one that refuses: 127.0.0.1 port 1 (nothing listens there).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from tenantguard.devenv.demo import run_demo
from tenantguard.devenv.pgdemo import shown_dsn, strip_password

from tests.harness.leftovers import processes_mentioning

from .conftest import broken_bundle

DEAD_DSN = "host=127.0.0.1 port=1 user=postgres password=hunter2 dbname=test connect_timeout=2"
PG_STEP = "PostgreSQL: unique schema, non-superuser role, row-level security (RLS)"


@pytest.mark.parametrize("how", ["environment", "flag"])
def test_a_dsn_the_user_set_fails_the_demo_and_hides_the_password(tmp_path: Path, how: str) -> None:
    run_dir = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if k != "TG_DEMO_PG_DSN"}
    args = [sys.executable, "-m", "tenantguard.devenv", "demo", "--dir", str(run_dir)]
    if how == "environment":
        env["TG_DEMO_PG_DSN"] = DEAD_DSN
    else:
        args += ["--pg-dsn", DEAD_DSN]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert f"✗ {PG_STEP}" in out and f"✓ {PG_STEP}" not in out, out
    flat = " ".join(out.split())
    assert "RESULT: demo failed (demo_database_unavailable: no PostgreSQL reachable at" in flat, out
    assert "host=127.0.0.1 port=1" in flat and "user=postgres" in flat, out
    assert "TG_DEMO_PG_DSN" in flat and "--no-pg" in flat, out
    assert "hunter2" not in out
    assert processes_mentioning(str(run_dir)) == []


@pytest.mark.nats
def test_the_default_dsn_may_be_skipped_but_is_never_marked_done(tmp_path: Path) -> None:
    """What ``tenantguard demo`` does with no DSN set (``pg_required=False``), against a dead default.

    The run stops right after (a bundle that does not compile), which is all this needs to see.
    """
    buffer = io.StringIO()
    console = Console(file=buffer, width=300, emoji=False, highlight=False)
    run_dir = tmp_path / "demo"
    status = run_demo(console, root=run_dir, keep=True, pg_dsn=DEAD_DSN, bundle_dir=broken_bundle(tmp_path),
                      pg_required=False)
    out = buffer.getvalue()
    assert status == 1 and "bundle does not compile" in out, out  # the bundle, not the database, ended the run
    line = next(line for line in out.splitlines() if PG_STEP in line)
    assert line.startswith(f"- {PG_STEP}: skipped (no PostgreSQL reachable at"), line
    assert "the default DSN" in line and "hunter2" not in out
    assert "✓ PostgreSQL" not in out and "✗ PostgreSQL" not in out
    assert processes_mentioning(str(run_dir)) == []


@pytest.mark.parametrize(("dsn", "shown"), [
    ("host=db port=5432 user=app password=s3cret dbname=test", "host=db port=5432 user=app dbname=test"),
    ("host=db password='a b\\'c' user=app", "host=db user=app"),
    ("postgresql://app:s3cret@db:5433/test?sslmode=require", "postgresql://app@db:5433/test?sslmode=require"),
    ("postgresql://app@db/test?password=s3cret&sslmode=require", "postgresql://app@db/test?sslmode=require"),
    ("postgresql://app@db/test?sslmode=require&password=s3cret", "postgresql://app@db/test?sslmode=require"),
])
def test_dsns_are_shown_without_their_password(dsn: str, shown: str) -> None:
    assert strip_password(dsn) == shown  # the fallback when psycopg cannot parse it
    with_psycopg = shown_dsn(dsn)
    assert "s3cret" not in with_psycopg and "a b" not in with_psycopg
    assert "db" in with_psycopg and "app" in with_psycopg

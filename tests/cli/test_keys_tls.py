"""``tenantguard keys tls``: a dev CA and a plane certificate that a real TLS server and the SDK
client accept as they are written, keys 0600, nothing secret printed, nothing overwritten unasked."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from tenantguard.client.plane import PlaneClient
from tenantguard.errors import PlaneTlsRefused
from tenantguard.util.httptls import ServerTls

from tests.harness.tls_server import Served

CLI = Path(sys.executable).with_name("tenantguard")


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=60, check=False)


def test_minted_files_serve_mutual_tls_and_keys_are_private(tmp_path: Path) -> None:
    out = tmp_path / "tls"
    made = run("keys", "tls", "--out", out, "--host", "127.0.0.1", "--host", "localhost", "--client", "admin")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert "PRIVATE KEY" not in made.stdout + made.stderr
    keys = [out / "ca.key", out / "plane.key", out / "client-admin.key"]
    assert [stat.S_IMODE(k.stat().st_mode) for k in keys] == [0o600] * 3
    assert summary["plane_flags"][-2:] == ["--tls-client-ca", str(out / "ca.pem")]

    served = Served(ServerTls(out / "plane.pem", out / "plane.key", client_ca_file=out / "ca.pem"))
    try:
        url = f"https://127.0.0.1:{served.port}"
        admin = summary["clients"]["admin"]
        with PlaneClient(url, ca=summary["ca"], client_cert=admin["cert"], client_key=admin["key"]) as client:
            assert client.status()["scheme"] == "https"
        with PlaneClient(f"https://localhost:{served.port}", ca=summary["ca"], client_cert=admin["cert"],
                         client_key=admin["key"]) as client:
            assert client.status()["scheme"] == "https"  # every --host is named
        with PlaneClient(url, retry_for=0) as client, pytest.raises(PlaneTlsRefused):
            client.status()  # a private CA: nothing trusts it unless told
    finally:
        served.stop()


def test_existing_files_are_not_overwritten_without_force(tmp_path: Path) -> None:
    assert run("keys", "tls", "--out", tmp_path, "--host", "localhost").returncode == 0
    before = (tmp_path / "plane.key").read_bytes()
    again = run("keys", "tls", "--out", tmp_path, "--host", "localhost")
    assert again.returncode == 2 and "--force" in again.stderr
    assert (tmp_path / "plane.key").read_bytes() == before
    assert run("keys", "tls", "--out", tmp_path, "--host", "localhost", "--force").returncode == 0
    assert (tmp_path / "plane.key").read_bytes() != before


def test_a_host_that_is_no_name_is_refused(tmp_path: Path) -> None:
    refused = run("keys", "tls", "--out", tmp_path, "--host", "https://plane:8443")
    assert refused.returncode == 1 and "neither an IP address nor a DNS name" in refused.stderr, refused.stderr
    assert not list(tmp_path.iterdir())  # nothing written, not even the CA

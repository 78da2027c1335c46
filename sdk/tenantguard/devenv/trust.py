"""How a sidecar's exchange key gets into everyone's trust set: the one switch.

The design: each sidecar generates its key locally and registers the public half with
the plane using its service's join secret; the plane publishes the trust set on NATS and
every sidecar follows it. Two ways to get there, picked once per run:

* the sidecar registers itself (``sidecar serve --plane-url URL --join-secret-file FILE``,
  when the installed sidecar has those flags);
* otherwise this orchestrator does the same thing on the sidecar's behalf: it reads the
  sidecar's public key from ``GET /v1/keys`` and registers it with the plane using that
  service's join secret.

Why not per-sidecar trust files: a trust update from the plane *replaces* a sidecar's
whole trust set (``TrustFollower``), so file-only keys vanish the moment anything is
registered, or at start when the dev folder's JetStream already holds a trust set; and a
trust file is only read at start, so building them means starting every sidecar twice.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from tenantguard.client.plane import PlaneClient
from tenantguard.devenv.procs import tenantguard_command

SELF_REGISTRATION_FLAGS: Final = ("--plane-url", "--join-secret-file")


def sidecar_registers_itself() -> bool:
    """True when the installed ``sidecar serve`` has the self-registration flags (asked via ``--help``)."""
    try:
        out = subprocess.run([*tenantguard_command(), "sidecar", "serve", "--help"], capture_output=True, text=True,
                             timeout=30, env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return all(flag in out.stdout for flag in SELF_REGISTRATION_FLAGS)


@dataclass(frozen=True, slots=True)
class KeyRegistration:
    """The chosen way; ``sidecar_args`` goes on each sidecar's command line, ``after_start`` runs once."""

    self_registering: bool

    @property
    def mode(self) -> str:
        if self.self_registering:
            return "each registered its public key with the plane, which passes it to every sidecar"
        return "the demo registered each public key with the plane for its sidecar, which passes it to every sidecar"

    def sidecar_args(self, plane_url: str, join_secret_file: Path) -> list[str]:
        if not self.self_registering:
            return []
        return [SELF_REGISTRATION_FLAGS[0], plane_url, SELF_REGISTRATION_FLAGS[1], str(join_secret_file)]

    def after_start(self, plane_url: str, sidecars: Mapping[str, tuple[str, Path]]) -> None:
        """Register every sidecar's key (``service -> (sidecar URL, join secret file)``) unless they do it."""
        if self.self_registering:
            return
        for service, (sidecar_url, secret_file) in sidecars.items():
            jwks = httpx.get(f"{sidecar_url}/v1/keys", timeout=5.0).raise_for_status().json()
            secret = secret_file.read_text().strip()
            with PlaneClient(plane_url, token=secret, service=service) as plane:
                for jwk in jwks["keys"]:
                    public = {k: v for k, v in jwk.items() if k != "iss"}  # the plane sets the issuer itself
                    plane.register_sidecar_key(service, public)

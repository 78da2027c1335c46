"""The files a sidecar is started from: relations, a bundle archive, the exchange's key and secrets.

Why a module of its own: reading and checking files (sizes bounded, a folder given for an
archive refused with the command that builds one) is a different concern from serving, and
``Sidecar.from_config`` is its only caller; every failure is one ``ConfigError`` line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tenantguard.errors import ConfigError, InvalidInput
from tenantguard.exchange import load_or_create_signing_key, read_client_secret
from tenantguard.identity.oidc import EdgeConfig
from tenantguard.relations import RelationIndex, Relationship

from .config import SidecarConfig

MAX_RELATIONS_FILE = 64 * 1024 * 1024


def exchange_settings(config: SidecarConfig) -> dict[str, Any]:
    """The exchange's files: signing key (kept 0600 under state_dir), client secret, edge config."""
    secret_file, edge_file = config.exchange_client_secret_file, config.edge_config
    return {
        "exchange_key": load_or_create_signing_key(config.state_dir),
        "client_secret": read_client_secret(secret_file) if secret_file is not None else None,
        "edge_config": EdgeConfig.load(edge_file) if edge_file is not None else None,
    }


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


def read_bundle_file(path: Path) -> bytes:
    """The ``--bundle`` archive. A bundle's source folder (the natural first guess) is refused with
    the command that builds the archive, not a bare "Is a directory"."""
    if path.is_dir():
        raise ConfigError(f"--bundle {path} is a folder; --bundle takes a built, signed archive: `tenantguard "
                          f"bundle build {path} -o bundle.tar.gz --signing-key KEY` makes one, and "
                          "--bundle-key KEY.pub verifies it")
    return _read_file(path)


def load_relations_file(path: Path) -> RelationIndex:
    """A local relations file (until the plane feeds the sidecar):
    ``{"seq": N, "relationships": ["acme/project:p1#member@user:alice", ...]}``."""
    if path.stat().st_size > MAX_RELATIONS_FILE:
        raise ConfigError(f"relations file {path} exceeds {MAX_RELATIONS_FILE} bytes")
    try:
        doc = json.loads(_read_file(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"relations file {path} is not JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("relationships"), list):
        raise ConfigError('relations file must be {"seq": N, "relationships": [...]}')
    seq = doc.get("seq", 0)
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise ConfigError("relations file 'seq' must be a non-negative integer")
    tuples = []
    for i, item in enumerate(doc["relationships"]):
        try:
            rel = Relationship.parse(item) if isinstance(item, str) else Relationship.from_wire(item)
        except (InvalidInput, TypeError, AttributeError) as exc:
            raise ConfigError(f"relations file entry {i}: {exc}") from None
        tuples.append((rel.tenant, rel.object, rel.relation, rel.subject))
    return RelationIndex.from_trusted(seq, tuples)

"""``tenantguard dev --reset``: a dev folder's state removed before the run starts; its keys kept.

Removed: everything a run reads back that would make it differ from a first run::

    nats/       the embedded nats-server's JetStream store: all of the plane's state (relationships,
                bundles and rollouts, trust, revocations, decision logs, audit); the plane keeps
                nothing on disk besides its keys
    sidecars/   each sidecar's state dir (persisted relations, last good bundle, feed positions,
                its exchange key: a new one is registered with the plane at start)
    logs/       the children's logs
    pids.json, dev.env   the previous run's PIDs and addresses

Kept: the credentials, which hold no state and which other shells and files point at
(``TG_PLANE_TOKEN_FILE``, the ``secrets`` link of docs/operations.md, bundles signed with
``bundle.pem``, tokens minted with ``dev-issuer.pem``)::

    plane/      event and bundle keys, admin token, join secrets, plane init's NATS identities
    nats-auth/  the nkey seeds of the embedded nats-server's users
    dev-issuer.pem (+ .pub), dev.lock

New keys and token: delete the whole folder instead. Only a dev folder is reset: one holding
``dev.lock`` (every ``dev`` and ``demo --dir`` writes it first), or an empty or absent one;
anything else is refused before the folder lock (which would create ``dev.lock``) is taken,
so a wrong ``--dir`` loses nothing. Inside a dev folder only the entries above are removed
(a symlink among them is unlinked, never followed); files of other origin stay.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

from tenantguard.devenv.envfile import ENV_FILE
from tenantguard.devenv.folderlock import LOCK_FILE, PIDS_FILE
from tenantguard.errors import ConfigError

STATE_ENTRIES: Final = ("nats", "sidecars", "logs", PIDS_FILE, ENV_FILE)
KEPT_ENTRIES: Final = ("plane", "nats-auth", "dev-issuer.pem", "dev-issuer.pem.pub", LOCK_FILE)
_SHOWN_ENTRIES: Final = 8


def check_resettable(root: Path, *, external_nats: bool) -> None:
    """Raise :class:`ConfigError` unless ``--reset`` may clear ``root``; call before taking the folder lock."""
    if external_nats:
        raise ConfigError("--reset with --nats: the plane's state (relationships, bundles, trust, revocations) "
                          "lives in that server's JetStream streams, which --reset does not touch, so the run "
                          "would not start fresh; leave out --nats (dev's own nats-server keeps its store in the "
                          "dev folder), or purge the TG_* streams on that server and remove the dev folder yourself")
    if not root.exists() and not root.is_symlink():
        return
    if not root.is_dir():
        raise ConfigError(f"--reset --dir {root}: not a folder; --reset removes only what tenantguard dev "
                          "wrote in its dev folder")
    entries = sorted(p.name for p in root.iterdir())
    if not entries or _holds_our_lock(root):
        return
    shown = ", ".join(entries[:_SHOWN_ENTRIES]) + (", …" if len(entries) > _SHOWN_ENTRIES else "")
    raise ConfigError(f"--reset --dir {root}: not a dev folder (it has no {LOCK_FILE}, which every tenantguard "
                      f"dev writes, and it holds {shown}); --reset removes a dev folder's state, so nothing was "
                      "removed: give the dev folder with --dir (default .tenantguard)")


def _holds_our_lock(root: Path) -> bool:
    """``dev.lock`` as :mod:`.folderlock` writes it: a regular file, empty or a pid."""
    lock = root / LOCK_FILE
    if lock.is_symlink() or not lock.is_file():
        return False
    try:
        text = lock.read_text(errors="replace").strip()
    except OSError:
        return False
    return text == "" or text.isdigit()


def reset_folder(root: Path) -> list[str]:
    """Remove the state entries of ``root`` (see the module docstring); return the names removed.

    Call with the folder lock held, after :func:`check_resettable`: no run is using the folder then.
    """
    removed = []
    for name in STATE_ENTRIES:
        path = root / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            continue
        removed.append(name)
    return removed

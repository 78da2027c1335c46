"""``tenantguard bundle``: author policy bundles (``authoring``: test, build, sign, verify, inspect,
eval, impact) and publish them to the policy plane (``plane``: push, publish, rollback,
shadow-stop, rollout). Both register on one Typer group, :data:`app`.
"""

from . import authoring, plane
from .group import app

__all__ = ["app", "authoring", "plane"]

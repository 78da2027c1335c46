"""``python -m tenantguard.devenv dev|demo``: the same commands without the entry point."""

from tenantguard.devenv.cli import app

app(prog_name="python -m tenantguard.devenv")

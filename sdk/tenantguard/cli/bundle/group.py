"""The ``tenantguard bundle`` Typer group; ``authoring`` and ``plane`` register their commands on it."""

from __future__ import annotations

import typer

app = typer.Typer(
    help=(
        "Build, sign, verify, test and inspect OPA-compatible policy bundles, and publish them to the plane.\n\n"
        "A bundle directory holds *.rego modules, data.json files and an optional .manifest "
        "(see bundles/tenantguard). Typical flow: `bundle test DIR`, then "
        "`bundle build DIR -o bundle.tar.gz --signing-key KEY`, then "
        "`bundle verify bundle.tar.gz --key KEY.pub`."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

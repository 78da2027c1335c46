"""``tenantguard bundle`` commands that talk to the policy plane: push, publish, rollback,
shadow-stop and rollout.

Exit codes: 0 success; 1 refused or failed; 2 bad usage; 3 the plane committed the step but
a scope's announce failed (named on stderr; a scripted rollout must not read that as done).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from tenantguard.bundle import SIGNATURES_FILE, build_bundle, read_archive
from tenantguard.bundle.content import parse_contents
from tenantguard.cli.common import (
    PlaneOpt,
    TokenFileOpt,
    console,
    console_err,
    print_json,
)
from tenantguard.cli.options import NO_PLANE_TLS, PlaneTlsOptions, option_groups

from .group import app
from .shared import RevisionOpt, SkipTestsOpt, gate_on_tests, given_revision
from .status import render_status

StagesOpt = Annotated[str | None, typer.Option(
    help="Staged rollout: scopes per stage, stages separated by ';' (e.g. 'billing;orders,reports;all'); only "
         "the first stage is announced now; `bundle rollout advance ID` announces the next")]
class ImpactMode(StrEnum):
    off = "off"
    report = "report"
    enforce = "enforce"


class RolloutAction(StrEnum):
    status = "status"
    advance = "advance"
    halt = "halt"
    resume = "resume"
    abort = "abort"


ImpactOpt = Annotated[ImpactMode | None, typer.Option(
    help="Have the plane replay its decision sample against the bundle first: report the flips, or enforce "
         "(refused with impact_undeclared_flips when undeclared flips exceed --max-undeclared)")]
MaxUndeclaredOpt = Annotated[int | None, typer.Option(min=0, help="With --impact enforce: flips tolerated")]
ShadowOpt = Annotated[bool, typer.Option(
    "--shadow", help="Announce as a shadow: sidecars evaluate it beside the active bundle (never activating it) "
    "and report disagreements (`bundle rollout status`); end it with `bundle shadow-stop`")]
SampleRateOpt = Annotated[float | None, typer.Option(min=0.0, max=1.0, help="With --shadow: share of decisions "
                                                     "judged (default 1)")]
MaxPerSecondOpt = Annotated[int | None, typer.Option(min=1, max=1000, help="With --shadow: judged decisions "
                                                       "per second and sidecar, at most (default 50)")]


def _check_step_options(*, shadow: bool, sample_rate: float | None, max_per_second: int | None,
                        impact: ImpactMode | None, max_undeclared: int | None) -> None:
    """Options that only mean something beside another one are refused without it: a
    ``--sample-rate 0.5`` meant for a shadow, given without ``--shadow``, used to be dropped and the
    bundle published to every sidecar as the active one."""
    if not shadow and (sample_rate is not None or max_per_second is not None):
        given = "--sample-rate" if sample_rate is not None else "--max-per-second"
        raise typer.BadParameter(f"{given} sets how a shadow is judged: add --shadow (without it the bundle "
                                 "would be published as the active one)", param_hint=given)
    if max_undeclared is not None and impact is not ImpactMode.enforce:
        raise typer.BadParameter("--max-undeclared is the tolerance of --impact enforce: add it",
                                 param_hint="--max-undeclared")


@app.command()
@option_groups
def push(
    archive: Annotated[Path, typer.Argument(help="A built bundle archive (signed, or unsigned for the plane to sign)",
                                            metavar="FILE", exists=True, dir_okay=False, readable=True)],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    stages: StagesOpt = None,
    impact: ImpactOpt = None,
    max_undeclared: MaxUndeclaredOpt = None,
    shadow: ShadowOpt = False,
    sample_rate: SampleRateOpt = None,
    max_per_second: MaxPerSecondOpt = None,
    skip_tests: SkipTestsOpt = False,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Test a bundle archive, then upload it to the policy plane, which announces it to the sidecars.

    Runs the Rego tests the archive carries first and uploads nothing when one fails or errors,
    or when there are none (error policy_tests_failed). The plane runs them again before it
    publishes. --skip-tests skips both, and the plane's audit log records tests_skipped.
    A signed archive must verify against the plane's bundle key.
    An unsigned one is compiled, tested and signed by the plane.
    The plane refuses an older serial (bundle_rollback, HTTP 409).
    Prints the plane's answer as JSON (revision, serial, scopes); exit 1 on refusal,
    3 when it was committed but a scope's announce failed (named on stderr).
    """
    from tenantguard.cli.relation import read_token
    from tenantguard.client.plane import PlaneClient

    _check_step_options(shadow=shadow, sample_rate=sample_rate, max_per_second=max_per_second, impact=impact,
                        max_undeclared=max_undeclared)
    token = read_token(token_file)
    content = archive.read_bytes()
    files = read_archive(content)  # as it is, unverified: only its tests run here, the plane verifies
    files.pop(SIGNATURES_FILE, None)
    carried = parse_contents(files)
    gate_on_tests(dict(carried.modules), dict(carried.data), skip=skip_tests, what="nothing was uploaded")
    with PlaneClient(plane, token=token, **tls.client_args()) as client:
        _print_step(client.push_bundle(content, stages=stages, impact=impact and impact.value,
                                       max_undeclared=max_undeclared, shadow=shadow, sample_rate=sample_rate,
                                       max_per_second=max_per_second, skip_tests=skip_tests))


@app.command()
@option_groups
def publish(
    directory: Annotated[Path, typer.Argument(help="A bundle source directory", metavar="DIR", exists=True,
                                              file_okay=False, readable=True)],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    revision: RevisionOpt = None,
    stages: StagesOpt = None,
    impact: ImpactOpt = None,
    max_undeclared: MaxUndeclaredOpt = None,
    shadow: ShadowOpt = False,
    sample_rate: SampleRateOpt = None,
    max_per_second: MaxPerSecondOpt = None,
    skip_tests: SkipTestsOpt = False,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Test DIR locally, build it unsigned and upload it for the plane to test again and sign.

    Stops before uploading when a Rego test fails or errors (listing them), or when none exist.
    --skip-tests skips both runs, and the plane's audit log records tests_skipped.
    metadata.serial is set to now in ms, so a newer publish always orders after an older one.
    The revision is --revision as given, else DIR/.manifest's revision and 12 hex digits of the
    content's digest, as `bundle build` names it: changed content is a new revision, and the same
    content published again is reported unchanged.
    Prints the plane's answer as JSON; exit 1 on any failure, 3 when the plane committed it
    but a scope's announce failed (named on stderr).
    """
    from tenantguard.cli.relation import read_token
    from tenantguard.client.plane import PlaneClient
    from tenantguard.policy.testrunner import load_bundle_dir

    _check_step_options(shadow=shadow, sample_rate=sample_rate, max_per_second=max_per_second, impact=impact,
                        max_undeclared=max_undeclared)
    token = read_token(token_file)
    revision = given_revision(directory, revision)
    gate_on_tests(*load_bundle_dir(directory), skip=skip_tests, what="nothing was uploaded", directory=directory)
    archive = build_bundle(directory, revision)
    with PlaneClient(plane, token=token, **tls.client_args()) as client:
        _print_step(client.push_bundle(archive, stages=stages, impact=impact and impact.value,
                                       max_undeclared=max_undeclared, shadow=shadow, sample_rate=sample_rate,
                                       max_per_second=max_per_second, skip_tests=skip_tests))


@app.command()
@option_groups
def rollback(
    scope: Annotated[str, typer.Option(help="The scope to roll back: 'all' or a service name")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    to: Annotated[str | None, typer.Option(
        help="The revision to return to (one published to SCOPE); default: the one the active revision replaced")
    ] = None,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Return SCOPE to an earlier revision in one step.

    The plane announces the old content again as a NEW revision (<old>.rollback.<serial>)
    with a newer serial, signed again: sidecars activate it like any publish, and still
    refuse any replayed old announce. Prints the plane's answer; exit 1 when there is
    nothing to return to (rollback_target_missing) or on any other refusal.
    """
    from tenantguard.cli.relation import read_token
    from tenantguard.client.plane import PlaneClient

    with PlaneClient(plane, token=read_token(token_file),
                     **tls.client_args()) as client:
        print_json(client.rollback_bundle(scope, to))


@app.command("shadow-stop")
@option_groups
def shadow_stop(
    scope: Annotated[str, typer.Option(help="The scope whose shadow ends: 'all' or a service name")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """End a scope's shadow evaluation (announced with `publish --shadow`)."""
    from tenantguard.cli.relation import read_token
    from tenantguard.client.plane import PlaneClient

    with PlaneClient(plane, token=read_token(token_file),
                     **tls.client_args()) as client:
        print_json(client.stop_shadow(scope))


@app.command()
@option_groups
def rollout(
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    action: Annotated[RolloutAction, typer.Argument(metavar="ACTION", help="status (default), or a step of the "
                                                    "current rollout")] = RolloutAction.status,
    rollout_id: Annotated[str | None, typer.Argument(metavar="ID", help="The rollout (from status); "
                                                     "needed for every step")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="status: the plane's full answer as JSON")] = False,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Show or drive the staged rollout started by `publish --stages` / `push --stages`.

    status: tables of the rollout, the active revision of every scope, which sidecar runs which
    revision, running shadows and scopes the reconciler cannot reach; --json prints the plane's
    full answer (GET /v1/rollouts).
    advance: announce the next stage; halt: stop advancing until resume; abort: end it where it is.
    Exit 3 when a step was committed but a scope's announce failed (named on stderr).
    """
    from tenantguard.cli.relation import read_token
    from tenantguard.client.plane import PlaneClient

    step = action.value
    if step != "status" and rollout_id is None:
        raise typer.BadParameter(f"{step} needs the rollout ID (see `bundle rollout status`)", param_hint="ID")
    with PlaneClient(plane, token=read_token(token_file),
                     **tls.client_args()) as client:
        if step != "status":
            _print_step(client.rollout(rollout_id, step))
            return
        answer = client.rollout(None, None)
    if as_json:
        print_json(answer)
        return
    for text in render_status(answer):
        console.print(escape(text), soft_wrap=True, highlight=False)



UNANNOUNCED_EXIT = 3  # the plane committed the step, but a scope's announce failed (see _print_step)


def _print_step(answer: dict[str, Any]) -> None:
    """Print the plane's answer to a publish or rollout step; exit 3 when it was committed but a
    scope's announce failed (a scripted rollout must not read that as done), naming each scope and
    whether the plane's reconciler announces it later (``will_retry``) or never (a newer bundle holds it)."""
    print_json(answer)
    scopes = answer.get("scopes")
    failed = [s for s in scopes if isinstance(s, dict) and "error" in s] if isinstance(scopes, list) else []
    for entry in failed:
        error = entry["error"]
        later = ("the plane retries it" if error.get("will_retry")
                 else "not retried: the scope keeps the bundle it has")
        console_err.print(f"[yellow]not announced[/] {escape(str(entry.get('scope')))}: "
                          f"{escape(str(error.get('code')))}: {escape(str(error.get('message')))} ({later})",
                          soft_wrap=True, highlight=False)
    if failed:
        raise typer.Exit(UNANNOUNCED_EXIT)

"""``tenantguard bundle`` authoring commands, which need no plane: test, build, sign, verify,
inspect, eval and the offline impact replay.

Exit codes: 0 success; 1 the bundle, a key or a test failed (a typed error is printed as
``error <code>: ...``); 2 bad usage (click's own code). ``eval`` exits 1 when the query is
undefined (it prints ``undefined``); a defined ``false`` or a deny decision exits 0.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from tenantguard.bundle import (
    SIGNATURES_FILE,
    Bundle,
    PublicKeyVerifier,
    TrustSetVerifier,
    Verifier,
    build_bundle,
    inspect,
    read_archive,
    sign_bundle,
    verify_bundle,
)
from tenantguard.bundle.content import parse_contents
from tenantguard.cli.common import console, console_err, print_json, shown_message
from tenantguard.errors import BundleRejected
from tenantguard.identity.keys import SigningKey, TrustSet, load_public_key_file

from .group import app
from .shared import RevisionOpt, SkipTestsOpt, gate_on_tests, given_revision, line, run_schema_tests

# The local keys given with --key go into an ad hoc trust set under this issuer name.
_LOCAL_ISSUER = "tenantguard-cli"

ArchiveArg = Annotated[
    Path, typer.Argument(help="A bundle archive (.tar.gz)", metavar="FILE", exists=True, dir_okay=False, readable=True)
]
DirArg = Annotated[
    Path, typer.Argument(help="A bundle source directory", metavar="DIR", exists=True, file_okay=False, readable=True)
]
KeyOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--key",
        metavar="PUB",
        help="Public (or private) key, PEM; repeat to accept any of several keys",
        exists=True,
        dir_okay=False,
    ),
]
TrustOpt = Annotated[
    Path | None,
    typer.Option(
        help="Trust file (JWKS with 'iss' per key); the key is picked by the bundle's kid", exists=True, dir_okay=False
    ),
]
IssuerOpt = Annotated[str | None, typer.Option(help="With --trust: only accept keys trusted for this issuer")]

# --------------------------------------------------------------------------- test


@app.command("test")
def test_cmd(
    directory: DirArg,
    coverage: Annotated[bool, typer.Option("--coverage", help="Report line coverage of every module")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v",
                                          help="List every test (PASS lines too) with its print() output")] = False,
    run: Annotated[
        str | None,
        typer.Option(help="Only run tests whose name (data.pkg.test_x) matches this regular expression"),
    ] = None,
) -> None:
    """Run the bundle's Rego unit tests (rules named test_*), as `opa test -v` does, and its
    schema's test files (DIR/*.fga.yaml, DIR/*.zed.yaml), as `tenantguard model test` does.

    Prints one FAIL or ERROR line per test that did not pass, then "N passed, M failed";
    -v lists every test (PASS lines too), as `opa test -v` does.
    A test passes when its value is defined and not false.
    print() output is shown under failing tests, and under every test with -v.
    --run REGEX keeps the tests whose data.pkg.test_name matches (re.search), and skips the
    schema's test files.
    Exit 1 when a test fails or errors, or when no Rego test ran; 0 otherwise.
    A module that does not compile exits 1 with error policy_compile_error.
    """
    from tenantguard.decision.core import RELATED_EXTENSION
    from tenantguard.policy.testrunner import load_bundle_dir, run_tests

    if run is not None:
        try:
            re.compile(run)
        except re.error as exc:
            raise typer.BadParameter(f"not a regular expression: {exc}", param_hint="--run") from None
    modules, data = load_bundle_dir(directory)
    report = run_tests(modules, data, coverage=coverage, verbose=verbose, run_filter=run,
                       extensions=RELATED_EXTENSION)
    colours = {"pass": "green", "fail": "red", "error": "red"}
    for result in report.results:
        if result.outcome == "pass" and not verbose:
            continue
        where = f"{result.file}:{result.line}: " if result.file else ""
        status = f"[{colours[result.outcome]}]{result.outcome.upper()}[/]"
        millis = result.duration_ns / 1e6
        line(f"{escape(where + result.full_name)}: {status} ({millis:.3f}ms)")
        for printed in result.prints:
            line(f"  {escape(printed)}")
        for error_line in (result.error or "").splitlines():
            line(f"  {escape(error_line)}")
    if report.coverage is not None:
        line("")
        for file in report.coverage.files:
            missing = _ranges(file.not_covered)
            line(
                f"coverage {escape(file.path)}: {file.percent:.1f}%" + (f" (not covered: {missing})" if missing else "")
            )
        line(f"coverage total: {report.coverage.percent:.1f}%")
    summary = f"{report.passed} passed, {report.failed} failed"
    if report.errors:
        summary += f", {report.errors} error{'s' if report.errors > 1 else ''}"
    if not report.results:
        line("[red]no tests found[/]" + (f" matching --run {escape(run)}" if run else ""))
        raise typer.Exit(1)
    line(f"[{'green' if report.ok else 'red'}]{summary}[/]")
    from tenantguard.cli.model import print_outcome

    schemas_ok = True
    if run is None:  # --run names Rego rules; the schema's test files run with the whole suite
        for outcome in run_schema_tests(directory):
            print_outcome(outcome, verbose)
            schemas_ok = schemas_ok and outcome.passed
    if not (report.ok and schemas_ok):
        raise typer.Exit(1)


# --------------------------------------------------------------------------- build / sign


@app.command()
def build(
    directory: DirArg,
    out: Annotated[Path, typer.Option("--output", "-o", help="Archive to write (overwritten if it exists)")],
    revision: RevisionOpt = None,
    signing_key: Annotated[
        Path | None, typer.Option(help="Private key (PEM) to sign with; unsigned when omitted", dir_okay=False)
    ] = None,
    serial: Annotated[
        int | None,
        typer.Option(help="metadata.serial, which orders bundles (rollbacks are refused); default: now in ms"),
    ] = None,
    skip_tests: SkipTestsOpt = False,
) -> None:
    """Test DIR, then pack it into a bundle archive, signed when --signing-key is given.

    Runs the bundle's Rego tests first, as `bundle test DIR` does, and writes nothing when one
    fails or errors, or when there are none (error policy_tests_failed); --skip-tests says so
    on stderr and builds anyway.
    Packs DIR/.manifest and every *.rego (tests too) and data.json below DIR.
    Hidden files and all other files are left out; symlinks are refused.
    The policy is compiled as a sidecar compiles it on load (with the manifest's
    metadata.decision, when it names one).
    Nothing is written when it does not compile (error policy_compile_error).
    The revision is --revision as given, else DIR/.manifest's revision and 12 hex digits of
    the content's digest (e.g. 1-3f2a9c0d1e4b): the same files always give the same revision,
    any change another one.
    Prints the revision, serial, file count and signer kid.
    """
    from tenantguard.policy.testrunner import load_bundle_dir

    key = SigningKey.load(signing_key) if signing_key is not None else None
    revision = given_revision(directory, revision)
    gate_on_tests(*load_bundle_dir(directory), skip=skip_tests, what="nothing was written", directory=directory)
    archive = build_bundle(directory, revision, signing_key=key, serial=serial)
    _check_compiles(archive)
    _write(out, archive)
    summary = inspect(archive)
    _report_written(out, summary, key)


@app.command()
def sign(
    archive: ArchiveArg,
    signing_key: Annotated[Path, typer.Option(help="Private key (PEM) to sign with", dir_okay=False)],
    out: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write; default: FILE in place")] = None,
) -> None:
    """Re-sign an existing archive (in place unless -o is given).

    Any previous signature is dropped WITHOUT being checked; the content is kept.
    Verify the archive first if you do not trust where it came from.
    A policy that does not compile is not signed (error policy_compile_error).
    """
    key = SigningKey.load(signing_key)
    signed = sign_bundle(archive, key)
    _check_compiles(signed)
    target = out or archive
    _write(target, signed)
    _report_written(target, inspect(signed), key)


# --------------------------------------------------------------------------- verify / inspect


@app.command()
def verify(
    archive: ArchiveArg,
    key: KeyOpt = None,
    trust: TrustOpt = None,
    issuer: IssuerOpt = None,
) -> None:
    """Verify a bundle's signature and every file digest, then parse its content.

    --key PUB: one key is used whatever kid the bundle names (this accepts bundles
    from `opa build --signing-key`); with several, the bundle's kid picks the key.
    --trust JWKS: the bundle's kid picks a trust file key (--issuer narrows it).
    Prints OK with revision and signer; exit 0.
    A rejected bundle prints `error <code>: FILE: <reason>`; exit 1.
    Unsigned bundles are rejected (bundle_unsigned).
    """
    verifier = _verifier(key, trust, issuer, required=True)
    bundle = _verified(archive, verifier, require_signature=True)
    signer = bundle.signature
    who = f"kid {signer.kid} ({signer.alg})" if signer else "nobody"
    if signer and signer.issuer:
        who += f", iss {signer.issuer}"
    console.print(
        f"[green]OK[/] {escape(str(archive))}: revision {escape(bundle.revision or '-')}, "
        f"{len(bundle.files)} files, signed by {escape(who)}",
        soft_wrap=True,
    )


@app.command("inspect")
def inspect_cmd(
    archive: ArchiveArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Show the manifest, the files (size, SHA-256) and the signer a bundle CLAIMS.

    Nothing is verified: the signer shown is what .signatures.json says,
    which anyone can write. Use `tenantguard bundle verify` to check it.
    """
    summary = inspect(archive)
    if as_json:
        print_json(summary)
        return
    manifest = summary["manifest"]
    console.print(f"[bold]{escape(str(archive))}[/]", soft_wrap=True)
    console.print(f"  revision: {escape(manifest.get('revision') or '-')}", soft_wrap=True)
    console.print(f"  roots:    {escape(json.dumps(manifest.get('roots')))}", soft_wrap=True)
    if manifest.get("metadata"):
        console.print(f"  metadata: {escape(json.dumps(manifest['metadata'], sort_keys=True))}", soft_wrap=True)
    console.print(f"  files:    {len(summary['files'])} (size, sha256, name)", soft_wrap=True)
    width = max((len(str(entry["size"])) for entry in summary["files"]), default=1)
    for entry in summary["files"]:
        line(f"    {entry['size']:>{width}}  {entry['sha256']}  {escape(entry['name'])}")
    signature = summary["signature"]
    if signature is None:
        console.print("  signer:   [yellow]unsigned[/]")
        return
    console.print(
        f"  signer:   claimed, NOT verified: kid {escape(str(signature['kid']))} ({escape(str(signature['alg']))})"
        f", iss {escape(str(signature['iss'] or '-'))}, {signature['files']} files signed",
        soft_wrap=True,
    )


# --------------------------------------------------------------------------- eval


@app.command("eval")
def eval_cmd(
    archive: ArchiveArg,
    query: Annotated[
        str | None,
        typer.Option(
            help="Rule or document to evaluate, e.g. data.tenantguard.decision; "
            "default: metadata.decision of the manifest"
        ),
    ] = None,
    input_arg: Annotated[
        str,
        typer.Option("--input", help="Input document: inline JSON, @PATH to a JSON file, or @- for stdin"),
    ] = "{}",
    key: KeyOpt = None,
    trust: TrustOpt = None,
    issuer: IssuerOpt = None,
    unsigned: Annotated[
        bool, typer.Option("--unsigned", help="Accept an UNSIGNED bundle (a signed one is still verified)")
    ] = False,
) -> None:
    """Verify a bundle, evaluate one query against an input, print the JSON result.

    The bundle is verified as `bundle verify` does it (--key/--trust).
    --unsigned accepts a bundle without a signature (local development only);
    a signed bundle is always verified.
    --query defaults to metadata.decision of the manifest.
    Exit 0 with the result as JSON on stdout, even when the decision denies.
    Exit 1 with `undefined` on stdout when the query has no value.
    Exit 1 with `error <code>: ...` on stderr when verifying or evaluating fails.

    Example: bundle eval b.tar.gz --key k.pem.pub --input @request.json
    """
    document = _input_document(input_arg)
    verifier = _verifier(key, trust, issuer, required=not unsigned)
    bundle = _verified(archive, verifier, require_signature=not unsigned)
    entrypoint = query or bundle.manifest.metadata.get("decision")
    if not isinstance(entrypoint, str) or not entrypoint:
        raise typer.BadParameter("the manifest names no metadata.decision; pass --query", param_hint="--query")
    from tenantguard.decision.core import RELATED_EXTENSION
    from tenantguard.policy.engine import RegorusEngine

    # tg.related outside a decision knows no tenant: it answers False (docs/relationships.md)
    policy = RegorusEngine().prepare(bundle.modules, bundle.data, extensions=RELATED_EXTENSION)
    result = policy.evaluate(entrypoint, document)
    if result is None:
        print("undefined")
        raise typer.Exit(1)
    print_json(result)


# --------------------------------------------------------------------------- impact


BundleSource = Annotated[
    Path, typer.Argument(help="The candidate: a bundle directory or archive", metavar="CANDIDATE", exists=True,
                         readable=True)
]


@app.command("impact")
def impact_cmd(
    candidate: BundleSource,
    inputs: Annotated[Path, typer.Option("--inputs", help="Recorded decisions, JSON lines (docs/operations.md, "
                                         "'Impact analysis'); a decision-log export works as it is",
                                         exists=True, dir_okay=False, readable=True)],
    baseline: Annotated[Path | None, typer.Option(help="The bundle in production (directory or archive); "
                                                  "default: compare with the recorded results", exists=True)] = None,
    relations: Annotated[Path | None, typer.Option(
        help="Relations to replay at: a plane snapshot or {\"seq\": N, \"relationships\": [...]}; needed when "
        "the records carry no input (tg.related and input.relations come from it)", exists=True,
        dir_okay=False)] = None,
    expect: Annotated[Path | None, typer.Option(help="Declared flips, JSON: {\"expected_flips\": [{direction, "
                                                "tenant, service, action, reason}]} (globs); added to the "
                                                "candidate's metadata.expected_flips", exists=True,
                                                dir_okay=False)] = None,
    max_undeclared: Annotated[int, typer.Option(min=0, help="Exit 1 when more undeclared flips than this")] = 0,
    limit: Annotated[int, typer.Option(min=1, help="Replay at most this many records")] = 1_000_000,
    decision: Annotated[str | None, typer.Option(help="Decision rule; default: metadata.decision")] = None,
    key: KeyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report")] = False,
) -> None:
    """Replay recorded decisions against CANDIDATE and report every flip (allow->deny, deny->allow).

    Runs offline, e.g. in a policy repository's CI. Flips are grouped by tenant,
    service, action and reason, with examples. A flip is declared when it matches
    --expect or the candidate's metadata.expected_flips; anything else is undeclared.
    Archives are verified with --key when given (unsigned archives are accepted without).
    Exit 0 when undeclared flips <= --max-undeclared; 1 otherwise, or on any error.
    """
    from tenantguard.rollout import (
        ImpactAnalyzer,
        load_bundle,
        load_relations,
        manifest_expectations,
        parse_expectations,
        prepare_revision,
        read_records,
    )

    verifier = _verifier(key, None, None, required=False)
    candidate_bundle = load_bundle(candidate, verifier)
    expected = manifest_expectations(candidate_bundle)
    if expect is not None:
        expected += parse_expectations(_input_document("@" + str(expect)))
    analyzer = ImpactAnalyzer(
        prepare_revision(candidate_bundle, decision),
        baseline=prepare_revision(load_bundle(baseline, verifier), decision) if baseline is not None else None,
        relations=load_relations(relations) if relations is not None else None, expected=expected)
    with inputs.open("rb") as handle:
        report = analyzer.add_all(read_records(handle, limit=limit))
    if as_json:
        print_json({**report.to_wire(), "ok": report.ok(max_undeclared)})
    else:
        line(escape(report.render()))
    if not report.ok(max_undeclared):
        raise typer.Exit(1)



def _ranges(numbers: tuple[int, ...]) -> str:
    """(1, 2, 3, 7) -> "1-3, 7"."""
    spans: list[list[int]] = []
    for number in sorted(numbers):
        if spans and spans[-1][1] == number - 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)



def _check_compiles(archive: bytes) -> None:
    """Compile the archive's policy as a sidecar does on load (``AuthzRuntime._prepare``).

    ``build_bundle`` parses the manifest and data but cannot compile Rego (the bundle
    layer does not import the engine): without this a module with a syntax error was
    built and signed, and only the plane or every sidecar refused it later.
    """
    from tenantguard.decision.core import RELATED_EXTENSION
    from tenantguard.policy.engine import RegorusEngine

    files = read_archive(archive)
    files.pop(SIGNATURES_FILE, None)
    bundle = parse_contents(files)
    decision = bundle.manifest.metadata.get("decision")
    entrypoints = (decision,) if isinstance(decision, str) and decision else ()
    RegorusEngine().prepare(bundle.modules, bundle.data, extensions=RELATED_EXTENSION, entrypoints=entrypoints)


def _write(path: Path, content: bytes) -> None:
    try:
        path.write_bytes(content)
    except OSError as exc:
        console_err.print(
            f"[red]error[/] write_failed: cannot write {escape(str(path))}: {exc.strerror}", soft_wrap=True
        )
        raise typer.Exit(1) from None


def _report_written(path: Path, summary: dict[str, Any], key: SigningKey | None) -> None:
    manifest = summary["manifest"]
    count = sum(1 for entry in summary["files"] if entry["name"] != SIGNATURES_FILE)
    signer = f"signed by kid {key.kid} ({key.alg})" if key else "[yellow]unsigned[/]"
    console.print(
        f"[green]wrote[/] {escape(str(path))}: revision {escape(manifest.get('revision') or '-')}, "
        f"serial {manifest.get('metadata', {}).get('serial')}, {count} files, {signer}",
        soft_wrap=True,
    )


def _verifier(keys: list[Path] | None, trust: Path | None, issuer: str | None, *, required: bool) -> Verifier | None:
    """PublicKeyVerifier for one key, TrustSetVerifier for several keys or a trust file."""
    if keys and trust is not None:
        raise typer.BadParameter("give --key or --trust, not both", param_hint="--key/--trust")
    if issuer is not None and trust is None:
        raise typer.BadParameter("--issuer only applies to --trust", param_hint="--issuer")
    if trust is not None:
        return TrustSetVerifier(TrustSet.load(trust), issuer=issuer)
    if not keys:
        if required:
            raise typer.BadParameter(
                "give the accepted key(s) with --key, or a trust file with --trust", param_hint="--key/--trust"
            )
        return None
    public_keys = [load_public_key_file(path) for path in keys]
    if len(public_keys) == 1:
        return PublicKeyVerifier(public_keys[0])
    local = TrustSet()
    for public_key in public_keys:
        local.add_public_key(public_key, _LOCAL_ISSUER)
    return TrustSetVerifier(local)


def _verified(archive: Path, verifier: Verifier | None, *, require_signature: bool) -> Bundle:
    """Verify ``archive``; a rejection is printed with the archive and member names, exit 1."""
    try:
        return verify_bundle(archive, verifier, require_signature=require_signature)
    except BundleRejected as exc:
        console_err.print(f"[red]error[/] {exc.code}: {escape(str(archive))}: {escape(shown_message(exc))}",
                          soft_wrap=True)
        raise typer.Exit(1) from None


def _input_document(raw: str) -> Any:
    """Parse --input: inline JSON, @PATH or @- (stdin)."""
    if raw.startswith("@"):
        source = raw[1:]
        try:
            raw = sys.stdin.read() if source == "-" else Path(source).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise typer.BadParameter(f"cannot read {source}: {exc}", param_hint="--input") from None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--input") from None

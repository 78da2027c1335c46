"""The documentation cannot drift from the CLI.

* docs/configuration.md holds tables generated from the typer apps by
  docs/gen_config_reference.py; they must equal a fresh generation.
* Every ``tenantguard ...`` command line in docs/*.md and README.md (fenced code blocks
  and inline code spans) must name existing subcommands and existing flags of the
  command it reaches, and every inline ``--flag`` span must be a flag of some command.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.harness.doc_commands import all_flags, check_command, load_generator

ROOT = Path(__file__).resolve().parents[2]
# Every page a new user follows: the docs, the README and the two READMEs beside the
# example bundle and the deployment (their commands drifted unchecked before).
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "bundles" / "README.md",
        ROOT / "deploy" / "README.md"]

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# "tenantguard" as a command word: at the start, after whitespace or a shell operator, or
# as an executable in a bin/ directory (".venv/bin/tenantguard"); never a path like
# "bundles/tenantguard".
# "kubectl -n tenantguard ..." names the namespace, not the command.
COMMAND = re.compile(r"(?:^|(?<=[\s;|&(])|(?<=bin/))(?<!-n )(?<!--namespace )tenantguard\s+(?=[A-Za-z-])")
STANDALONE_FLAG = re.compile(r"--[a-z][a-z0-9-]*")


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return load_generator()


@pytest.fixture(scope="module")
def root(gen: ModuleType) -> Any:
    return gen.cli_root()


# --------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Mention:
    file: str
    line: int
    text: str  # from "tenantguard" to the end of the command line

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def _strip_comment(line: str) -> str:
    return re.sub(r"(^|\s)#.*$", "", line)


def _join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in lines:
        if pending is not None:
            number, line = pending[0], pending[1] + " " + line.strip()
            pending = None
        if line.rstrip().endswith("\\"):
            pending = (number, line.rstrip()[:-1])
            continue
        out.append((number, line))
    if pending is not None:
        out.append(pending)
    return out


def mentions(path: Path) -> tuple[list[Mention], list[Mention]]:
    """(command lines, standalone ``--flag`` spans) mentioned in one markdown file."""
    name = str(path.relative_to(ROOT))
    commands: list[Mention] = []
    flags: list[Mention] = []
    in_code = False
    block: list[tuple[int, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            if in_code:
                for n, text in _join_continuations(block):
                    commands += [Mention(name, n, c) for c in _commands_in(_strip_comment(text))]
                block = []
            in_code = not in_code
            continue
        if in_code:
            block.append((number, line))
            continue
        for span in INLINE.findall(line):
            commands += [Mention(name, number, c) for c in _commands_in(span)]
            if STANDALONE_FLAG.fullmatch(span.split("=")[0].split(" ")[0]) and span.startswith("--"):
                flags.append(Mention(name, number, span.split("=")[0].split(" ")[0]))
    return commands, flags


def _commands_in(text: str) -> Iterator[str]:
    for match in COMMAND.finditer(text):
        yield text[match.start() :].strip()


# --------------------------------------------------------------------------- tests


def test_configuration_reference_is_current(gen: ModuleType) -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    current = gen.extract(text)
    assert current is not None, "docs/configuration.md lost its BEGIN/END GENERATED markers"
    assert current == gen.render(), (
        "docs/configuration.md is out of date with the CLI: run python docs/gen_config_reference.py --write"
    )


def test_configuration_reference_covers_the_services(gen: ModuleType, root: Any) -> None:
    block = gen.render(root)
    for title in ("tenantguard sidecar serve", "tenantguard plane serve", "tenantguard plane init"):
        assert f"### `{title}`" in block
    for path in [("sidecar", "serve"), ("plane", "serve"), ("plane", "init")]:
        command = gen.find(root, path)
        for param in command.params:
            for opt in getattr(param, "opts", ()):
                if opt.startswith("--") and opt != "--help":
                    assert f"`{opt}`" in block, f"{opt} of {' '.join(path)} is missing from the reference"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_command_lines_exist(doc: Path, gen: ModuleType, root: Any) -> None:
    commands, _ = mentions(doc)
    problems = [f"{m}\n    -> {why}" for m in commands if (why := check_command(root, gen, m.text))]
    assert not problems, "command lines that the CLI does not have:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_flags_exist(doc: Path, gen: ModuleType, root: Any) -> None:
    _, flags = mentions(doc)
    known = all_flags(root, gen)
    problems = [str(m) for m in flags if m.text not in known]
    assert not problems, "--flags that no tenantguard command has:\n" + "\n".join(problems)


def test_the_docs_are_actually_checked() -> None:
    """The extraction finds the command lines of the operator docs (the test is not vacuous)."""
    found = {m.text.split("#")[0].strip() for doc in DOCS for m in mentions(doc)[0]}
    assert len(found) >= 20
    assert any(t.startswith("tenantguard bundle publish") for t in found)
    assert any(t.startswith("tenantguard sidecar serve") for t in found)
    per_doc = {doc.relative_to(ROOT).as_posix(): len(mentions(doc)[0]) for doc in DOCS}
    assert per_doc["bundles/README.md"] >= 10 and per_doc["deploy/README.md"] >= 3, per_doc


@pytest.mark.parametrize(("line", "wrong"), [
    ("tenantguard bundle sign b.tar.gz --key k.pem --kid bundles-2025", "--key"),
    ("tenantguard bundle publish bundles/tenantguard --key signing.pem --plane https://p", "--key"),
    ("tenantguard bundles test dir", "'bundles'"),
    ("tenantguard sidecar serve --service a --no-such-flag", "--no-such-flag"),
    ("tenantguard plane rotate-keys", "'rotate-keys'"),
])
def test_the_checker_catches_wrong_lines(line: str, wrong: str, gen: ModuleType, root: Any) -> None:
    why = check_command(root, gen, line)
    assert why is not None and wrong in why


@pytest.mark.parametrize("line", [
    "tenantguard bundle test bundles/tenantguard -v --coverage",
    "tenantguard sidecar serve --service billing --grpc-port -1 --alg EdDSA --alg ES256",
    "tenantguard relation check 'acme/project:p1#member@user:alice' --at-least 42 --plane=http://p",
    "tenantguard keys jwks edge.pem.pub --issuer edge > trust.json",
    "tenantguard keys generate edge.pem [--alg EdDSA|ES256|RS256]",
    "tenantguard --help",
])
def test_the_checker_accepts_right_lines(line: str, gen: ModuleType, root: Any) -> None:
    assert check_command(root, gen, line) is None


@pytest.mark.parametrize(("text", "found"), [
    ("kubectl -n tenantguard rollout status statefulset/nats", []),
    ("kubectl --namespace tenantguard port-forward svc/tenantguard-plane 8282", []),
    ("kubectl -n tenantguard exec deploy/x -- tenantguard relation list acme",
     ["tenantguard relation list acme"]),
])
def test_a_namespace_named_tenantguard_is_no_command(text: str, found: list[str]) -> None:
    assert list(_commands_in(text)) == found

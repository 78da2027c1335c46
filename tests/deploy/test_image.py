"""The container image builds: its context, as the Dockerfile sees it, makes a working install.

``test_the_build_context_makes_a_working_install`` needs no container tooling: it reads
deploy/Dockerfile's COPY instructions and deploy/Dockerfile.dockerignore's rules (parsed, with
Docker's matching semantics), lays out exactly the files a build would receive in a temp dir,
builds a wheel from it with pip and runs ``tenantguard --help`` from that install. A COPY of
something the ignore rules drop, or a wheel that needs a file no COPY brings, fails here as it
would fail ``docker build``.

``test_the_real_image_builds_and_runs`` builds the real image with whatever builder the machine
has (a Docker daemon, else buildah, else podman) and runs ``tenantguard --version`` in it. It
skips, saying why, when there is no builder or the pinned base image can be neither found
locally nor pulled (no registry access): CI installs only what the repository installs, and a
daemon is not among it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
IGNORE_FILE = ROOT / "deploy" / "Dockerfile.dockerignore"  # BuildKit's per-Dockerfile ignore file


# ----------------------------------------------------------------------------- the Dockerfile


def instructions(path: Path = DOCKERFILE) -> list[list[tuple[str, str]]]:
    """Stages of ``(INSTRUCTION, rest)``, continuation lines joined, comments dropped."""
    stages: list[list[tuple[str, str]]] = []
    for raw in path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, rest = line.partition(" ")
        if instr.upper() == "FROM":
            stages.append([])
        stages[-1].append((instr.upper(), rest.strip()))
    return stages


@dataclass(frozen=True)
class Copy:
    sources: tuple[str, ...]
    dest: str


def build_stage_copies() -> tuple[list[Copy], str]:
    """The first stage's COPY instructions from the context (not ``--from``) and its last WORKDIR."""
    first = instructions()[0]
    copies, workdir = [], "/"
    for instr, rest in first:
        if instr == "WORKDIR":
            workdir = rest
        if instr == "COPY":
            words = rest.split()
            assert not any(w.startswith("--from") for w in words), "the build stage copies from the context only"
            words = [w for w in words if not w.startswith("--")]
            copies.append(Copy(tuple(words[:-1]), words[-1]))
    return copies, workdir


def base_images() -> list[str]:
    names = set()
    images = []
    for stage in instructions():
        words = stage[0][1].split()
        if words[0] not in names:
            images.append(words[0])
        if len(words) == 3 and words[1].upper() == "AS":
            names.add(words[2])
    return images


# ----------------------------------------------------------------------------- .dockerignore


@dataclass(frozen=True)
class Rule:
    pattern: str
    negated: bool
    regex: re.Pattern[str]


def _compile(pattern: str) -> re.Pattern[str]:
    """Docker's (moby patternmatcher) pattern -> regex: ``**`` any depth, ``*``/``?`` within a name."""
    out, i = "^", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*" and pattern[i + 1 : i + 2] == "*":
            i += 2
            if pattern[i : i + 1] == "/":
                i += 1
            out += ".*" if i >= len(pattern) else "(.*/)?"
            continue
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        elif ch == "[":
            end = pattern.find("]", i + 1)
            out += pattern[i : end + 1] if end > i else re.escape(ch)
            i = end if end > i else i
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(out + "$")


def parse_ignore(text: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line[1:].strip() if negated else line
        pattern = os.path.normpath(pattern).lstrip("/")  # Docker cleans patterns (filepath.Clean)
        rules.append(Rule(pattern, negated, _compile(pattern)))
    return rules


def excluded(rules: list[Rule], path: str) -> bool:
    """Docker's ``MatchesOrParentMatches``: the last rule matching the path or one of its parents wins."""
    parents = [str(p) for p in reversed(PurePosixPath(path).parents) if str(p) != "."]
    result = False
    for rule in rules:
        if rule.regex.match(path) or any(rule.regex.match(parent) for parent in parents):
            result = not rule.negated
    return result


# ----------------------------------------------------------------------------- the context, laid out


def context_files(rules: list[Rule], source: str) -> Iterator[Path]:
    """Files under ``source`` (relative to the repository root) that the ignore rules let through."""
    start = ROOT / source
    candidates = [start] if start.is_file() else sorted(p for p in start.rglob("*") if p.is_file())
    for path in candidates:
        if not excluded(rules, path.relative_to(ROOT).as_posix()):
            yield path


def lay_out_context(target: Path) -> Path:
    """Copy what the build stage's COPYs receive into ``target`` + WORKDIR; return that directory."""
    rules = parse_ignore(IGNORE_FILE.read_text(encoding="utf-8"))
    copies, workdir = build_stage_copies()
    root = target / workdir.lstrip("/")
    root.mkdir(parents=True)
    for copy in copies:
        dest = root / copy.dest
        for source in copy.sources:
            assert not any(c in source for c in "*?["), f"COPY wildcards are not handled here: {source}"
            files = list(context_files(rules, source.rstrip("/")))
            assert files, f"COPY {source}: nothing in the build context (does the .dockerignore drop it?)"
            for path in files:
                base = ROOT / source
                into = (dest / path.name) if base.is_file() else dest / path.relative_to(base)
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, into)
    return root


def test_the_ignore_rules_follow_docker_semantics() -> None:
    rules = parse_ignore("**\n!sdk/\n!bundles/tenantguard/\n**/__pycache__\n**/*.pyc\n")
    assert excluded(rules, "tests/deploy/test_image.py")
    assert excluded(rules, ".venv/bin/python")
    assert not excluded(rules, "sdk/tenantguard/cli/__init__.py")
    assert excluded(rules, "sdk/tenantguard/__pycache__/x.cpython-311.pyc")
    assert not excluded(rules, "bundles/tenantguard/.manifest")
    assert excluded(rules, "bundles/authzen-todo/.manifest")
    assert excluded(parse_ignore("*.md\n"), "README.md") and not excluded(parse_ignore("*.md\n"), "docs/x.md")


def test_the_build_context_makes_a_working_install(tmp_path: Path) -> None:
    source = lay_out_context(tmp_path / "image")
    assert (source / "pyproject.toml").is_file()
    assert not list(source.rglob("__pycache__")), "the ignore rules keep bytecode out"
    dist, target = tmp_path / "dist", tmp_path / "installed"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(source)],
                           capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, "the image's `pip install .` would fail too:\n" + built.stderr[-4000:]
    wheel = next(dist.glob("tenantguard-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    # The install's own modules first; its dependencies come from this environment.
    env = {**os.environ, "PYTHONPATH": str(target), "COLUMNS": "120"}
    script = target / "bin" / "tenantguard"
    shown = subprocess.run([str(script), "--help"], env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "Usage: tenantguard" in shown.stdout
    for group in ("sidecar", "plane", "dev", "demo"):
        assert re.search(rf"^\s+{group}\s", shown.stdout, re.MULTILINE), shown.stdout
    where = subprocess.run([sys.executable, "-c", "import tenantguard.devenv.stack as s; "
                            "print(s.__file__); print(s.default_bundle_dir())"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    module, bundle = where.stdout.split()
    assert module.startswith(str(target)), module
    assert (Path(bundle) / ".manifest").is_file() and Path(bundle).is_relative_to(target)


# ----------------------------------------------------------------------------- the real image


def _ok(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str] | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done


def find_builder() -> tuple[str | None, str]:
    """``(tool, "")`` for the first builder that works here, else ``(None, why none does)``."""
    why = []
    if shutil.which("docker"):
        info = _ok(["docker", "info", "--format", "{{.ServerVersion}}"])
        if info is not None and info.returncode == 0:
            return "docker", ""
        why.append("docker is installed but no daemon answers" + (
            f" ({(info.stderr or info.stdout).strip().splitlines()[-1]})" if info and (info.stderr or info.stdout)
            else ""))
    else:
        why.append("no docker")
    for tool in ("buildah", "podman"):
        if shutil.which(tool):
            info = _ok([tool, "info"])
            if info is not None and info.returncode == 0:
                return tool, ""
            why.append(f"{tool} is installed but `{tool} info` fails")
        else:
            why.append(f"no {tool}")
    return None, "; ".join(why)


def base_image_missing(tool: str, image: str) -> str | None:
    """None when ``image`` is local or could be pulled; else the reason (first line of the error)."""
    local = _ok([tool, "image", "inspect", image] if tool != "buildah" else [tool, "inspect", "--type", "image", image])
    if local is not None and local.returncode == 0:
        return None
    pulled = _ok([tool, "pull", image], timeout=600)
    if pulled is not None and pulled.returncode == 0:
        return None
    error = (pulled.stderr or pulled.stdout).strip().splitlines() if pulled is not None else ["timed out"]
    return f"base image {image} is not local and cannot be pulled ({error[-1] if error else 'no output'})"


@pytest.mark.timeout(1800)
def test_the_real_image_builds_and_runs() -> None:
    tool, why = find_builder()
    if tool is None:
        pytest.skip(f"no container builder here: {why}")
    for image in base_images():
        missing = base_image_missing(tool, image)
        if missing is not None:
            pytest.skip(f"{tool} works here, but {missing}")
    tag = f"localhost/tenantguard-test:{uuid.uuid4().hex[:12]}"
    build = [tool, "build", "-f", str(DOCKERFILE), "-t", tag]
    if tool != "docker":  # buildah/podman: name BuildKit's per-Dockerfile ignore file explicitly
        build += ["--ignorefile", str(IGNORE_FILE)]
    built = subprocess.run([*build, str(ROOT)], capture_output=True, text=True, timeout=1500, check=False)
    try:
        assert built.returncode == 0, (built.stdout + built.stderr)[-6000:]
        if tool == "buildah":  # no `run IMAGE`: a working container from it, then the command inside
            container = subprocess.run(["buildah", "from", tag], capture_output=True, text=True, timeout=300,
                                       check=True).stdout.strip()
            try:
                ran = subprocess.run(["buildah", "run", container, "--", "tenantguard", "--version"],
                                     capture_output=True, text=True, timeout=300, check=False)
            finally:
                subprocess.run(["buildah", "rm", container], capture_output=True, timeout=120, check=False)
        else:  # the image's ENTRYPOINT is tenantguard
            ran = subprocess.run([tool, "run", "--rm", tag, "--version"], capture_output=True, text=True,
                                 timeout=300, check=False)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip().startswith("tenantguard "), ran.stdout
    finally:
        rmi = ["buildah", "rmi", tag] if tool == "buildah" else [tool, "rmi", tag]
        subprocess.run(rmi, capture_output=True, timeout=300, check=False)

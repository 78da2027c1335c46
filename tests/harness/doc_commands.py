"""Checking a ``tenantguard ...`` command line against the CLI itself: every subcommand and every flag
it names must exist (the Typer apps walked by docs/gen_config_reference.py)."""

from __future__ import annotations

import importlib.util
import re
import shlex
from types import ModuleType
from typing import Any

from .paths import REPO

GENERATOR = REPO / "docs" / "gen_config_reference.py"
SHELL_STOP = {"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "(", ")", "2>", "2>&1"}


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_config_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tokens(command_line: str) -> list[str]:
    lexer = shlex.shlex(command_line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes in an illustrative line: fall back to plain splitting
        tokens = command_line.split()
    out = []
    for token in tokens[1:]:  # tokens[0] is "tenantguard"
        if token in SHELL_STOP:
            break
        out.append(token.strip("[]"))
    return out


def _option_names(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return {n for n in names if n.startswith("-")}


def check_command(root: Any, gen: ModuleType, command_line: str) -> str | None:
    """None when the line is valid for the CLI, else what is wrong with it."""
    command, path = root, ["tenantguard"]
    for token in _tokens(command_line):
        if not token or token in {"...", "-", "--"} or re.fullmatch(r"-\d.*", token):
            continue
        if token.startswith("-"):
            flag = token.split("=", 1)[0]
            if flag not in _option_names(command):
                return f"{' '.join(path)} has no option {flag}"
            continue
        children = gen.subcommands(command)
        if children:
            if token not in children:
                return f"{' '.join(path)} has no subcommand {token!r}"
            command = children[token]
            path.append(token)
    return None


def all_flags(root: Any, gen: ModuleType) -> set[str]:
    """Every flag of every command: what an inline ``--flag`` in the docs may name."""
    flags = set(_option_names(root))
    for _, command in gen.walk(root):
        flags |= _option_names(command)
    return flags

"""A lone surrogate anywhere in an input is refused before regorus sees it (its set_input
crashes the process on one): in every container regorus converts, not only dicts and lists.
"""

from __future__ import annotations

import array
import collections
import subprocess
import sys
import textwrap
import types
from typing import Any

import pytest
from tenantguard.policy.engine import has_unencodable_text

LONE = "\ud800"
Point = collections.namedtuple("Point", "x")


class Text(str):
    def __str__(self) -> str:  # what regorus reads is the text, not __str__
        return "harmless"


def containers(text: str) -> list[Any]:
    """``text`` inside each kind of value that regorus's set_input accepts."""
    return [
        text, {"k": text}, {text: 1}, [text], (text,), {text}, frozenset([text]), [[{"a": [text]}]],
        collections.OrderedDict(k=text), types.MappingProxyType({"k": text}), collections.UserDict(k=text),
        collections.deque([text]), collections.UserList([text]), Point(text), type("L", (list,), {})([text]),
        type("S", (set,), {})([text]), array.array("u", text), Text(text), {"k": Text(text)}, [Text(text)],
    ]


@pytest.mark.parametrize("value", containers(LONE), ids=lambda v: type(v).__name__)
def test_a_lone_surrogate_is_found_in_any_container(value: Any) -> None:
    assert has_unencodable_text({"input": value})


@pytest.mark.parametrize("value", [*containers("é ü 中 😀"), b"\xed\xa0\x80", 3, 1.5, True, None, range(3)],
                         ids=lambda v: type(v).__name__)
def test_valid_text_and_other_values_pass(value: Any) -> None:
    assert not has_unencodable_text({"input": value})


def test_the_engine_refuses_them_instead_of_crashing() -> None:
    """In a child process: were one to reach regorus, it would take the process down."""
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from test_input_text import LONE, containers
        from tenantguard.policy.engine import RegorusEngine
        from tenantguard.errors import InvalidInput
        policy = RegorusEngine().prepare({"a.rego": "package a\\nimport rego.v1\\nx := input.v\\n"}, {})
        for value in containers(LONE):
            try:
                policy.evaluate("data.a.x", {"v": value})
            except InvalidInput:
                continue
            print("not refused:", type(value).__name__)
        print("done")
    """)
    here = str(__import__("pathlib").Path(__file__).parent)
    run = subprocess.run([sys.executable, "-c", script, here], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "done", (run.returncode, run.stdout, run.stderr[-2000:])

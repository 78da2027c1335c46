"""The normal-form rule itself: RFC 3986 examples, and the fast path never disagreeing with it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from authz_sidecar.request_target import PathRejected, normal_target, normalise_path, remove_dot_segments


@pytest.mark.parametrize(("path", "expected"), [
    ("/a/b/c/./../../g", "/a/g"), ("/mid/content=5/../6", "/mid/6"), ("/..", "/"), ("/a/..", "/"),
    ("/a/.", "/a/"), ("/a/./b/", "/a/b/"), ("/a//../b", "/a/b"),
])
def test_remove_dot_segments_rfc3986(path: str, expected: str) -> None:
    assert _merged(remove_dot_segments(path)) == expected


def _merged(path: str) -> str:
    while "//" in path:
        path = path.replace("//", "/")
    return path


@given(st.text(alphabet="/.a%2eEfF5C;\\:~", max_size=12))
def test_a_path_is_accepted_only_when_it_is_its_own_normal_form(tail: str) -> None:
    path = "/" + tail
    try:
        target = normal_target(path)
    except PathRejected:
        return
    assert normalise_path(target.path) == target.path
    assert target.path.upper() == path.upper()  # accepted as sent (escapes compare without regard to case)

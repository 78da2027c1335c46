"""Property fuzzing of the plane's admin API (real plane, real nats-server), past the admin token.

Bodies start from a write the API accepts and break one thing (a member's type, odd JSON
text, nesting, UTF-8, content type); the Authorization header and the cursor are fuzzed
too. Properties as at the sidecar: no 5xx (but the documented, typed, retryable 503),
every refusal a typed 4xx with ``{"error", "message"}``.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from .budget import budget, timeout
from .conftest import FuzzPlane
from .strategies import CONTENT_TYPES, broken_bytes, json_text, mutated, nested, nesting_depths, odd_strings
from .wire import Answer, check_answer, send

pytestmark = timeout

BODIES: dict[str, dict[str, Any]] = {
    "/v1/relations": {"changes": [{"op": "write", "rel": {"tenant": "acme", "object": "project:p1",
                                                          "relation": "member", "subject": "user:alice"}}]},
    "/v1/revocations": {"kind": "subject", "tenant": "acme", "sub": "alice", "issued_before": 1_700_000_000},
    "/v1/trust/issuers": {"jwk": {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                                  "iss": "edge"}, "not_after": 4_102_444_800},
}
PATHS = sorted(BODIES)


def post(plane: FuzzPlane, path: str, body: bytes, *, content_type: str | None = "application/json",
         authorization: str | None = "admin") -> Answer:
    headers = {"Content-Type": content_type} if content_type is not None else {}
    if authorization is not None:
        headers["Authorization"] = "Bearer " + plane.admin_token if authorization == "admin" else authorization
    answer = send(plane.address, "POST", path, headers=headers, body=body)
    check_plane(answer)
    return answer


def check_plane(answer: Answer) -> None:
    if answer.status == 503 and answer.json().get("error") == "unavailable":
        return  # documented and retryable (e.g. a sequence conflict under load)
    check_answer(answer)


@budget(60)
@given(data=st.data(), path=st.sampled_from(PATHS))
def test_members_of_the_wrong_type(fuzz_plane: FuzzPlane, data: st.DataObject, path: str) -> None:
    post(fuzz_plane, path, json.dumps(data.draw(mutated(BODIES[path]))).encode())


@budget(40)
@given(data=st.data(), path=st.sampled_from(PATHS))
def test_odd_json_text(fuzz_plane: FuzzPlane, data: st.DataObject, path: str) -> None:
    text = data.draw(json_text(data.draw(st.one_of(st.just(BODIES[path]), mutated(BODIES[path])))))
    post(fuzz_plane, path, text.encode("utf-8", "surrogatepass"))


@budget(15)
@given(path=st.sampled_from(PATHS), depth=nesting_depths, kind=st.sampled_from(["list", "object"]))
def test_deep_nesting(fuzz_plane: FuzzPlane, path: str, depth: int, kind: str) -> None:
    post(fuzz_plane, path, nested(depth, kind=kind).encode())


@budget(30)
@given(data=st.data(), path=st.sampled_from(PATHS))
def test_broken_utf8(fuzz_plane: FuzzPlane, data: st.DataObject, path: str) -> None:
    post(fuzz_plane, path, data.draw(broken_bytes(json.dumps(BODIES[path], ensure_ascii=False))))


@budget(40)
@given(path=st.sampled_from([*PATHS, "/v1/bundles"]), content_type=st.sampled_from(CONTENT_TYPES),
       authorization=st.one_of(st.just("admin"), st.none(),
                               st.sampled_from(["Bearer", "Bearer ", "Basic x", "bearer x"]),
                               # header values HTTP allows (controls are refused by uvicorn's parser first)
                               st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
                                       max_size=40)))
def test_content_types_and_authorization(fuzz_plane: FuzzPlane, path: str, content_type: str | None,
                                         authorization: str | None) -> None:
    body = json.dumps(BODIES.get(path, {})).encode()
    answer = post(fuzz_plane, path, body, content_type=content_type, authorization=authorization)
    if authorization != "admin":
        assert answer.status in (401, 403, 413, 415), answer  # refused: nothing is written without the admin token


@budget(40)
@given(cursor=st.one_of(odd_strings, st.text(max_size=100), st.binary(max_size=60).map(lambda b: b.hex()),
                        st.sampled_from(["e30", "W10", "bnVsbA", "eyJ0ZW5hbnQiOjF9", "=" * 10, "%%%"])))
def test_list_cursor(fuzz_plane: FuzzPlane, cursor: str) -> None:
    query = urllib.parse.urlencode({"tenant": "acme", "cursor": cursor.encode("utf-8", "surrogatepass")})
    check_plane(send(fuzz_plane.address, "GET", f"/v1/relations?{query}",
                     headers={"Authorization": "Bearer " + fuzz_plane.admin_token}))


@budget(10)
@given(size=st.sampled_from([2 * 1024 * 1024 + 1, 17 * 1024 * 1024]), path=st.sampled_from([*PATHS, "/v1/bundles"]))
def test_oversized_bodies(fuzz_plane: FuzzPlane, size: int, path: str) -> None:
    answer = post(fuzz_plane, path, b"x" * size)
    if path != "/v1/bundles" or size > 16 * 1024 * 1024:
        assert answer.status == 413, answer

"""What a sidecar keeps of its decisions: sampling by outcome, masking by JSON pointer.

Like OPA's ``decision_logs`` options (``mask_decision``, sampling by ``drop_decision``),
configured with flags instead of Rego. Sampling is decided on the decision path in O(1)
from the decision id (128 random bits), so it costs no random call and two processes
agree on which id is kept at a given rate. Masking runs in the log's drain task, on the
wire record, never on the decision path.

Masked values are removed and their pointers listed in the record's ``erased`` member, as
OPA does. Independently of masks, any string that contains a compact JWS (``eyJ...``, a
bearer token a caller put into ``context``, a resource id, a request path) is replaced by
``"[redacted]"`` and listed in ``erased`` too, in the input and in the record's own fields;
a member whose *name* holds one is dropped (listed as ``<parent>/[redacted]``, never by its
name): a record never carries a token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.errors import ConfigError

REDACTED: Final = "[redacted]"
_JWS: Final = re.compile(r"eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*")
MAX_MASKS: Final = 64
_SCRUB_DEPTH: Final = 40


@dataclass(frozen=True, slots=True)
class MaskPointer:
    """An RFC 6901 pointer into the record, rooted at ``/input`` as OPA's mask paths are."""

    text: str
    parts: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> MaskPointer:
        if not text.startswith("/input/") or len(text) > 512:
            raise ConfigError(f"mask {text!r:.80} must be a JSON pointer starting with /input/ (at most 512 chars)")
        parts = tuple(p.replace("~1", "/").replace("~0", "~") for p in text.split("/")[2:])
        if any(p == "" for p in parts):
            raise ConfigError(f"mask {text!r:.80} has an empty segment")
        return cls(text, parts)

    def erase(self, document: dict[str, Any]) -> bool:
        """Remove the member the pointer names from ``document`` (the input); True if it existed."""
        node: Any = document
        for part in self.parts[:-1]:
            node = _child(node, part)
            if node is None:
                return False
        last = self.parts[-1]
        if isinstance(node, dict) and last in node:
            del node[last]
            return True
        if isinstance(node, list) and last.isdigit() and int(last) < len(node):
            del node[int(last)]
            return True
        return False


def _child(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


@dataclass(frozen=True, slots=True)
class LogPolicy:
    """Which decisions a sidecar logs (``sample_*`` in 0..1) and which input members it masks."""

    sample_allow: float = 1.0
    sample_deny: float = 1.0
    masks: tuple[MaskPointer, ...] = ()

    def __post_init__(self) -> None:
        for name in ("sample_allow", "sample_deny"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be within 0..1")
        if len(self.masks) > MAX_MASKS:
            raise ConfigError(f"at most {MAX_MASKS} masks")

    @classmethod
    def of(cls, *, sample_allow: float = 1.0, sample_deny: float = 1.0, masks: Iterable[str] = ()) -> LogPolicy:
        return cls(sample_allow, sample_deny, tuple(MaskPointer.parse(m) for m in masks))

    def keeps(self, allow: bool, decision_id: str) -> bool:
        """Whether to log this decision: O(1), on the decision path."""
        rate = self.sample_allow if allow else self.sample_deny
        if rate >= 1.0:
            return True
        if rate <= 0.0:
            return False
        try:
            return int(decision_id[:8], 16) < rate * 0x1_0000_0000
        except ValueError:  # not a hex id (refused before the core): keep it
            return True

    def apply(self, wire: dict[str, Any]) -> dict[str, Any]:
        """Mask and scrub ``wire`` (a record from ``to_wire``) in place; returns it."""
        erased: list[str] = []
        document = wire.get("input")
        if isinstance(document, dict):
            for mask in self.masks:
                if mask.erase(document):
                    erased.append(mask.text)
            wire["input"] = scrub(document, "/input", erased, 0)
        scrub_fields(wire, erased)
        if erased:
            wire["erased"] = erased
        return wire


RECORD_TEXT_FIELDS: Final = ("subject", "action", "resource", "path", "reasons", "actor_chain", "sidecar", "door",
                              "bundle_revision")
"""A record's own members that carry caller-chosen text (a resource id, a request path...)."""


def holds_token(text: str) -> bool:
    """Whether ``text`` contains a compact JWS anywhere (cheap test first)."""
    return "eyJ" in text and _JWS.search(text) is not None


def scrub_fields(record: dict[str, Any], erased: list[str]) -> None:
    """Redact, in place, every member of :data:`RECORD_TEXT_FIELDS` (or list item) holding a token."""
    for name in RECORD_TEXT_FIELDS:
        value = record.get(name)
        if isinstance(value, str) and holds_token(value):
            record[name] = REDACTED
            erased.append(f"/{name}")
        elif isinstance(value, list) and any(isinstance(item, str) and holds_token(item) for item in value):
            record[name] = [REDACTED if isinstance(item, str) and holds_token(item) else item for item in value]
            erased += [f"/{name}/{i}" for i, item in enumerate(value) if isinstance(item, str) and holds_token(item)]


def scrub(value: Any, path: str, erased: list[str], depth: int) -> Any:
    """Replace strings holding a compact JWS, drop members whose name holds one; drop what nests
    deeper than a record may."""
    if isinstance(value, str):
        if holds_token(value):
            erased.append(path)
            return REDACTED
        return value
    if depth >= _SCRUB_DEPTH and isinstance(value, dict | list):
        erased.append(path)
        return REDACTED
    if isinstance(value, dict):
        kept = {}
        for k, v in value.items():
            if holds_token(str(k)):
                erased.append(f"{path}/{REDACTED}")
                continue
            kept[k] = scrub(v, f"{path}/{_escape(str(k))}", erased, depth + 1)
        return kept
    if isinstance(value, list | tuple):
        return [scrub(v, f"{path}/{i}", erased, depth + 1) for i, v in enumerate(value)]
    return value


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")

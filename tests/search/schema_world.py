"""A relationship schema, a policy that reads ``input.permissions`` and the tuples the
schema-search tests share (a non-test module: test modules import it, never each other).

acme's folders nest three deep (``root`` > ``mid`` > ``leaf``); ``root``'s viewers are
``group:eng``'s members, and ``eng`` holds ``group:ops``'s members. So alice (in eng) and
mallory (in ops) reach every document under ``root`` only through the hierarchy and the
groups: no tuple names them on a document. mallory is blocked on ``d3``. bob views ``solo``
directly and ``far`` through a folder of his own. globex reuses the names with another alice.
"""

from __future__ import annotations

from typing import Any

from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.decision.permissions import schema_engine
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import RelationIndex
from tenantguard.schema import load
from tenantguard.schema.engine import Limits, SchemaEngine

SCHEMA = """\
model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member, user with in_office] or viewer from parent
type doc
  relations
    define parent: [folder]
    define blocked: [user]
    define viewer: [user, user:*] or viewer from parent
    define read: viewer but not blocked
condition in_office(ip: ipaddress) {
  ip.in_cidr("10.0.0.0/8")
}
"""

POLICY = """package tenantguard
import rego.v1

default decision := false

# the schema's permissions decide documents (read: a viewer, through folders, not blocked)
decision if input.action.name in input.permissions
"""

TUPLES: list[tuple[str, str, str, str]] = [
    ("acme", "group:eng", "member", "user:alice"),
    ("acme", "group:eng", "member", "group:ops#member"),
    ("acme", "group:ops", "member", "user:mallory"),
    ("acme", "folder:root", "viewer", "group:eng#member"),
    ("acme", "folder:mid", "parent", "folder:root"),
    ("acme", "folder:leaf", "parent", "folder:mid"),
    ("acme", "doc:d1", "parent", "folder:leaf"),
    ("acme", "doc:d2", "parent", "folder:leaf"),
    ("acme", "doc:d3", "parent", "folder:leaf"),
    ("acme", "doc:d4", "parent", "folder:mid"),
    ("acme", "doc:d5", "parent", "folder:root"),
    ("acme", "doc:d3", "blocked", "user:mallory"),
    ("acme", "doc:solo", "viewer", "user:bob"),
    ("acme", "folder:other", "viewer", "user:bob"),
    ("acme", "doc:far", "parent", "folder:other"),
    ("globex", "folder:leaf", "viewer", "user:alice"),
    ("globex", "doc:g1", "parent", "folder:leaf"),
]
UNDER_ROOT = ["doc:d1", "doc:d2", "doc:d3", "doc:d4", "doc:d5"]
RELATIONSHIPS = [f"{t}/{o}#{r}@{s}" for t, o, r, s in TUPLES]  # the relations file's spelling


def revision(schema: SchemaEngine | None = None, policy: str = POLICY) -> PolicyRevision:
    prepared = RegorusEngine().prepare({"p.rego": policy}, {}, extensions=RELATED_EXTENSION,
                                       entrypoints=("data.tenantguard.decision",))
    return PolicyRevision("r1", prepared, entrypoint="data.tenantguard.decision",
                          schema=schema or schema_engine(load(SCHEMA, "schema.fga")))


def engine(limits: Limits | None = None) -> SchemaEngine:
    return SchemaEngine(load(SCHEMA, "schema.fga"), limits)


def core_of(tuples: list[Any], rev: PolicyRevision | None = None) -> DecisionCore:
    core = DecisionCore("docs", RelationIndex.from_trusted(1, tuples))
    core.activate(rev or revision())
    return core


def pep(uid: str | None = None, tenant: str = "acme") -> dict[str, Any]:
    """A subject as the local PEP states it (no token)."""
    return {"type": "user", **({"id": uid} if uid else {}), "properties": {"tenant_id": tenant}}


def allowed(core: DecisionCore, uid: str, obj: str, action: str = "read", tenant: str = "acme",
            **context: Any) -> bool:
    """The check: what every search result must agree with."""
    kind, _, ident = obj.partition(":")
    return core.decide(DecisionRequest.from_wire({"subject": pep(uid, tenant), "action": {"name": action},
                                                  "resource": {"type": kind, "id": ident},
                                                  "context": context})).allow

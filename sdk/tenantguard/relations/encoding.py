"""Safe, reversible encoding of tuples into NATS subjects and JetStream KV keys.

Layout (every part its own token, so consumers filter with ordinary wildcards)::

    KV key   <tenant>.<object_type>.<enc(object_id)>.<relation>.<subject_type>.<enc(subject_id)>.<subject_relation or _>
    subject  tg.rel.<KV key>
    filters  tg.rel.<tenant>.>                       (tenant_subject)
             tg.rel.<tenant>.<type>.<enc(id)>        (object_subject; add ".>" for its tuples)

Names (tenant, types, relations) already match ``[a-z][a-z0-9_]*`` and go in verbatim.
Ids are the only parts that can hold ``.``, ``@``, ``+``, ``=`` or ``|``; they are
escaped quoted-printable style: ``[A-Za-z0-9_-]`` stay as they are, every other
character becomes ``=`` plus two uppercase hex digits (``alice@example.com`` ->
``alice=40example=2Ecom``).

Why this scheme rather than base32/base64url: common ids (slugs, UUIDs, numbers) stay
byte-for-byte readable in ``nats sub`` and ``nats kv ls``, and keep their length; the
output alphabet ``[A-Za-z0-9_=-]`` lies inside both the NATS token and the KV key
alphabets; and injectivity is easy to see. The code is prefix-free (a verbatim
character is never ``=``, an escape is always exactly three characters), so an encoded id
decodes in exactly one way; tokens never contain ``.`` and a key always has seven
non-empty tokens, so the joined key decodes in exactly one way too. The missing subject
relation is written ``_``, which can never be a relation name (those start with a
letter). Decoding accepts only the canonical form (uppercase hex, escapes only for the
five characters that need one), so ``decode`` is the exact inverse of ``encode``.

A wildcard subject ``user:*`` has the id ``*``, which is a NATS wildcard: it is escaped
too (``=2A``), and only a whole subject-id token may decode to it (no object id and no
other id contains ``*``).
"""

from __future__ import annotations

import re

from tenantguard.relations.errors import RelationshipInvalid
from tenantguard.relations.model import WILDCARD, Relationship, check_id, check_name, split_object

SUBJECT_PREFIX = "tg.rel"
NO_SUBJECT_RELATION = "_"
KEY_TOKENS = 7

_VERBATIM_RE = re.compile(r"[A-Za-z0-9_-]+")
_WILDCARD_TOKEN = "=2A"
_ESCAPED = {c: f"={ord(c):02X}" for c in ".@+=|"}
_UNESCAPED = {v: k for k, v in _ESCAPED.items()}
_TOKEN_RE = re.compile(r"(?:[A-Za-z0-9_-]|=2E|=40|=2B|=3D|=7C){1,256}")
_ESCAPE_RE = re.compile(r"=(?:2E|40|2B|3D|7C)")


def encode_id(value: str) -> str:
    """Encode a (validated) object or subject id as one subject token / key segment."""
    check_id("id", value)
    if _VERBATIM_RE.fullmatch(value):
        return value
    return "".join(_ESCAPED.get(c, c) for c in value)


def decode_id(token: str) -> str:
    """Invert :func:`encode_id`; reject anything ``encode_id`` cannot have produced."""
    if not isinstance(token, str) or _TOKEN_RE.fullmatch(token) is None:
        raise RelationshipInvalid(f"{token!r:.80} is not an encoded id", field="id")
    return check_id("id", _ESCAPE_RE.sub(lambda m: _UNESCAPED[m.group(0)], token))


def _encode_subject_id(value: str) -> str:
    return _WILDCARD_TOKEN if value == WILDCARD else encode_id(value)


def _decode_subject_id(token: str) -> str:
    return WILDCARD if token == _WILDCARD_TOKEN else decode_id(token)


def relationship_key(rel: Relationship) -> str:
    """The JetStream KV key of a tuple: seven tokens, injective, KV-safe."""
    obj_type, _, obj_id = rel.object.partition(":")
    subj, _, subj_rel = rel.subject.partition("#")
    subj_type, _, subj_id = subj.partition(":")
    return ".".join(
        (
            rel.tenant,
            obj_type,
            encode_id(obj_id),
            rel.relation,
            subj_type,
            _encode_subject_id(subj_id),
            subj_rel or NO_SUBJECT_RELATION,
        )
    )


def relationship_from_key(key: str) -> Relationship:
    """Invert :func:`relationship_key`."""
    tokens = key.split(".") if isinstance(key, str) else []
    if len(tokens) != KEY_TOKENS:
        raise RelationshipInvalid(f"{key!r:.80} is not a relationship key ({KEY_TOKENS} tokens)")
    tenant, obj_type, obj_id, relation, subj_type, subj_id, subj_rel = tokens
    subject = f"{subj_type}:{_decode_subject_id(subj_id)}"
    if subj_rel != NO_SUBJECT_RELATION:
        subject += f"#{subj_rel}"
    return Relationship(tenant, f"{obj_type}:{decode_id(obj_id)}", relation, subject)


def relationship_subject(rel: Relationship) -> str:
    """The NATS subject a change to this tuple is published on."""
    return f"{SUBJECT_PREFIX}.{relationship_key(rel)}"


def relationship_from_subject(subject: str) -> Relationship:
    """Invert :func:`relationship_subject`."""
    prefix = SUBJECT_PREFIX + "."
    if not isinstance(subject, str) or not subject.startswith(prefix):
        raise RelationshipInvalid(f"{subject!r:.80} does not start with {prefix!r}")
    return relationship_from_key(subject[len(prefix) :])


def tenant_subject(tenant: str) -> str:
    """The filter subject matching every tuple of one tenant (``tg.rel.<tenant>.>``)."""
    return f"{SUBJECT_PREFIX}.{check_name('tenant', tenant)}.>"


def tenant_key_filter(tenant: str) -> str:
    """The KV watch filter matching every key of one tenant (``<tenant>.>``)."""
    return f"{check_name('tenant', tenant)}.>"


def object_subject(tenant: str, object: str) -> str:
    """The subject prefix of one object's tuples; append ``.>`` to filter on them."""
    obj_type, obj_id = split_object("object", object)
    return f"{SUBJECT_PREFIX}.{check_name('tenant', tenant)}.{obj_type}.{encode_id(obj_id)}"

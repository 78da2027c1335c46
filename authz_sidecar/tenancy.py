"""Who asks, and in which tenant a question is asked: read before deciding, by every door.

A caller is bound to a tenant by its token, its PEP key or the sidecar's ``--tenant``,
never by the request body; these helpers say which tenant that is and make a body agree
with it (the doors and :meth:`authz_sidecar.runtime.Sidecar.decide` share them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenantguard.identity.tokens import Claims


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: a verified token's claims, or (without one) the tenant the caller is bound to.

    ``tenant`` comes from the caller's PEP key or the sidecar's ``--tenant``, never from the
    request; ``pep`` names the PEP key used, for logs.
    """

    claims: Claims | None
    tenant: str | None = None
    pep: str | None = None


def bind_tenant(wire: Mapping[str, Any], tenant: str) -> tuple[Mapping[str, Any], bool]:
    """``wire`` with ``subject.properties.tenant_id`` set to the caller's bound ``tenant``,
    and whether the body agreed (named no tenant, or this one). Copies, never mutates."""
    subject = wire.get("subject")
    if not isinstance(subject, Mapping):
        return wire, True  # the shape check that follows answers 400
    props = subject.get("properties")
    if props is None:
        props = {}
    if not isinstance(props, Mapping):
        return wire, True
    stated = props.get("tenant_id")
    if stated is not None and stated != tenant:
        return wire, False
    return {**wire, "subject": {**subject, "properties": {**props, "tenant_id": tenant}}}, True


def question_tenant(wire: Mapping[str, Any], claims: Claims | None, bound: str | None = None) -> str | None:
    """The tenant whose relations a decision on ``wire`` reads, as far as it can be told
    before deciding: the token's, else the caller's bound one (PEP key, ``--tenant``), else
    the subject's stated ``tenant_id`` (None: not stated; such a question is denied
    ``tenant_unknown``). Never the resource's: an act-as decision reads the subject's
    tenant's relations, so an ``at_least`` waited for in the resource's cell would promise
    a state the decision never read."""
    if claims is not None:
        return claims.tenant_id
    if bound is not None:
        return bound
    entity = wire.get("subject")
    props = entity.get("properties") if isinstance(entity, Mapping) else None
    tenant = props.get("tenant_id") if isinstance(props, Mapping) else None
    return tenant if isinstance(tenant, str) and tenant else None

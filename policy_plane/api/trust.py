"""Trust API: the token trust set as JWKS, admin changes to issuer keys, sidecar key registration."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from tenantguard.errors import InvalidInput
from tenantguard.feed.topology import sidecar_issuer

from ..config import SERVICE_RE
from ..trust import add_issuer_key, add_sidecar_key, refuse_revoked, remove_key
from .auth import Principal, plane_of, require_admin, require_sidecar

router = APIRouter(tags=["trust"])


class KeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jwk: dict[str, Any] = Field(description="Public JWK (OKP Ed25519, EC P-256 or RSA >= 2048 bits)")
    not_after: int | None = Field(default=None, strict=True, ge=0,
                                  description="Epoch seconds after which the key is not trusted")


class TrustOut(BaseModel):
    kid: str
    issuer: str
    trust_seq: int
    changed: bool


@router.get("/.well-known/jwks.json")
async def jwks(request: Request) -> dict[str, Any]:
    """The token trust set: every key carries ``iss`` (and ``exp`` when it has a not-after time)."""
    return plane_of(request).state.trust.to_jwks()


@router.post("/v1/trust/issuers", response_model=TrustOut)
async def add_issuer(body: KeyIn, request: Request,
                     who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """Trust one more issuer key (the JWK names its issuer in ``iss``). Rotation: add the new, later remove the old."""
    plane = plane_of(request)
    kid = refuse_revoked(body.jwk, plane.state.revocation_list.kids)
    seq, changed = await plane.change_trust(lambda current: add_issuer_key(current, body.jwk, body.not_after))
    issuer = str(body.jwk.get("iss"))
    plane.audit.record(who.actor, "trust.add_issuer_key", kid=kid, issuer=issuer, not_after=body.not_after,
                       trust_seq=seq, changed=changed)
    return {"kid": kid, "issuer": issuer, "trust_seq": seq, "changed": changed}


@router.delete("/v1/trust/keys/{kid}")
async def delete_key(request: Request, who: Annotated[Principal, Depends(require_admin)],
                     kid: Annotated[str, Path(max_length=128)]) -> dict[str, Any]:
    """Stop trusting a key (404 when it is not trusted)."""
    plane = plane_of(request)
    trusted = plane.state.trust.get(kid)
    issuer = trusted.issuer if trusted is not None else None
    seq, _ = await plane.change_trust(lambda current: remove_key(current, kid))
    plane.audit.record(who.actor, "trust.remove_key", kid=kid, issuer=issuer, trust_seq=seq)
    return {"kid": kid, "removed": True, "trust_seq": seq}


@router.post("/v1/trust/sidecars/{service}/keys", response_model=TrustOut)
async def register_sidecar_key(body: KeyIn, request: Request,
                               service: Annotated[str, Path(max_length=63)]) -> dict[str, Any]:
    """A sidecar registers the public key it generated (``Authorization: Bearer <join secret>``).

    The key is trusted for issuer ``sidecar:<service>`` only, until ``not_after`` when given
    (sidecars register with one and refresh it while they run). Registering the same key
    with the same ``not_after`` changes nothing; a later one extends it. A revoked kid is
    refused (409 ``key_revoked``): the sidecar must rotate.
    """
    if SERVICE_RE.fullmatch(service) is None or service == "all":
        raise InvalidInput(f"service must match {SERVICE_RE.pattern}", field="service")
    who = await require_sidecar(request, service)
    plane = plane_of(request)
    kid = refuse_revoked(body.jwk, plane.state.revocation_list.kids)
    seq, changed = await plane.change_trust(lambda current: add_sidecar_key(current, service, body.jwk,
                                                                            body.not_after))
    plane.audit.record(who.actor, "trust.register_sidecar_key", service=service, kid=kid, trust_seq=seq,
                       changed=changed)
    return {"kid": kid, "issuer": sidecar_issuer(service), "trust_seq": seq, "changed": changed}

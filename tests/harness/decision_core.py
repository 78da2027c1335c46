"""Questions for the decision core in process: claims as a verified token carries them, an invoice
question, one decision, and a high-risk confirmer that answers as told."""

from __future__ import annotations

import time
from typing import Any

from tenantguard.decision.core import DecisionCore, DecisionRequest
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import Claims


def claims(sub: str = "alice", tenant: str = "acme", roles: tuple[str, ...] = ("editor",), **kw: Any) -> Claims:
    now = time.time()
    return Claims(iss="edge", sub=sub, tenant_id=tenant, aud=("billing",), exp=now + 60, iat=now, nbf=now,
                  jti="j", roles=roles, kid=SigningKey.generate().kid, raw={"sub": sub, "tenant_id": tenant}, **kw)


def question(tenant: str = "acme", action: str = "invoices:read", project: str = "p1", **extra: Any) -> dict[str, Any]:
    return {"action": {"name": action},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}},
            **extra}


def decide(core: DecisionCore, body: dict[str, Any], c: Claims | None) -> Any:
    return core.decide(DecisionRequest.from_wire(body, c))


class Confirmer:
    """A high-risk confirmer that answers as told (or raises it), counting the calls."""

    def __init__(self, answer: bool | Exception) -> None:
        self.answer = answer
        self.calls = 0

    def confirm(self, request: DecisionRequest, tenant: str) -> bool:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

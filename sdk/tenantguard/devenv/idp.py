"""A local demo identity provider: one realm per tenant, JWKS over real HTTP, a token minter.

Each tenant's IdP has its own issuer URL and key (acme RS256, globex ES256, as real
tenants bring different IdPs). The edge sidecar fetches ``/<realm>/jwks`` itself and
derives the tenant from the issuer that verified the token, so this is exactly the part
a real deployment replaces with Keycloak, Entra ID, Auth0...
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tenantguard.identity.keys import public_jwk

AUDIENCE: Final = "edge-app"  # the client id the edge application is registered with at each IdP


@dataclass(frozen=True)
class Realm:
    """One tenant's IdP: issuer, signing key and the kid it publishes."""

    name: str
    issuer: str
    alg: str
    key: Any

    @property
    def kid(self) -> str:
        return f"{self.name}-1"

    def jwks(self) -> dict[str, Any]:
        return {"keys": [{**public_jwk(self.key.public_key()), "kid": self.kid, "alg": self.alg, "use": "sig"}]}

    def token(self, sub: str, groups: list[str], lifetime: int = 300) -> str:
        """What the user's browser would bring back from the login page."""
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": sub, "aud": AUDIENCE, "iat": now, "exp": now + lifetime,
                  "jti": uuid.uuid4().hex, "groups": groups}
        return jwt.encode(claims, self.key, algorithm=self.alg, headers={"kid": self.kid})


class DemoIdP:
    """``GET /<realm>/jwks`` on a free loopback port, served from a daemon thread."""

    def __init__(self) -> None:
        self.realms: dict[str, Realm] = {}
        self.fetches = 0
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name, _, rest = self.path.strip("/").partition("/")
                realm = idp.realms.get(name)
                if realm is None or rest != "jwks":
                    self.send_error(404)
                    return
                idp.fetches += 1
                body = json.dumps(realm.jwks()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="demo-idp", daemon=True)
        self._thread.start()

    def add_realm(self, name: str, alg: str) -> Realm:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if alg == "RS256" else (
            ec.generate_private_key(ec.SECP256R1()))
        realm = Realm(name, f"{self.base}/{name}", alg, key)
        self.realms[name] = realm
        return realm

    def edge_config(self) -> dict[str, Any]:
        """The edge sidecar's ``--edge-config``: each tenant's issuer, JWKS, audience and claim mapping."""
        return {
            "tenants": [{"tenant_id": r.name, "issuer": r.issuer, "jwks_uri": f"{r.issuer}/jwks", "audience": AUDIENCE,
                         "algorithms": [r.alg], "claims": {"sub": "sub", "roles": "groups"}}
                        for r in self.realms.values()],
            "jwks_ttl": 300, "min_refetch_interval": 1, "http_timeout": 2,
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

"""A real local identity provider: an HTTP server publishing JWKS, and a token minter.

Each tenant's IdP has its own issuer URL and RSA (or other) keys; the server counts
JWKS fetches per path and can be told to answer slowly or with an oversized document,
so the edge verifier's cache, refetch limit, timeout and size bound are tested on the wire.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from tenantguard.identity.keys import public_jwk

from tests.harness.forged_tokens import signed_text

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


def new_key(alg: str = "RS256") -> PrivateKey:
    if alg == "RS256":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if alg == "ES256":
        return ec.generate_private_key(ec.SECP256R1())
    return ed25519.Ed25519PrivateKey.generate()


@dataclass
class Realm:
    """One tenant's IdP: issuer URL, published keys by kid, and the audience it issues for."""

    name: str
    issuer: str
    keys: dict[str, tuple[str, PrivateKey]] = field(default_factory=dict)  # kid -> (alg, key)
    published: set[str] = field(default_factory=set)

    def add_key(self, kid: str, alg: str = "RS256", *, publish: bool = True) -> None:
        self.keys[kid] = (alg, new_key(alg))
        if publish:
            self.published.add(kid)

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid in sorted(self.published):
            alg, key = self.keys[kid]
            out.append({**public_jwk(key.public_key()), "kid": kid, "alg": alg, "use": "sig"})
        return {"keys": out}

    def token(self, *, kid: str | None = None, aud: str = "edge-app", sub: str = "alice",
              lifetime: int = 300, headers: dict[str, Any] | None = None, **claims: Any) -> str:
        kid = kid or next(iter(self.keys))
        alg, key = self.keys[kid]
        now = int(time.time())
        payload = {"iss": self.issuer, "sub": sub, "aud": aud, "iat": now, "exp": now + lifetime,
                   "groups": ["editor"], **claims}
        if alg == "Ed25519":  # RFC 9864's name for EdDSA over Ed25519, which PyJWT does not sign under
            header = {"alg": alg, "typ": "JWT", "kid": kid, **(headers or {})}
            return signed_text(key, json.dumps(header), json.dumps(payload))
        return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid, **(headers or {})})


class LocalIdP:
    """``GET /<realm>/jwks`` over real HTTP on a free loopback port."""

    def __init__(self) -> None:
        self.realms: dict[str, Realm] = {}
        self.fetches: dict[str, int] = {}
        self.delay = 0.0
        self.oversize = False
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name, _, rest = self.path.strip("/").partition("/")
                realm = idp.realms.get(name)
                if realm is None or rest != "jwks":
                    self.send_error(404)
                    return
                idp.fetches[name] = idp.fetches.get(name, 0) + 1
                if idp.delay:
                    time.sleep(idp.delay)
                body = json.dumps(realm.jwks()).encode()
                if idp.oversize:
                    body = json.dumps({"keys": [], "pad": "x" * 100_000}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)  # the verifier may hang up on purpose (size bound, timeout)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def realm(self, name: str, alg: str = "RS256") -> Realm:
        realm = Realm(name, f"{self.base}/{name}")
        realm.add_key(f"{name}-k1", alg)
        self.realms[name] = realm
        return realm

    def jwks_uri(self, name: str) -> str:
        return f"{self.base}/{name}/jwks"

    def tenant_config(self, name: str, tenant: str, **extra: Any) -> dict[str, Any]:
        realm = self.realms[name]
        alg = next(iter(realm.keys.values()))[0]
        return {"tenant_id": tenant, "issuer": realm.issuer, "jwks_uri": self.jwks_uri(name),
                "audience": "edge-app", "algorithms": [alg], "claims": {"sub": "sub", "roles": "groups"}, **extra}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

"""Context-token costs: mint, uncached verify, cached verify, next to the raw signature verify.

Run: python bench/bench_tokens.py [--iterations N]
The raw `cryptography` verify of the same signature is measured in the same run, so the
verifier's own overhead can be read off directly (target: uncached EdDSA within 1.5x).
"""

from __future__ import annotations

import argparse
import base64
import platform
from collections.abc import Callable

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from stats import measure  # bench/stats.py, beside this script
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, mint


def raw_verifier(key: SigningKey, token: str) -> Callable[[], None]:
    """The bare signature check the JWT library ends up doing, without any JWT handling."""
    head, payload, sig = token.split(".")
    message = f"{head}.{payload}".encode()
    signature = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    public = key.public_key
    if key.alg == "EdDSA":
        return lambda: public.verify(signature, message)  # type: ignore[call-arg, arg-type]
    if key.alg == "RS256":
        return lambda: public.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())  # type: ignore[call-arg, arg-type]
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    der = encode_dss_signature(r, s)
    return lambda: public.verify(der, message, ec.ECDSA(hashes.SHA256()))  # type: ignore[call-arg, arg-type]


def run(iterations: int) -> list[tuple[str, str, float, float]]:
    rows = []
    for alg in ("EdDSA", "ES256", "RS256"):
        key = SigningKey.generate(alg)  # type: ignore[arg-type]
        trust = TrustSet()
        trust.add_public_key(key.public_key, "edge")
        verifier = TokenVerifier(trust, VerifyOptions(audience="orders", algorithms=frozenset({alg})))
        args = dict(issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                    roles=["editor"], scope="orders:read orders:write")
        token = mint(key, **args)  # type: ignore[arg-type]
        verifier.verify(token)
        rows.append((alg, "mint", *measure(lambda: mint(key, **args), iterations)))  # type: ignore[arg-type]  # noqa: B023
        rows.append((alg, "raw cryptography verify", *measure(raw_verifier(key, token), iterations)))
        rows.append((alg, "verify, uncached", *measure(lambda: verifier._verify_uncached(token), iterations)))  # noqa: B023
        rows.append((alg, "verify, cached", *measure(lambda: verifier.verify(token), iterations * 10)))  # noqa: B023
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=3000)
    ns = parser.parse_args()
    rows = run(ns.iterations)
    print(f"# context tokens ({platform.python_implementation()} {platform.python_version()}, "
          f"{ns.iterations} iterations, cached x10)\n")
    print("| alg | operation | median µs | p99 µs |\n|---|---|---:|---:|")
    for alg, op, median, p99 in rows:
        print(f"| {alg} | {op} | {median:.1f} | {p99:.1f} |")
    raw = {alg: med for alg, op, med, _ in rows if op == "raw cryptography verify"}
    print()
    for alg, op, median, _ in rows:
        if op == "verify, uncached":
            print(f"{alg}: uncached verify / raw verify = {median / raw[alg]:.2f}x")


if __name__ == "__main__":
    main()

"""Who is asking: signing keys and trust sets, context tokens, revocations, edge (OIDC) verification."""

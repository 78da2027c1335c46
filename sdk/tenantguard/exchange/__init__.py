"""RFC 8693 token exchange: the request model, the policy question, the minting rules.

A sidecar exchanges the context token its service received (the *subject token*, whose
``aud`` is this service) for a new context token for the next service (the *target*).
The library does all of it; the HTTP door (``POST /oauth2/token``) only parses the form
and renders the OAuth answer. Rules, each enforced here in Python even where the policy
also enforces it (one bug alone must not widen a token):

* the subject token is verified by this service's :class:`~tenantguard.identity.tokens.TokenVerifier`
  (or, in edge mode, by :class:`~tenantguard.identity.oidc.EdgeVerifier` against a tenant's IdP);
* ``may_act`` in the subject token, when present, must name this actor (RFC 8693 4.4);
* the actor chain grows by exactly one hop and never past ``max_act_depth``;
* the policy (``data.tenantguard.exchange.decision``) must allow this service to call the
  target on behalf of this tenant with the requested scope;
* scope is only ever narrowed: granted ⊆ requested ⊆ the subject's scope (when it has one);
* ``exp`` is never later than the subject token's, and the lifetime is at most
  min(configured lifetime, the policy's ``max_lifetime``);
* same ``sub``/``tenant_id``/``roles``, ``aud`` = target, new ``jti``,
  ``act`` = ``{"sub": "svc:<this service>", "act": <previous chain>}`` (RFC 8693 4.1),
  ``iss`` = ``sidecar:<this service>``, signed with this sidecar's own key;
* ``tg_chain`` = the subject token's ``tg_chain`` + its ``jti``, ``tg_chain_kids`` = the
  subject token's ``tg_chain_kids`` + its ``kid``, and ``tg_root_iat`` = the root token's
  ``iat``: every verifier refuses the new token as soon as any token it descends from, or
  any key that signed one of them, is revoked, or its subject or tenant is cut off after
  the root was issued;
* no exchange at all while the subject's tenant is under the kill switch, whatever the
  subject token's ``iat``.

Errors are OAuth's (RFC 6749 5.2, RFC 8693 2.2.2): each :class:`ExchangeError` carries the
``error`` value and HTTP status. RFC 8693 2.2.2 says an invalid or unacceptable subject
token MUST be answered with ``invalid_request`` (not ``invalid_grant``), so it is; the
tenantguard code that says why (``token_expired``, ``audience_invalid`` ...) leads the
``error_description``.

The package: ``oauth`` (the wire: constants, OAuth errors, scopes, request model, client
authentication), ``keys`` (the signing key's storage and registration), ``exchanger`` (the
policy questions, the subject, :class:`TokenExchanger`). Every name is importable from
``tenantguard.exchange`` as before the split.
"""

from __future__ import annotations

from .exchanger import (
    ExchangeResult,
    ExchangeVerdict,
    Subject,
    TokenExchanger,
    exchange_input,
    propagation_mode,
)
from .keys import (
    KEY_FILE,
    KeyRegistrar,
    LocalTrustOnly,
    load_or_create_signing_key,
    replace_signing_key,
)
from .oauth import (
    EXCHANGE_ENTRYPOINT,
    GRANT_TYPE_TOKEN_EXCHANGE,
    ISSUED_TOKEN_TYPES,
    MAX_FORM_FIELDS,
    MAX_SCOPE_LENGTH,
    MAX_SCOPES,
    PROPAGATION_ENTRYPOINT,
    PROPAGATION_MODES,
    SERVICE_NAME,
    SUBJECT_TOKEN_TYPES,
    TOKEN_TYPE_ACCESS_TOKEN,
    TOKEN_TYPE_ID_TOKEN,
    TOKEN_TYPE_JWT,
    ExchangeError,
    ExchangeRequest,
    InvalidClient,
    InvalidRequest,
    InvalidScope,
    InvalidTarget,
    PropagationMode,
    TemporarilyUnavailable,
    UnauthorizedClient,
    UnsupportedGrantType,
    all_covered,
    check_client_basic,
    parse_form,
    parse_scope,
    read_client_secret,
    scope_covers,
)

__all__ = [
    "EXCHANGE_ENTRYPOINT",
    "GRANT_TYPE_TOKEN_EXCHANGE",
    "ISSUED_TOKEN_TYPES",
    "KEY_FILE",
    "MAX_FORM_FIELDS",
    "MAX_SCOPES",
    "MAX_SCOPE_LENGTH",
    "PROPAGATION_ENTRYPOINT",
    "PROPAGATION_MODES",
    "SERVICE_NAME",
    "SUBJECT_TOKEN_TYPES",
    "TOKEN_TYPE_ACCESS_TOKEN",
    "TOKEN_TYPE_ID_TOKEN",
    "TOKEN_TYPE_JWT",
    "ExchangeError",
    "ExchangeRequest",
    "ExchangeResult",
    "ExchangeVerdict",
    "InvalidClient",
    "InvalidRequest",
    "InvalidScope",
    "InvalidTarget",
    "KeyRegistrar",
    "LocalTrustOnly",
    "PropagationMode",
    "Subject",
    "TemporarilyUnavailable",
    "TokenExchanger",
    "UnauthorizedClient",
    "UnsupportedGrantType",
    "all_covered",
    "check_client_basic",
    "exchange_input",
    "load_or_create_signing_key",
    "parse_form",
    "parse_scope",
    "propagation_mode",
    "read_client_secret",
    "replace_signing_key",
    "scope_covers",
]

# METADATA
# title: token exchange decision
# description: |
#   The entrypoint data.tenantguard.exchange.decision, asked by a sidecar before it
#   mints an RFC 8693 token for the next hop. Input:
#     {"subject": {...}, "actor": {"service": "orders"}, "audience": "billing",
#      "scope": ["invoices:read"], "actor_chain": ["svc:edge"]}
#   Output: {"allow", "reasons", "scope" (granted, a subset of the requested),
#            "max_lifetime" (seconds, from the audience's trust zone)}.
#   The rules are the same config.calls lines the decision uses: a service may
#   exchange towards an audience exactly when that audience accepts its calls.
package tenantguard.exchange

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

# Like data.tenantguard.decision, the answer reads `deny`: a deny rule added in any file
# of this package takes effect on every exchange.
decision := {
	"allow": allow,
	"reasons": sort(deny),
	"scope": granted_scope,
	"max_lifetime": max_lifetime,
}

default allow := false

allow if {
	count(deny) == 0
	count(granted) > 0
}

# Request fields: direct references with a default (see decision.rego).
default source := ""

source := input.actor.service

default audience := ""

audience := input.audience

default actor_chain := []

actor_chain := input.actor_chain if is_array(input.actor_chain)

default subject_tenant := ""

subject_tenant := input.subject.properties.tenant_id

rule_scopes := lib.call_scopes(source, audience)

requested := {s | some s in lib.array_or_empty(input.scope); is_string(s)}

subject_scope := input.subject.properties.scope

# What the new token may carry: the requested scopes (or, when none are requested,
# the subject's own, else the rule's), each covered by the rule and by the subject's
# scope. A scope is only ever narrowed.
candidates := requested if {
	count(requested) > 0
} else := lib.scope_set(subject_scope) if {
	subject_scope != null
} else := {s | some s in rule_scopes}

granted contains s if {
	some s in candidates
	lib.any_covers(rule_scopes, s)
	within_subject_scope(s)
}

within_subject_scope(s) if not subject_scope

within_subject_scope(s) if subject_scope == null

within_subject_scope(s) if lib.any_covers(lib.scope_set(subject_scope), s)

granted_scope := sort(granted) if {
	allow
} else := []

max_lifetime := config.zones[lib.zone_of(audience)].max_lifetime if {
	allow
} else := 0

deny contains "invalid_input" if not lib.valid_id(source)

deny contains "invalid_input" if not lib.valid_id(audience)

# A request that is not an object has no source either, so it is reported above.
deny contains "invalid_input" if {
	scope := input.scope
	not is_array(scope)
}

deny contains "invalid_input" if {
	chain := input.actor_chain
	not is_array(chain)
}

deny contains "missing_tenant" if not lib.valid_id(subject_tenant)

deny contains "unknown_service" if not lib.zone_of(source)

deny contains "unknown_service" if not lib.zone_of(audience)

deny contains "audience_not_allowed" if not rule_scopes

deny contains "scope_not_allowed" if {
	rule_scopes
	count(granted) == 0
}

# The new token nests the current chain under this actor: one more hop.
deny contains "actor_chain_too_deep" if count(actor_chain) + 1 > config.max_actor_chain

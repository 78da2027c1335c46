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

# A well-formed request whose every requested scope the call rule and the subject's
# scope both list is answered in one body, with one data reference and no function or
# rule calls (each costs ~2-5 us); anything else falls through to the complete rules,
# which give the reasons. tests/policy/test_fast_paths.py checks the two agree on any
# request.
decision := {"allow": true, "reasons": [], "scope": scope, "max_lifetime": lifetime} if {
	# Cheap type checks, as in decision.rego: `"" < x; x < []` holds exactly for a
	# non-empty string, `[] <= x; x < {}; x < set()` exactly for an array.
	source_name := input.actor.service
	"" < source_name
	source_name < []
	audience_name := input.audience
	"" < audience_name
	audience_name < []
	props := input.subject.properties
	tenant := props.tenant_id
	"" < tenant
	tenant < []
	requested := input.scope
	[] <= requested
	requested < {}
	requested < set()
	chain := input.actor_chain
	[] <= chain
	chain < {}
	chain < set()
	cfg := data.tenantguard.config # one data reference, then local lookups
	zone := cfg.services[audience_name]
	cfg.services[source_name]
	callers := cfg.calls[audience_name] # one variable key per reference (bundles/README.md, 10)
	rule := callers[source_name]
	[] <= rule
	rule < {}
	rule < set()
	count(chain) + 1 <= cfg.max_actor_chain # the new token adds one hop
	limit := fast_subject_limit(props, rule)

	# Every requested scope, each a non-empty string listed as is by the rule and the
	# subject's scope (so covered by both); duplicates or anything else fall through.
	scope := sort({s | some s in requested; "" < s; s < []; s in rule; s in limit})
	count(scope) == count(requested)
	scope != []
	lifetime := cfg.zones[zone].max_lifetime
} else := full_decision

# What the subject's scope lets through, as a collection to test membership in: the rule's
# own scopes when it has none (absent or null), else its items (a space-separated string
# or an array). Any other value is undefined, and the request takes the complete rules.
fast_subject_limit(props, rule) := rule if {
	not props.scope != null
} else := split(props.scope, " ") if {
	"" < props.scope
	props.scope < []
} else := props.scope if {
	[] <= props.scope
	props.scope < {}
	props.scope < set()
}

full_decision := {
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

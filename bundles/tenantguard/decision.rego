# METADATA
# title: tenantguard decision
# description: |
#   The entrypoint data.tenantguard.decision. Input is an AuthZEN 1.0 shaped request
#   plus the verified token, the actor chain and the subject's relations in its tenant
#   (see bundles/README.md). Output: {"allow", "reasons", "high_risk"}.
#
#   Every check lives in its own file and adds a stable short string to `deny`;
#   the request is allowed only when something grants it and nothing denies it.
#
#   The decision is on every request's path, so it is evaluated in two steps
#   (bundles/README.md, "How to keep a policy fast"):
#
#   1. The fast branches: a few rule bodies (`else`), each recognising common requests
#      whose answer only one outcome of the complete rules can be: a user calling
#      directly in its own tenant with no scope (allowed, or denied for missing_role:
#      one body for both); another tenant's resource asked directly (tenant_mismatch);
#      a service call or a scope that covers the action (allowed, or missing_role),
#      read from the input facts `actor_services` and `scope_limits`. Each reads input
#      and data directly, binds data once, and writes an "or" as comprehensions rather
#      than as a function call; the checks that tell the branches apart come first in
#      each. So a decision costs ~20-40 us instead of ~120-250 us. They are only ever a
#      shortcut: whenever one holds, the complete rules below give the same answer
#      (fast_path_test.rego and tests/policy/test_fast_paths.py pin that).
#   2. Everything else falls through to `full_decision`, which evaluates every check
#      and gives the reasons for a deny. It is slower, and only runs for the requests
#      the fast path does not recognise (denies, act-as, service calls, scoped tokens,
#      admins on projects they are not members of, ...).
package tenantguard

import rego.v1

import data.tenantguard.lib

decision := {"allow": granted, "reasons": reasons, "high_risk": false} if {
	# A user calling directly in its own tenant with no scope: allowed when one of its
	# roles holds the action's verb, else denied for missing_role (denies are as cheap
	# as allows, so a flood of denied requests costs no more than allowed ones).
	# The checks that tell the other fast branches apart come first, so a request for
	# another branch leaves this one after a few comparisons.
	input.actor_chain == []
	subject := input.subject
	props := subject.properties
	tenant := props.tenant_id
	input.resource.properties.tenant_id == tenant
	not input.token.scope != null
	not props.scope != null

	# Cheap type checks: Rego orders values of different types (null < booleans <
	# numbers < strings < arrays < objects and sets), so `"" < x; x < []` holds exactly
	# for a non-empty string, and `[] <= x; x < {}; x < set()` exactly for an array.
	# A comparison costs ~0.1 us, a builtin call such as is_string(x) ~1 us.
	"" < tenant
	tenant < []
	"" < subject.id
	subject.id < []
	subject.type != "service"
	action := input.action.name
	"" < action
	action < []
	cfg := data.tenantguard.config # one data reference (~2 us), then local lookups
	not cfg.actions[action] # an ordinary "<resource>:<verb>" action, not high-risk
	[_, verb_name] := split(action, ":")
	verb := cfg.verbs[verb_name]
	roles := props.roles
	[] <= roles
	roles < {}
	roles < set()
	# The resource is in no project (absent or null: `resource_project == null` in
	# relations.rego), or in one the subject holds one of config.project_relations on:
	# the project, if any, equals the project the subject is a member of, if any. Two
	# comprehensions cost less than a function call for the "or".
	resource_props := input.resource.properties
	{p | p := resource_props.project; p != null} == {p |
		p := resource_props.project
		"" < p
		p < []
		held := input.relations[concat(":", ["project", p])]
		[] <= held
		held < {}
		held < set()
		held[_] in cfg.project_relations
	}

	# Whether a role holds the verb, as a value: two comprehensions cost ~1 us, a second
	# rule body for the deny, repeating the checks above, ~15 us.
	granted := [role | some role in roles; verb in cfg.roles[role]] != []
	reasons := [reason | not granted; reason := "missing_role"]
} else := {"allow": false, "reasons": ["tenant_mismatch"], "high_risk": false} if {
	# Another tenant's resource, asked directly, with no act-as request. Roles and verbs
	# do not matter here (missing_role needs the same tenant), only well-formedness.
	input.actor_chain == []
	subject := input.subject
	props := subject.properties
	resource_props := input.resource.properties
	resource_tenant := resource_props.tenant_id
	resource_tenant != props.tenant_id
	not input.context.act_as != null
	not input.token.scope != null
	not props.scope != null
	"" < resource_tenant
	resource_tenant < []
	tenant := props.tenant_id
	"" < tenant
	tenant < []
	"" < subject.id
	subject.id < []
	subject.type != "service"
	action := input.action.name
	"" < action
	action < []
	not data.tenantguard.config.actions[action]
	roles := props.roles
	[] <= roles
	roles < {}
	roles < set()
	# A project that is absent, null or a non-empty string (anything else is invalid_input).
	{p | p := resource_props.project; p != null} == {p | p := resource_props.project; "" < p; p < []}
} else := {"allow": granted, "reasons": reasons, "high_risk": false} if {
	# Through services on the user's behalf (an actor chain), or with a scope on the
	# token or the subject, in its own tenant: allowed when the call rule and every scope
	# cover the action and a role holds its verb; denied for missing_role when only the
	# role is missing. Reads the input facts the decision core computes once, in Python
	# (docs/decision-input.md, "Input facts"): `actor_services`, the chain's service
	# names ("svc:orders" -> "orders"; null when an actor is not a service), and
	# `scope_limits`, each scope as the list of its items. So this body needs no
	# trim_prefix, split or scope-shape dispatch. An input without them (one written by
	# hand) takes the complete rules, which read actor_chain and the scopes themselves.
	services := input.actor_services
	[] <= services
	services < {}
	services < set()
	limits := input.scope_limits
	[] <= limits
	limits < {}
	limits < set()
	subject := input.subject
	props := subject.properties
	tenant := props.tenant_id
	input.resource.properties.tenant_id == tenant
	"" < tenant
	tenant < []
	"" < subject.id
	subject.id < []
	subject.type != "service"
	action := input.action.name
	"" < action
	action < []
	cfg := data.tenantguard.config
	not cfg.actions[action]
	[resource_name, verb_name] := split(action, ":")
	verb := cfg.verbs[verb_name]
	roles := props.roles
	[] <= roles
	roles < {}
	roles < set()
	count(services) <= cfg.max_actor_chain

	# The scopes that cover a two-part action "r:v" (lib.scope_covers): "r:v" itself and
	# "r:*", since a wildcard's prefix up to "*" must be a prefix of "r:v" ending in ":".
	covering := {action, concat("", [resource_name, ":*"])}

	# No scope limit without a covering item (none at all: nothing limits the request).
	[items | some items in limits; [s | some s in items; s in covering] == []] == []

	# No caller, or one whose call rule for this service (context.service) covers the
	# action (config.calls, as services.rego reads it): the nearest caller, if any, is
	# not one without such a rule. Every lookup sits in the inner comprehension, so a
	# missing one leaves it empty and the caller is reported. One variable key per
	# reference (bundles/README.md, "How to keep a policy fast", 10).
	[caller |
		caller := services[0]
		[rule |
			callers := cfg.calls[input.context.service]
			rule := callers[caller]
			[] <= rule
			rule < {}
			rule < set()
			rule[_] in covering
		] == []
	] == []

	# The project, as in the first body.
	resource_props := input.resource.properties
	{p | p := resource_props.project; p != null} == {p |
		p := resource_props.project
		"" < p
		p < []
		held := input.relations[concat(":", ["project", p])]
		[] <= held
		held < {}
		held < set()
		held[_] in cfg.project_relations
	}
	granted := [role | some role in roles; verb in cfg.roles[role]] != []
	reasons := [reason | not granted; reason := "missing_role"]
} else := full_decision

# The complete decision: every check, and the reasons for a deny.
full_decision := {
	"allow": allow,
	"reasons": sort(deny),
	"high_risk": high_risk,
}

default allow := false

allow if {
	count(deny) == 0
	granted
}

# A positive grant: a role in the subject's own tenant, or an act-as grant across tenants.
granted if {
	same_tenant
	granted_by_role
}

granted if acting_as

# ---------------------------------------------------------------- request fields
# Direct references with a default: cheaper than object.get(input, [...], default),
# and (with no bare `input` anywhere) they let the engine pass the policy only the
# input fields it reads.

default subject_tenant := ""

subject_tenant := input.subject.properties.tenant_id

default resource_tenant := ""

resource_tenant := input.resource.properties.tenant_id

# Always a string, so the checks below never meet a type error.
default action := ""

action := input.action.name if is_string(input.action.name)

# ---------------------------------------------------------------- malformed requests
# A request that is not an object has no action either, so it is reported below.

deny contains "invalid_input" if not lib.valid_id(action)

deny contains "invalid_input" if not lib.valid_id(subject_id)

deny contains "missing_tenant" if not lib.valid_id(subject_tenant)

deny contains "missing_tenant" if not lib.valid_id(resource_tenant)

default subject_id := ""

subject_id := input.subject.id

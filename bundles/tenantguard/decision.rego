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
#   1. The fast path: one rule body that recognises the common allowed request (a
#      user calling directly, inside its own tenant, a role granting the action's verb,
#      no scope limiting the token, and a resource in no project (absent or null, as
#      for an Envoy route) or in one the subject is a member of). It reads input and
#      data directly and refers to no other rule, only to the small function
#      fast_path_project_ok for its one "or", the project (~2 us; bundles/README.md
#      lists the shapes measured for it). So a decision costs ~20 us instead of
#      ~120-250 us. It is only ever a shortcut: whenever it holds, the complete rules
#      below allow too (the tests in fast_path_test.rego pin that).
#   2. Everything else falls through to `full_decision`, which evaluates every check
#      and gives the reasons for a deny. It is slower, and only runs for the requests
#      the fast path does not recognise (denies, act-as, service calls, scoped tokens,
#      admins on projects they are not members of, ...).
package tenantguard

import rego.v1

import data.tenantguard.lib

decision := {"allow": true, "reasons": [], "high_risk": false} if {
	# Cheap type checks: Rego orders values of different types (null < booleans <
	# numbers < strings < arrays < objects and sets), so `"" < x; x < []` holds exactly
	# for a non-empty string, and `[] <= x; x < {}; x < set()` exactly for an array.
	# A comparison costs ~0.1 us, a builtin call such as is_string(x) ~1 us.

	# Tenancy: the subject's tenant is a non-empty string and owns the resource.
	subject := input.subject
	props := subject.properties
	tenant := props.tenant_id
	"" < tenant
	tenant < []
	input.resource.properties.tenant_id == tenant
	"" < subject.id
	subject.id < []

	# Services: a user calling directly, so no call rule applies.
	subject.type != "service"
	input.actor_chain == []

	# Scope: neither the token nor the subject carries one ("absent or null").
	not input.token.scope != null
	not props.scope != null

	# Roles: an ordinary "<resource>:<verb>" action (not listed in config.actions, so
	# not high-risk) whose verb one of the subject's roles holds.
	action := input.action.name
	"" < action
	action < []
	cfg := data.tenantguard.config # one data reference, then local lookups
	not cfg.actions[action]
	[_, verb_name] := split(action, ":")
	roles := props.roles
	[] <= roles
	roles < {}
	roles < set()
	cfg.verbs[verb_name] in cfg.roles[roles[_]]

	# Relations: the resource belongs to no project, or to one the subject is a member of.
	fast_path_project_ok(input.resource.properties, cfg.project_relations)
} else := {"allow": false, "reasons": ["missing_role"], "high_risk": false} if {
	# Denies are as cheap as allows, so a flood of denied requests costs no more than
	# allowed ones. A user calling directly in its own tenant, everything well formed
	# and nothing else wrong, whose roles do not hold the verb.
	input.actor_chain == []
	input.resource.properties.tenant_id == input.subject.properties.tenant_id
	fast_common_shape
	not fast_role_grants
	fast_no_scope
	fast_path_project_ok(input.resource.properties, data.tenantguard.config.project_relations)
} else := {"allow": false, "reasons": ["tenant_mismatch"], "high_risk": false} if {
	# Another tenant's resource, asked directly, with no act-as request.
	input.actor_chain == []
	resource_tenant_id := input.resource.properties.tenant_id
	resource_tenant_id != input.subject.properties.tenant_id
	"" < resource_tenant_id
	resource_tenant_id < []
	not input.context.act_as != null
	fast_common_shape
	fast_no_scope
	fast_project_well_formed(input.resource.properties)
} else := {"allow": true, "reasons": [], "high_risk": false} if {
	# Allowed in its own tenant through services on the user's behalf (an actor chain),
	# or with a scope on the token or the subject that covers the action.
	input.resource.properties.tenant_id == input.subject.properties.tenant_id
	fast_common_shape
	fast_caller_ok
	fast_scopes_cover
	fast_role_grants
	fast_path_project_ok(input.resource.properties, data.tenantguard.config.project_relations)
} else := full_decision

# ---------------------------------------------------------------- fast path pieces
# Each is a cheap, total check; together they describe requests for which the complete
# rules can give only one answer (fast_path_test.rego and tests/policy pin that).

# Well-formed fields every fast branch needs: a subject tenant and id and an action that
# are non-empty strings, an ordinary "<resource>:<verb>" action with a known verb (not
# listed in config.actions, so not high-risk), roles an array, a user subject.
fast_common_shape if {
	subject := input.subject
	tenant := subject.properties.tenant_id
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
	[_, verb_name] := split(action, ":")
	cfg.verbs[verb_name]
	roles := subject.properties.roles
	[] <= roles
	roles < {}
	roles < set()
}

# A user calling directly, or through services the callee accepts for the action.
fast_caller_ok if input.actor_chain == []

fast_caller_ok if fast_service_call_allowed

fast_no_scope if {
	not input.token.scope != null
	not input.subject.properties.scope != null
}

fast_role_grants if {
	cfg := data.tenantguard.config
	[_, verb_name] := split(input.action.name, ":")
	cfg.verbs[verb_name] in cfg.roles[input.subject.properties.roles[_]]
}

# A project that is absent, null or a non-empty string (anything else is invalid_input).
fast_project_well_formed(resource_props) if {
	not resource_props.project != null
} else := true if {
	"" < resource_props.project
	resource_props.project < []
}

# An actor chain of 1..max_actor_chain "svc:<name>" entries whose nearest caller may call
# this service (context.service) for the action: config.calls, as services.rego reads it.
fast_service_call_allowed if {
	chain := input.actor_chain
	[] <= chain
	chain < {}
	chain < set()
	count(chain) > 0
	cfg := data.tenantguard.config
	count(chain) <= cfg.max_actor_chain
	not fast_chain_has_non_service(chain)
	callee := input.context.service
	"" < callee
	callee < []
	scopes := cfg.calls[callee][lib.service_name(chain[0])]
	[] <= scopes
	scopes < {}
	scopes < set()
	some scope in scopes
	lib.scope_covers(scope, input.action.name)
}

fast_chain_has_non_service(chain) if {
	some actor in chain
	not lib.service_name(actor)
}

# Every scope present (the token's, the subject's) covers the action; absent or null
# scopes limit nothing, as in scope.rego.
fast_scopes_cover if {
	fast_token_scope_ok
	fast_subject_scope_ok
}

fast_token_scope_ok if not input.token.scope != null

fast_token_scope_ok if lib.any_covers(lib.scope_set(input.token.scope), input.action.name)

fast_subject_scope_ok if not input.subject.properties.scope != null

fast_subject_scope_ok if lib.any_covers(lib.scope_set(input.subject.properties.scope), input.action.name)

# The fast path's "or", as in relations.rego: a resource with no project (absent or
# null: `resource_project == null` there) needs no relation; one with a project needs
# the subject to hold one of config.project_relations on it, and nothing else (a
# malformed project) passes. With `else`, the second branch runs only when the first
# fails; the whole call costs ~2 us.
fast_path_project_ok(resource_props, project_relations) if {
	not resource_props.project != null
} else := true if {
	project := resource_props.project
	"" < project
	project < []
	held := input.relations[concat(":", ["project", project])]
	[] <= held
	held < {}
	held < set()
	held[_] in project_relations
}

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

# The fast path in decision.rego is only a shortcut: for every request it must give
# exactly what the complete rules (full_decision) give. These tests pin that for the
# requests it takes, and for requests just beside each of its conditions, in particular
# the wrong-typed fields its cheap type checks must reject.
package tenantguard.fast_path_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx
import data.tenantguard.full_decision

allowed := {"allow": true, "reasons": [], "high_risk": false}

# Replacing full_decision shows which path answered: the fast path never reads it.
answered_by_fast_path(request) if {
	decision == allowed with input as request with data.tenantguard.full_decision as "full"
}

same_as_full_decision(request) if {
	d := decision with input as request
	full := full_decision with input as request
	d == full
}

replace(path, value) := json.patch(fx.baseline, [{"op": "replace", "path": path, "value": value}])

# What the sidecar asks for the Envoy ext_authz door (authz_sidecar/grpc_ext_authz.py,
# GET /tenants/acme/invoices/inv-1 with alice's token): a route names a tenant, never a
# project. `envoy_request(patch)` deep-merges the patch into it, like fx.request.
envoy_question := {
	"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["editor"]}},
	"action": {"name": "route:read", "properties": {"method": "GET", "path": "/tenants/acme/invoices/inv-1"}},
	"resource": {
		"type": "route", "id": "/tenants/acme/invoices/inv-1",
		"properties": {"host": "billing", "tenant_id": "acme"},
	},
	"context": {"transport": "envoy", "service": "billing"},
	"token": sidecar_request.token,
	"actor_chain": [],
	"relations": {"project:p1": ["member"]},
}

envoy_request(patch) := object.union(envoy_question, patch)

replace_in_envoy_question(path, value) := json.patch(envoy_question, [{"op": "replace", "path": path, "value": value}])

without_a_project := fx.without(["resource/properties/project"])

# ---------------------------------------------------------------- the fast path answers

test_baseline_takes_the_fast_path if {
	answered_by_fast_path(fx.baseline)
	same_as_full_decision(fx.baseline)
}

# What the sidecar sends: verified token claims without a scope, and no actor chain.
sidecar_request := object.union(fx.baseline, {"token": {
	"iss": "https://idp.example", "sub": "alice", "tenant_id": "acme", "aud": "billing",
	"exp": 2000000000, "iat": 1700000000, "nbf": 1700000000, "jti": "t-1", "roles": ["editor"],
}})

test_sidecar_request_takes_the_fast_path if {
	answered_by_fast_path(sidecar_request)
	same_as_full_decision(sidecar_request)
}

test_fast_path_covers_every_role_that_holds_the_verb if {
	answered_by_fast_path(fx.with_roles(["viewer", "editor"]))
	answered_by_fast_path(fx.with_roles(["superuser", "admin"]))
	answered_by_fast_path(fx.request({"action": {"name": "invoices:list"}, "subject": {"properties": {"roles": ["viewer"]}}}))
	answered_by_fast_path(replace("/relations/project:p1", ["viewer", "owner"]))
}

# A resource in no project needs no relation (relations.rego: `resource_project == null`),
# whether the property is absent or null.
test_request_without_a_project_takes_the_fast_path if {
	every request in [without_a_project, replace("/resource/properties/project", null)] {
		answered_by_fast_path(request)
		same_as_full_decision(request)
	}
}

test_envoy_route_questions_take_the_fast_path if {
	every request in [
		envoy_question,
		envoy_request({"action": {"name": "route:write", "properties": {"method": "POST"}}}),
		envoy_request({"subject": {"properties": {"roles": ["viewer"]}}}),
		envoy_request({"subject": {"properties": {"roles": ["admin"]}}, "action": {"name": "route:delete"}}),
		envoy_request({"resource": {"properties": {"project": null}}}),
	] {
		answered_by_fast_path(request)
		same_as_full_decision(request)
	}
}

# Without a project the relations are not read: none, or malformed ones, change nothing.
test_no_project_needs_no_relations if {
	every request in [
		json.remove(envoy_question, ["relations"]),
		replace_in_envoy_question("/relations", {}),
		replace_in_envoy_question("/relations", "project:p1"),
		replace_in_envoy_question("/relations", {"project:p1": "member"}),
		replace_in_envoy_question("/relations", null),
	] {
		answered_by_fast_path(request)
		same_as_full_decision(request)
	}
}

# ---------------------------------------------------------------- beside the fast path

# Service calls and scoped requests, as the sidecar sends them (with the input facts
# actor_services and scope_limits), take the third fast branch: allowed, or denied for
# missing_role, exactly as the complete rules decide.
service_calls_and_scoped_requests := [
	fx.request({"actor_chain": ["svc:orders"]}),
	fx.request({"actor_chain": ["svc:orders", "svc:edge"], "token": {"scope": "invoices:*"}}),
	fx.request({"actor_chain": ["svc:edge"], "subject": {"properties": {"scope": ["invoices:read"]}}}),
	fx.request({"actor_chain": ["svc:orders", "svc:edge", "svc:edge", "svc:edge"]}), # max_actor_chain hops
	fx.request({"actor_chain": ["svc:edge", "svc:reports"]}), # only the nearest caller's rule counts
	fx.request({"token": {"scope": "invoices:read"}}),
	fx.request({"token": {"scope": "orders:read  invoices:read "}}), # empty items are no scope
	fx.request({"token": {"scope": ["invoices:read", "orders:read"]}}),
	fx.request({"token": {"scope": ["invoices:*", 4]}}), # only the strings of a list count
	fx.request({"subject": {"properties": {"scope": "invoices:read"}}}),
	# the sidecar's scoped token: the token's scope, copied to the subject
	fx.request({"token": {"scope": "invoices:read"}, "subject": {"properties": {"scope": "invoices:read"}}}),
	fx.request({"token": {"scope": "invoices:*"}, "subject": {"properties": {"scope": ["invoices:read"]}}}),
	fx.request({"action": {"name": ":read"}, "token": {"scope": ":*"}}),
	fx.request({"token": {"scope": "invoices:*"}, "context": {"act_as": {"tenant_id": "globex", "reason": "SUP-1"}}}),
	without_a_project_with({"actor_chain": ["svc:orders"], "token": {"scope": "invoices:read"}}),
]

without_a_project_with(patch) := object.union(without_a_project, patch)

test_service_calls_and_scoped_requests_take_a_fast_path if {
	every request in service_calls_and_scoped_requests {
		answered_by_fast_path(fx.with_facts(request))
		same_as_full_decision(fx.with_facts(request))
	}
}

test_service_calls_and_scoped_requests_without_a_role_are_denied_fast if {
	every request in service_calls_and_scoped_requests {
		every roles in [["guest"], []] {
			without_role := json.patch(request, [{"op": "replace", "path": "/subject/properties/roles", "value": roles}])
			d := decision with input as fx.with_facts(without_role) with data.tenantguard.full_decision as "full"
			d == {"allow": false, "reasons": ["missing_role"], "high_risk": false}
			same_as_full_decision(fx.with_facts(without_role))
		}
	}
}

# Without the input facts (an input written by hand), the same requests take the complete
# rules, which read actor_chain and the scopes themselves: the same answers, slower.
test_service_calls_and_scoped_requests_without_the_facts_take_the_full_path if {
	every request in service_calls_and_scoped_requests {
		not answered_by_fast_path(request)
		same_as_full_decision(request)
		decision.allow with input as request
	}
}

# Just beside the third branch, as the sidecar would send them: the complete rules' answer.
beside_the_service_call_branch := [
	fx.request({"actor_chain": ["svc:reports"]}), # billing has no rule for reports
	fx.request({"actor_chain": ["svc:edge"], "action": {"name": "invoices:write"}}), # edge may only read
	fx.request({"actor_chain": ["svc:reports", "svc:orders"]}),
	fx.request({"actor_chain": ["svc:orders", "svc:edge", "svc:edge", "svc:edge", "svc:edge"]}), # too deep
	fx.request({"actor_chain": ["svc:orders", "orders"]}), # an actor that is not a service
	fx.request({"actor_chain": ["svc:"]}),
	fx.request({"actor_chain": ["svc;orders"]}),
	fx.request({"actor_chain": ["svc:orders", 5]}),
	fx.request({"actor_chain": ["svc:svc:orders"]}),
	fx.request({"actor_chain": ["svc:orders"], "context": {"service": "orders"}}), # orders has no rule for orders
	fx.request({"actor_chain": ["svc:orders"], "context": {"service": ""}}),
	fx.request({"actor_chain": ["svc:orders"], "context": {"service": 7}}),
	json.remove(fx.request({"actor_chain": ["svc:orders"]}), ["context/service"]),
	fx.request({"actor_chain": ["svc:orders"], "resource": {"properties": {"tenant_id": "globex"}}}),
	fx.request({"actor_chain": ["svc:orders"], "action": {"name": "export_all"}, "subject": {"properties": {"roles": ["admin"]}}}),
	fx.request({"actor_chain": ["svc:orders"], "action": {"name": "invoices:lines:read"}}),
	json.patch(fx.request({"actor_chain": ["svc:orders"]}), [{"op": "replace", "path": "/relations", "value": {}}]),
	json.patch(fx.request({"actor_chain": ["svc:orders"]}), [{"op": "replace", "path": "/relations/project:p1", "value": ["viewer"]}]),
	fx.request({"token": {"scope": "invoices:write"}}), # a scope that does not cover the action
	fx.request({"token": {"scope": ""}}), # a present, empty scope covers nothing
	fx.request({"token": {"scope": " "}}),
	fx.request({"token": {"scope": []}}),
	fx.request({"token": {"scope": [4]}}),
	fx.request({"token": {"scope": 5}}),
	fx.request({"token": {"scope": false}}),
	fx.request({"token": {"scope": {"s": "invoices:read"}}}),
	fx.request({"token": {"scope": "*"}}), # "*" alone covers nothing
	fx.request({"token": {"scope": "invoices:re*"}}),
	fx.request({"token": {"scope": "invoices"}}),
	fx.request({"token": {"scope": "invoices:read:*"}}),
	fx.request({"token": {"scope": "INVOICES:READ"}}),
	fx.request({"token": {"scope": "invoices:read"}, "subject": {"properties": {"scope": "orders:read"}}}), # both must cover
	fx.request({"token": {"scope": "orders:read"}, "subject": {"properties": {"scope": "invoices:read"}}}),
	fx.request({"token": {"scope": "invoices:*"}, "subject": {"properties": {"scope": ["invoices:write"]}}}),
	fx.request({"actor_chain": ["svc:orders"], "token": {"scope": "invoices:write"}}),
	fx.request({"actor_chain": ["svc:edge"], "token": {"scope": "invoices:*"}, "action": {"name": "invoices:write"}}),
	fx.request({"action": {"name": "invoices:"}, "token": {"scope": "invoices:*"}}),
	fx.request({"action": {"name": "invoices:"}, "token": {"scope": "invoices:"}}),
]

test_requests_beside_the_service_call_branch_get_the_full_decision if {
	every request in beside_the_service_call_branch {
		same_as_full_decision(fx.with_facts(request))
		same_as_full_decision(request)
	}
}

# Each of them is one condition away from an allow: all are denied.
test_every_request_beside_the_service_call_branch_is_denied if {
	every request in beside_the_service_call_branch {
		not decision.allow with input as fx.with_facts(request)
	}
}

# The third branch reads the data as the complete rules do (a 2-part action listed in
# config.actions, a call rule that is not a list, a shorter chain bound, fewer verbs).
test_the_service_call_branch_follows_the_data if {
	request := fx.with_facts(fx.request({"actor_chain": ["svc:orders"], "token": {"scope": "invoices:read"}}))
	answered_by_fast_path(request)
	d := decision with input as request with data.tenantguard.config.actions as {"invoices:read": {"verb": "read", "high_risk": true}}
	d.high_risk
	every calls in [{"x": "invoices:read"}, "invoices:read", {"invoices:read"}, null] {
		not decision.allow with input as request with data.tenantguard.config.calls.billing.orders as calls
	}
	not decision.allow with input as request with data.tenantguard.config.calls.billing as ["orders"]
	not decision.allow with input as request with data.tenantguard.config.max_actor_chain as 0
	not decision.allow with input as request with data.tenantguard.config.roles as {"editor": ["write"]}
	not decision.allow with input as request with data.tenantguard.config.project_relations as ["owner"]
}

# Facts of the wrong shape (only an input written by hand has them) are not read: the
# complete rules decide from actor_chain and the scopes.
test_malformed_input_facts_take_the_full_path if {
	request := fx.request({"actor_chain": ["svc:orders"], "token": {"scope": "invoices:read"}})
	every facts in [
		{"actor_services": ["orders"], "scope_limits": "invoices:read"},
		{"actor_services": ["orders"], "scope_limits": {"token": ["invoices:read"]}},
		{"actor_services": ["orders"], "scope_limits": null},
		{"actor_services": "orders", "scope_limits": [["invoices:read"]]},
		{"actor_services": {"0": "orders"}, "scope_limits": [["invoices:read"]]},
		{"actor_services": null, "scope_limits": [["invoices:read"]]},
		{"scope_limits": [["invoices:read"]]},
		{"actor_services": ["orders"]},
	] {
		not answered_by_fast_path(object.union(request, facts))
		same_as_full_decision(object.union(request, facts))
	}
}

# A service as the subject, with or without a chain, is not the third branch's.
test_a_service_subject_takes_the_full_path if {
	every request in [
		fx.request({"subject": {"type": "service", "id": "svc:orders"}}),
		fx.request({"actor_chain": ["svc:orders"], "subject": {"type": "service", "id": "svc:orders"}}),
	] {
		not answered_by_fast_path(fx.with_facts(request))
		same_as_full_decision(fx.with_facts(request))
	}
}

# Common denies are answered fast too, with exactly the complete rules' reasons.
test_common_denies_take_a_fast_path if {
	every request in [
		json.patch(fx.with_roles(["viewer"]), [{"op": "replace", "path": "/action/name", "value": "invoices:write"}]),
		fx.request({"resource": {"properties": {"tenant_id": "globex"}}}),
	] {
		d := decision with input as request with data.tenantguard.full_decision as "full"
		d != "full"
		same_as_full_decision(request)
	}
}

# Requests that are allowed, but by the complete rules only.
test_other_allowed_requests_take_the_full_path if {
	not answered_by_fast_path(fx.support_request({}))
	not answered_by_fast_path(fx.request({"actor_chain": ["svc:reports"]}))
	not answered_by_fast_path(fx.without(["subject/type"]))
	not answered_by_fast_path(fx.without(["actor_chain"]))
	not answered_by_fast_path(json.patch(fx.with_roles(["admin"]), [{"op": "replace", "path": "/relations", "value": {}}]))
	not answered_by_fast_path(fx.request({"subject": {"properties": {"roles": ["admin"]}}, "action": {"name": "export_all"}}))
	not answered_by_fast_path(fx.request({"subject": {"properties": {"roles": ["admin"]}}, "action": {"name": "rotate_keys"}}))
}

beside_the_fast_path := [
	fx.support_request({}),
	fx.request({"actor_chain": ["svc:orders"]}),
	fx.request({"actor_chain": ["svc:reports"]}),
	fx.request({"subject": {"type": "service", "id": "svc:orders"}}),
	fx.request({"token": {"scope": "invoices:read"}}),
	fx.request({"token": {"scope": "invoices:write"}}),
	fx.request({"token": {"scope": null}}),
	fx.request({"token": {"scope": false}}),
	fx.request({"subject": {"properties": {"scope": "invoices:read invoices:write"}}}),
	fx.request({"subject": {"properties": {"scope": null}}}),
	fx.without(["subject/type"]),
	fx.without(["actor_chain"]),
	fx.without(["relations"]),
	fx.with_roles(["admin"]),
	json.patch(fx.with_roles(["admin"]), [{"op": "replace", "path": "/relations", "value": {}}]),
	fx.request({"subject": {"properties": {"roles": ["admin"]}}, "action": {"name": "export_all"}}),
	fx.request({"action": {"name": "export_all"}}),
	fx.request({"action": {"name": "invoices:lines:read"}}),
	fx.request({"action": {"name": "invoices:"}}),
	fx.request({"action": {"name": ":read"}}),
	fx.request({"action": {"name": "invoices:frobnicate"}}),
	fx.with_roles(["viewer"]),
	fx.with_roles([]),
	fx.request({"resource": {"properties": {"tenant_id": "globex"}}}),
	replace("/relations/project:p1", ["viewer"]),
	replace("/relations", {"project:p2": ["member"]}),
]

# The same beside a request with no project: only the project condition is relaxed.
beside_the_fast_path_without_a_project := [
	envoy_request({"actor_chain": ["svc:edge"]}),
	envoy_request({"actor_chain": ["svc:reports"]}),
	envoy_request({"subject": {"type": "service", "id": "svc:edge"}}),
	envoy_request({"token": {"scope": "route:read"}}),
	envoy_request({"token": {"scope": ["invoices:read"]}}),
	envoy_request({"token": {"scope": false}}),
	envoy_request({"subject": {"properties": {"scope": "route:read"}}}),
	json.remove(envoy_question, ["subject/type"]),
	json.remove(envoy_question, ["actor_chain"]),
	json.remove(envoy_question, ["resource/properties/tenant_id"]),
	envoy_request({"resource": {"properties": {"tenant_id": "globex"}}}),
	envoy_request({"resource": {"properties": {"tenant_id": "\u0000conflicting"}}}), # path and header disagree
	envoy_request({
		"context": {"act_as": {"tenant_id": "globex", "reason": "ticket SUP-42"}},
		"resource": {"properties": {"tenant_id": "globex"}},
	}),
	fx.support_request({}), # act-as: no project either
	envoy_request({"subject": {"properties": {"roles": ["admin"]}}, "action": {"name": "export_all"}}),
	envoy_request({"action": {"name": "export_all"}}),
	envoy_request({"action": {"name": "route"}}),
	envoy_request({"action": {"name": "route:read:all"}}),
	envoy_request({"action": {"name": "route:frobnicate"}}),
	envoy_request({"subject": {"properties": {"roles": []}}}),
	envoy_request({"subject": {"properties": {"roles": ["support"]}}}),
	envoy_request({"subject": {"properties": {"roles": ["viewer"]}}, "action": {"name": "route:write"}}),
	replace_in_envoy_question("/subject/properties/roles", {"first": "editor"}),
	replace_in_envoy_question("/subject/properties/roles", {"editor"}),
	replace_in_envoy_question("/subject/properties/roles", "editor"),
	replace_in_envoy_question("/actor_chain", {}),
	replace_in_envoy_question("/actor_chain", "svc:edge"),
]

# Fields of the wrong type: each must fail the fast path's cheap type checks.
wrong_types := [7, 1.5, true, false, null, "", ["acme"], {"tenant_id": "acme"}, {"acme"}]

id_fields := ["/subject/properties/tenant_id", "/resource/properties/tenant_id", "/subject/id", "/action/name"]

wrong_typed_requests := array.concat(
	[r |
		some value in wrong_types
		some path in id_fields
		r := replace(path, value)
	],
	# A null project is no project (see above); any other non-string one is malformed.
	[r |
		some value in wrong_types
		value != null
		r := replace("/resource/properties/project", value)
	],
)

# The same fields in a request with no project.
wrong_typed_requests_without_a_project := [r |
	some value in wrong_types
	some path in id_fields
	r := replace_in_envoy_question(path, value)
]

# An "array" of roles or relations that is not one: the fast path must not iterate it.
not_arrays := [
	replace("/subject/properties/roles", {"first": "editor"}),
	replace("/subject/properties/roles", {"editor"}),
	replace("/subject/properties/roles", "editor"),
	replace("/relations/project:p1", {"first": "member"}),
	replace("/relations/project:p1", {"member"}),
	replace("/relations/project:p1", "member"),
	replace("/actor_chain", {}),
	replace("/actor_chain", "svc:orders"),
]

test_requests_beside_the_fast_path_get_the_full_decision if {
	every request in array.concat(beside_the_fast_path, not_arrays) {
		same_as_full_decision(request)
	}
}

test_requests_without_a_project_beside_the_fast_path_get_the_full_decision if {
	every request in beside_the_fast_path_without_a_project {
		same_as_full_decision(request)
	}
}

# No project does not lift the role check: the complete rules deny, with their reasons.
test_no_project_without_the_role_is_denied_by_the_full_rules if {
	every request in [
		envoy_request({"subject": {"properties": {"roles": ["viewer"]}}, "action": {"name": "route:write"}}),
		json.patch(without_a_project, [
			{"op": "replace", "path": "/subject/properties/roles", "value": ["viewer"]},
			{"op": "replace", "path": "/action/name", "value": "invoices:write"},
		]),
		json.patch(fx.with_roles(["viewer"]), [
			{"op": "replace", "path": "/resource/properties/project", "value": null},
			{"op": "replace", "path": "/action/name", "value": "route:write"},
		]),
	] {
		not answered_by_fast_path(request)
		same_as_full_decision(request)
		d := decision with input as request
		d == {"allow": false, "reasons": ["missing_role"], "high_risk": false}
	}
}

# (All of them are denied.)
test_wrong_typed_fields_get_the_full_decision if {
	every request in array.concat(wrong_typed_requests, wrong_typed_requests_without_a_project) {
		not answered_by_fast_path(request)
		same_as_full_decision(request)
		not decision.allow with input as request
	}
}

test_malformed_roles_and_relations_are_never_allowed if {
	every request in not_arrays {
		not decision.allow with input as request
	}
}

# The fast path reads data.tenantguard.config like the complete rules do.
test_fast_path_follows_the_data if {
	not decision.allow with input as fx.baseline with data.tenantguard.config.roles as {"editor": ["write"]}
	not decision.allow with input as fx.baseline with data.tenantguard.config.verbs as {}
	not decision.allow with input as fx.baseline with data.tenantguard.config.project_relations as ["owner"]
	d := decision with input as fx.baseline with data.tenantguard.config.actions as {"invoices:read": {"verb": "read", "high_risk": true}}
	d.high_risk
	not decision.allow with input as envoy_question with data.tenantguard.config.roles as {"editor": ["write"]}
	not decision.allow with input as envoy_question with data.tenantguard.config.verbs as {}
	e := decision with input as envoy_question with data.tenantguard.config.actions as {"route:read": {"verb": "read", "high_risk": true}}
	e.high_risk
}

# ... and no project needs no project relation, whatever config.project_relations holds.
test_no_project_needs_no_project_relations_in_the_data if {
	decision == allowed with input as envoy_question
		with data.tenantguard.config.project_relations as []
		with data.tenantguard.full_decision as "full"
}

# ---------------------------------------------------------------- the exchange decision

exchange_fast := data.tenantguard.exchange.decision

exchange_full := data.tenantguard.exchange.full_decision

exchange_answered_fast(request) if {
	d := exchange_fast with input as request with data.tenantguard.exchange.full_decision as "full"
	d != "full"
}

exchange_same_as_full(request) if {
	d := exchange_fast with input as request
	full := exchange_full with input as request
	d == full
}

test_exchanges_the_rules_allow_take_the_fast_path if {
	every request in [
		fx.exchange_request({}),
		fx.exchange_request({"scope": ["invoices:read", "invoices:write"]}),
		fx.exchange_request({"actor_chain": []}),
		fx.exchange_request({"actor_chain": ["svc:edge", "svc:edge"]}), # the new token has max_actor_chain hops
		fx.exchange_request({"subject": {"properties": {"scope": "invoices:read orders:read"}}}),
		fx.exchange_request({"subject": {"properties": {"scope": ["invoices:read"]}}}),
		fx.exchange_request({"actor": {"service": "edge"}, "audience": "orders", "scope": ["invoices:read"], "actor_chain": []}),
	] {
		exchange_answered_fast(request)
		exchange_same_as_full(request)
		exchange_fast.allow with input as request
	}
}

# Denied exchanges, each one change from an allowed one: the complete rules' answer.
exchange_denies := [
	fx.exchange_request({"actor": {"service": "reports"}}), # billing accepts no calls from reports
	fx.exchange_request({"actor": {"service": "nowhere"}}),
	fx.exchange_request({"audience": "nowhere"}),
	fx.exchange_request({"audience": "exports"}),
	fx.exchange_request({"audience": ""}),
	fx.exchange_request({"audience": 7}),
	fx.exchange_request({"actor": {"service": ""}}),
	fx.exchange_request({"actor": {"service": ["orders"]}}),
	fx.exchange_request({"scope": ["orders:read"]}), # not in the rule
	fx.exchange_request({"scope": ["invoices:*"]}), # a wildcard is not granted from exact rules
	fx.exchange_request({"scope": ["invoices:read"], "subject": {"properties": {"scope": "invoices:write"}}}),
	fx.exchange_request({"scope": ["invoices:read"], "subject": {"properties": {"scope": ""}}}),
	fx.exchange_request({"scope": ["invoices:read"], "subject": {"properties": {"scope": []}}}),
	fx.exchange_request({"scope": ["invoices:read"], "subject": {"properties": {"scope": 4}}}),
	fx.exchange_request({"scope": [""]}),
	fx.exchange_request({"scope": "invoices:read"}),
	fx.exchange_request({"scope": null}),
	fx.exchange_request({"actor_chain": ["svc:edge", "svc:edge", "svc:edge", "svc:edge"]}), # one hop too many
	fx.exchange_request({"actor_chain": "svc:edge"}),
	fx.exchange_request({"actor_chain": null}),
	fx.exchange_request({"subject": {"properties": {"tenant_id": ""}}}),
	fx.exchange_request({"subject": {"properties": {"tenant_id": 3}}}),
	json.remove(fx.exchange_request({}), ["subject/properties/tenant_id"]),
	json.remove(fx.exchange_request({}), ["actor"]),
]

test_exchange_denies_get_the_full_decision if {
	every request in exchange_denies {
		exchange_same_as_full(request)
		not exchange_fast.allow with input as request
	}
}

# Requests the fast body leaves to the complete rules although they are allowed (the
# scope to grant is computed there).
test_exchanges_allowed_by_the_full_rules_only if {
	every request in [
		fx.exchange_request({"scope": []}), # none requested: the rule's (or the subject's) scopes
		fx.exchange_request({"scope": ["invoices:read", "invoices:read"]}), # duplicates
		fx.exchange_request({"scope": ["invoices:read", "orders:read"]}), # granted in part
		fx.exchange_request({"subject": {"properties": {"scope": "invoices:*"}}}), # covered by a wildcard
		fx.exchange_request({"actor": {"service": "edge"}, "audience": "orders", "scope": ["orders:read"], "actor_chain": []}),
		fx.exchange_request({"scope": [5]}), # no string requested: as if none were
	] {
		not exchange_answered_fast(request)
		exchange_same_as_full(request)
	}
}

test_the_exchange_fast_path_follows_the_data if {
	request := fx.exchange_request({})
	every calls in [{"x": "invoices:read"}, "invoices:read", null] {
		not exchange_fast.allow with input as request with data.tenantguard.config.calls.billing.orders as calls
	}
	not exchange_fast.allow with input as request with data.tenantguard.config.calls.billing as ["orders"]
	not exchange_fast.allow with input as request with data.tenantguard.config.max_actor_chain as 1
	# a call rule for a service the zones do not list: unknown_service, as the complete rules say
	d_unknown := exchange_fast with input as request with data.tenantguard.config.services as {"billing": "sensitive"}
	d_unknown.reasons == ["unknown_service"]
	d := exchange_fast with input as request with data.tenantguard.config.zones.sensitive.max_lifetime as 60
	d.max_lifetime == 60
}

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

# ---------------------------------------------------------------- beside the fast path

# Requests that are allowed, but by the complete rules only.
test_other_allowed_requests_take_the_full_path if {
	not answered_by_fast_path(fx.support_request({}))
	not answered_by_fast_path(fx.request({"actor_chain": ["svc:orders"]}))
	not answered_by_fast_path(fx.request({"token": {"scope": "invoices:read"}}))
	not answered_by_fast_path(fx.request({"subject": {"properties": {"scope": "invoices:read"}}}))
	not answered_by_fast_path(fx.without(["resource/properties/project"]))
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
	fx.without(["resource/properties/project"]),
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

# Fields of the wrong type: each must fail the fast path's cheap type checks.
wrong_types := [7, 1.5, true, false, null, "", ["acme"], {"tenant_id": "acme"}, {"acme"}]

wrong_typed_requests := [r |
	some value in wrong_types
	some path in [
		"/subject/properties/tenant_id", "/resource/properties/tenant_id", "/subject/id",
		"/action/name", "/resource/properties/project",
	]
	r := replace(path, value)
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

# (Most of them are denied; a null project is the same as no project.)
test_wrong_typed_fields_get_the_full_decision if {
	every request in wrong_typed_requests {
		not answered_by_fast_path(request)
		same_as_full_decision(request)
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
}

# Shared request builders for the tests. A test states only what it changes:
#   fx.request({"action": {"name": "invoices:write"}})
# deep-merges the patch into a valid baseline (alice, editor in acme, calling billing
# directly, no token, on an invoice outside any project: project membership is the
# schema's, asked through tg.related, and relations_test.rego covers it with
# in_project below).
package tenantguard.fixtures_test

import rego.v1

import data.tenantguard.lib

baseline := {
	"subject": {
		"type": "user",
		"id": "alice",
		"properties": {"tenant_id": "acme", "roles": ["editor"]},
	},
	"action": {"name": "invoices:read"},
	"resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme"}},
	"context": {"service": "billing"},
	"token": null,
	"actor_chain": [],
	"relations": {},
}

# The baseline's invoice in project p1.
in_project := request({"resource": {"properties": {"project": "p1"}}})

request(patch) := object.union(baseline, patch)

# The baseline without some fields, given as JSON pointers ("resource/properties/project").
without(paths) := json.remove(baseline, paths)

with_roles(roles) := request({"subject": {"properties": {"roles": roles}}})

# The input facts the decision core adds to every input (tenantguard.decision.core.input_facts;
# docs/decision-input.md, "Input facts"), computed from the request's own members, so that
# `with_facts(request({...}))` is what a sidecar sends. tests/policy/test_deny_rules.py
# checks that this and the Python function agree on thousands of requests.
with_facts(req) := object.union(req, {
	"actor_services": actor_services(object.get(req, "actor_chain", [])),
	"scope_limits": scope_limits(req),
})

# The chain's service names, nearest first; null when it is not an array or an actor is
# not "svc:<name>".
actor_services(chain) := [lib.service_name(actor) | some actor in chain] if {
	is_array(chain)
	every actor in chain {
		lib.service_name(actor)
	}
} else := null

# Each scope that limits the request, as the list of its items, each distinct list once.
scope_limits(req) := [items |
	some i, items in candidates
	not items in array.slice(candidates, 0, i)
] if {
	candidates := [scope_items(scope) |
		some scope in [object.get(req, ["token", "scope"], null), object.get(req, ["subject", "properties", "scope"], null)]
		scope != null
	]
}

scope_items(scope) := [item | some item in split(scope, " "); item != ""] if {
	is_string(scope)
} else := [item | some item in scope; is_string(item)] if {
	is_array(scope)
} else := []

# A support engineer from the support tenant, acting on globex's invoice.
support_request(patch) := object.union(
	{
		"subject": {
			"type": "user",
			"id": "sam",
			"properties": {"tenant_id": "tg_support", "roles": ["support"]},
		},
		"action": {"name": "invoices:read"},
		"resource": {"type": "invoice", "id": "inv-9", "properties": {"tenant_id": "globex"}},
		"context": {"service": "billing", "act_as": {"tenant_id": "globex", "reason": "ticket SUP-42"}},
		"token": null,
		"actor_chain": [],
		"relations": {},
	},
	patch,
)

exchange_request(patch) := object.union(
	{
		"subject": {
			"type": "user",
			"id": "alice",
			"properties": {"tenant_id": "acme", "roles": ["editor"]},
		},
		"actor": {"service": "orders"},
		"audience": "billing",
		"scope": ["invoices:read"],
		"actor_chain": ["svc:edge"],
	},
	patch,
)

# Shared request builders for the tests. A test states only what it changes:
#   fx.request({"action": {"name": "invoices:write"}})
# deep-merges the patch into a valid baseline (alice, editor in acme, member of p1,
# calling billing directly, no token).
package tenantguard.fixtures_test

import rego.v1

baseline := {
	"subject": {
		"type": "user",
		"id": "alice",
		"properties": {"tenant_id": "acme", "roles": ["editor"]},
	},
	"action": {"name": "invoices:read"},
	"resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
	"context": {"service": "billing"},
	"token": null,
	"actor_chain": [],
	"relations": {"project:p1": ["member"]},
}

request(patch) := object.union(baseline, patch)

# The baseline without some fields, given as JSON pointers ("resource/properties/project").
without(paths) := json.remove(baseline, paths)

with_roles(roles) := request({"subject": {"properties": {"roles": roles}}})

# A support engineer from the support tenant, acting on globex's invoice.
support_request(patch) := object.union(
	{
		"subject": {
			"type": "user",
			"id": "sam",
			"properties": {"tenant_id": "tg-support", "roles": ["support"]},
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

package tenantguard.services_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

call(chain, callee, action_name) := fx.request({
	"actor_chain": chain,
	"context": {"service": callee},
	"action": {"name": action_name},
})

decide(chain, callee, action_name) := result if {
	result := decision with input as call(chain, callee, action_name)
}

# "billing accepts calls from orders on behalf of a user, never from reports":
#   "billing": {"orders": ["invoices:read", "invoices:write"], "edge": ["invoices:read"]}
test_orders_may_call_billing_for_a_user if {
	decide(["svc:orders", "svc:edge"], "billing", "invoices:read").allow
	decide(["svc:orders", "svc:edge"], "billing", "invoices:write").allow
}

test_reports_may_never_call_billing if {
	decide(["svc:reports", "svc:edge"], "billing", "invoices:read").reasons == ["caller_not_allowed"]
}

test_reports_may_not_call_billing_even_for_an_admin if {
	d := decision with input as object.union(
		call(["svc:reports"], "billing", "invoices:read"),
		{"subject": {"properties": {"roles": ["admin"]}}},
	)
	d.reasons == ["caller_not_allowed"]
}

test_caller_rule_limits_the_actions if {
	# orders may read and write invoices in billing, nothing else.
	decide(["svc:orders"], "billing", "invoices:delete").reasons == ["caller_not_allowed"]
	d := decision with input as object.union(
		call(["svc:orders"], "billing", "change_billing"),
		{"subject": {"properties": {"roles": ["admin"]}}},
	)
	d.reasons == ["caller_not_allowed"]
}

test_edge_may_only_read_billing if {
	decide(["svc:edge"], "billing", "invoices:read").allow
	decide(["svc:edge"], "billing", "invoices:write").reasons == ["caller_not_allowed"]
}

test_wildcard_call_scope if {
	decide(["svc:edge"], "orders", "orders:create").allow
	decide(["svc:edge"], "orders", "ordersx:create").reasons == ["caller_not_allowed"]
}

test_only_the_nearest_actor_is_the_caller if {
	# Earlier hops were checked by their own sidecars; billing judges its direct caller.
	decide(["svc:orders", "svc:reports"], "billing", "invoices:read").allow
	decide(["svc:reports", "svc:orders"], "billing", "invoices:read").reasons == ["caller_not_allowed"]
}

test_direct_user_call_needs_no_service_rule if {
	decide([], "billing", "invoices:read").allow
}

test_service_call_without_callee_is_denied if {
	d := decision with input as json.remove(call(["svc:orders"], "billing", "invoices:read"), ["context/service"])
	d.reasons == ["caller_not_allowed"]
}

test_unknown_callee_is_denied if {
	decide(["svc:orders"], "payroll", "invoices:read").reasons == ["caller_not_allowed"]
}

test_actors_must_be_services if {
	decide(["user:bob"], "billing", "invoices:read").reasons == ["caller_not_allowed"]
	decide(["svc:orders", "bob"], "billing", "invoices:read").reasons == ["caller_not_allowed"]
	decide(["svc:"], "billing", "invoices:read").reasons == ["caller_not_allowed"]
	decide([42], "billing", "invoices:read").reasons == ["caller_not_allowed"]
}

test_actor_chain_depth_is_bounded if {
	decide(["svc:orders", "svc:edge", "svc:edge", "svc:edge"], "billing", "invoices:read").allow
	d := decide(["svc:orders", "svc:edge", "svc:edge", "svc:edge", "svc:edge"], "billing", "invoices:read")
	d.reasons == ["actor_chain_too_deep"]
}

test_actor_chain_must_be_an_array if {
	# A string is not silently read as "no chain", which would skip the caller rules.
	d := decision with input as fx.request({"actor_chain": "svc:reports"})
	not d.allow
	"invalid_input" in d.reasons
}

test_service_acting_as_itself_needs_a_rule if {
	svc := {"subject": {"type": "service", "id": "svc:orders"}, "actor_chain": []}
	decision.allow with input as fx.request(svc)
	d := decision with input as fx.request({"subject": {"type": "service", "id": "svc:reports"}})
	d.reasons == ["caller_not_allowed"]
}

test_call_rules_are_data_driven if {
	calls := {"billing": {"reports": ["invoices:read"]}}
	decide(["svc:reports"], "billing", "invoices:read").allow with data.tenantguard.config.calls as calls
	decide(["svc:orders"], "billing", "invoices:read").reasons == ["caller_not_allowed"] with data.tenantguard.config.calls as calls
}

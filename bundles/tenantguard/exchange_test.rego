package tenantguard.exchange_test

import rego.v1

import data.tenantguard.exchange
import data.tenantguard.fixtures_test as fx

exchange_for(patch) := result if {
	result := exchange.decision with input as fx.exchange_request(patch)
}

replace_scope(scope) := result if {
	result := exchange.decision with input as json.patch(
		fx.exchange_request({}),
		[{"op": "replace", "path": "/scope", "value": scope}],
	)
}

test_orders_may_exchange_towards_billing if {
	exchange_for({}) == {"allow": true, "reasons": [], "scope": ["invoices:read"], "max_lifetime": 120}
}

test_decision_has_exactly_the_contract_keys if {
	object.keys(exchange_for({})) == {"allow", "reasons", "scope", "max_lifetime"}
	object.keys(exchange.decision) == {"allow", "reasons", "scope", "max_lifetime"} with input as {}
}

test_requested_scopes_are_narrowed_to_the_rule if {
	d := replace_scope(["invoices:read", "invoices:delete", "invoices:write"])
	d.allow
	d.scope == ["invoices:read", "invoices:write"]
}

test_no_grantable_scope_is_denied if {
	d := replace_scope(["invoices:delete"])
	not d.allow
	d.reasons == ["scope_not_allowed"]
	d.scope == []
	d.max_lifetime == 0
}

test_requested_wildcard_is_not_granted_from_exact_rules if {
	replace_scope(["invoices:*"]).reasons == ["scope_not_allowed"]
}

test_reports_may_not_exchange_towards_billing if {
	d := exchange_for({"actor": {"service": "reports"}})
	not d.allow
	d.reasons == ["audience_not_allowed"]
}

test_unknown_audience_is_denied if {
	d := exchange_for({"audience": "payroll"})
	not d.allow
	d.reasons == ["audience_not_allowed", "unknown_service"]
}

test_subject_scope_narrows_the_grant if {
	d := json.patch(fx.exchange_request({"subject": {"properties": {"scope": ["invoices:read"]}}}), [
		{"op": "replace", "path": "/scope", "value": ["invoices:read", "invoices:write"]},
	])
	exchange.decision.scope == ["invoices:read"] with input as d
}

test_no_requested_scope_uses_the_subject_scope if {
	d := json.patch(fx.exchange_request({"subject": {"properties": {"scope": ["invoices:write", "orders:read"]}}}), [
		{"op": "remove", "path": "/scope"},
	])
	exchange.decision.scope == ["invoices:write"] with input as d
}

test_no_requested_scope_and_no_subject_scope_uses_the_rule if {
	d := json.remove(fx.exchange_request({}), ["scope"])
	exchange.decision.scope == ["invoices:read", "invoices:write"] with input as d
}

test_core_zone_audience_gets_the_core_lifetime if {
	d := exchange_for({"actor": {"service": "edge"}, "audience": "orders", "scope": ["orders:create"], "actor_chain": []})
	d.allow
	d.scope == ["orders:create"]
	d.max_lifetime == 300
}

test_subject_without_tenant_is_denied if {
	d := exchange.decision with input as json.remove(fx.exchange_request({}), ["subject/properties/tenant_id"])
	d.reasons == ["missing_tenant"]
}

test_chain_depth_is_bounded if {
	exchange_for({"actor_chain": ["svc:edge", "svc:edge", "svc:edge"]}).allow
	d := exchange_for({"actor_chain": ["svc:edge", "svc:edge", "svc:edge", "svc:edge"]})
	d.reasons == ["actor_chain_too_deep"]
}

test_missing_actor_is_invalid if {
	d := exchange.decision with input as json.remove(fx.exchange_request({}), ["actor"])
	not d.allow
	"invalid_input" in d.reasons
}

test_scope_must_be_an_array if {
	d := exchange_for({"scope": "invoices:read"})
	not d.allow
	"invalid_input" in d.reasons
}

test_empty_input_is_denied if {
	d := exchange.decision with input as {}
	not d.allow
	d.max_lifetime == 0
}

test_exchange_rules_are_data_driven if {
	exchange_for({"actor": {"service": "reports"}}).allow with data.tenantguard.config.calls.billing as {"reports": ["invoices:read"]}
}

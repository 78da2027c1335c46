package tenantguard.propagation_test

import rego.v1

import data.tenantguard.propagation

mode(source, target) := result if {
	result := propagation.mode with input as {"source": source, "target": target}
}

test_same_core_zone_forwards if mode("edge", "orders") == "forward"

test_into_the_sensitive_zone_exchanges if {
	mode("orders", "billing") == "exchange"
	mode("edge", "billing") == "exchange"
	mode("edge", "identity") == "exchange"
	mode("reports", "exports") == "exchange"
}

test_no_call_rule_is_denied if {
	mode("reports", "billing") == "deny"
	mode("orders", "edge") == "deny"
}

test_unknown_services_are_denied if {
	mode("orders", "payroll") == "deny"
	mode("payroll", "billing") == "deny"
}

test_malformed_input_is_denied if {
	propagation.mode == "deny" with input as {}
	propagation.mode == "deny" with input as {"source": 1, "target": ["billing"]}
}

test_inside_the_sensitive_zone_still_exchanges if {
	mode("billing", "exports") == "exchange" with data.tenantguard.config.calls.exports as {"billing": ["exports:read"]}
}

test_leaving_the_sensitive_zone_exchanges if {
	mode("billing", "orders") == "exchange" with data.tenantguard.config.calls.orders as {"billing": ["orders:read"]}
}

test_zones_are_data_driven if {
	mode("orders", "billing") == "forward" with data.tenantguard.config.services.billing as "core"
}

package tenantguard.risk_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

admin_doing(action_name) := result if {
	result := decision with input as fx.request({
		"subject": {"properties": {"roles": ["admin"]}},
		"action": {"name": action_name},
	})
}

test_export_all_is_high_risk if {
	d := admin_doing("export_all")
	d.allow
	d.high_risk
}

test_change_billing_is_high_risk if admin_doing("change_billing").high_risk

test_grant_admin_is_high_risk if admin_doing("grant_admin").high_risk

test_ordinary_actions_are_not_high_risk if {
	not admin_doing("invoices:read").high_risk
	not admin_doing("invoices:delete").high_risk
}

test_high_risk_is_reported_on_a_deny_too if {
	d := decision with input as fx.request({"action": {"name": "grant_admin"}})
	not d.allow
	d.high_risk
}

test_high_risk_actions_are_data_driven if {
	actions := {"invoices:delete": {"verb": "write", "high_risk": true}}
	admin_doing("invoices:delete").high_risk with data.tenantguard.config.actions as actions
}

test_empty_input_is_not_high_risk if {
	not decision.high_risk with input as {}
}

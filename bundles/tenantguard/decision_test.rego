package tenantguard.decision_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

# The request from the contract in bundles/README.md, verbatim.
contract_example := {
	"subject": {"type": "user", "id": "alice", "properties": {
		"tenant_id": "acme", "roles": ["editor"],
		"scope": ["invoices:read"],
	}},
	"action": {"name": "invoices:read"},
	"resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
	"context": {"service": "billing"},
	"token": null,
	"actor_chain": ["svc:orders", "svc:edge"],
	"relations": {"project:p1": ["member"], "group:eng": ["member"]},
}

# Alice's membership of p1 is the schema's answer to tg.related (relations_test.rego).
test_contract_example_is_allowed if {
	decision == {"allow": true, "reasons": [], "high_risk": false} with input as contract_example
		with data.tenantguard.project_member as true
}

test_baseline_is_allowed if {
	d := decision with input as fx.baseline
	d.allow
	d.reasons == []
}

test_decision_has_exactly_the_contract_keys if {
	d := decision with input as fx.baseline
	object.keys(d) == {"allow", "reasons", "high_risk"}
	is_boolean(d.allow)
	is_array(d.reasons)
	is_boolean(d.high_risk)
}

test_denied_decision_has_the_contract_keys if {
	d := decision with input as {}
	object.keys(d) == {"allow", "reasons", "high_risk"}
}

test_empty_input_is_denied_with_reasons if {
	d := decision with input as {}
	not d.allow
	"invalid_input" in d.reasons
	"missing_tenant" in d.reasons
}

test_reasons_are_sorted_and_unique if {
	viewer_writing := object.union(fx.in_project, {
		"subject": {"properties": {"roles": ["viewer"]}},
		"action": {"name": "invoices:write"},
	})
	d := decision with input as viewer_writing
	d.reasons == ["missing_role", "not_project_member"]
}

test_non_string_action_is_invalid if {
	d := decision with input as fx.request({"action": {"name": 42}})
	not d.allow
	"invalid_input" in d.reasons
}

test_missing_action_is_invalid if {
	d := decision with input as fx.without(["action"])
	not d.allow
	"invalid_input" in d.reasons
}

test_missing_subject_id_is_invalid if {
	d := decision with input as fx.without(["subject/id"])
	not d.allow
	"invalid_input" in d.reasons
}

test_no_grant_means_no_allow_even_without_other_reasons if {
	# No role at all: denied, and the reason says why.
	d := decision with input as fx.with_roles([])
	not d.allow
	d.reasons == ["missing_role"]
}

package tenantguard.scope_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

with_token(token, action_name) := result if {
	result := decision with input as fx.request({
		"token": token,
		"action": {"name": action_name},
	})
}

test_space_separated_token_scope if {
	with_token({"scope": "invoices:read invoices:write"}, "invoices:write").allow
}

test_array_token_scope if {
	with_token({"scope": ["invoices:read", "invoices:write"]}, "invoices:write").allow
}

test_action_outside_token_scope_is_denied if {
	d := with_token({"scope": "invoices:read"}, "invoices:write")
	not d.allow
	d.reasons == ["scope_exceeded"]
}

test_empty_token_scope_allows_nothing if {
	with_token({"scope": ""}, "invoices:read").reasons == ["scope_exceeded"]
	with_token({"scope": []}, "invoices:read").reasons == ["scope_exceeded"]
}

test_malformed_token_scope_allows_nothing if {
	with_token({"scope": 7}, "invoices:read").reasons == ["scope_exceeded"]
}

test_wildcard_token_scope if {
	with_token({"scope": "invoices:*"}, "invoices:write").allow
	with_token({"scope": "invoices:*"}, "orders:read").reasons == ["scope_exceeded"]
}

test_star_alone_is_not_a_wildcard if {
	with_token({"scope": "*"}, "invoices:read").reasons == ["scope_exceeded"]
}

test_scope_never_widens_roles if {
	d := decision with input as fx.request({
		"subject": {"properties": {"roles": ["viewer"]}},
		"token": {"scope": "invoices:write"},
		"action": {"name": "invoices:write"},
	})
	d.reasons == ["missing_role"]
}

test_token_without_scope_claim_is_not_limited if {
	with_token({"sub": "alice", "tenant_id": "acme"}, "invoices:write").allow
}

test_no_token_is_not_limited if {
	with_token(null, "invoices:write").allow
}

test_high_risk_action_needs_its_scope if {
	d := decision with input as fx.request({
		"subject": {"properties": {"roles": ["admin"]}},
		"token": {"scope": "invoices:read invoices:write"},
		"action": {"name": "grant_admin"},
	})
	d.reasons == ["scope_exceeded"]
}

test_subject_scope_from_a_local_pep_is_enforced if {
	d := decision with input as fx.request({
		"subject": {"properties": {"scope": ["invoices:read"]}},
		"action": {"name": "invoices:write"},
	})
	d.reasons == ["scope_exceeded"]
}

test_token_and_subject_scopes_both_apply if {
	both := {"subject": {"properties": {"scope": ["invoices:*"]}}, "token": {"scope": "invoices:read"}}
	decision.allow with input as fx.request(both)
	d := decision with input as fx.request(object.union(both, {"action": {"name": "invoices:write"}}))
	d.reasons == ["scope_exceeded"]
}

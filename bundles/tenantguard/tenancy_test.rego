package tenantguard.tenancy_test

import rego.v1

import data.tenantguard.act_as
import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

cross_tenant := fx.request({"resource": {"properties": {"tenant_id": "globex"}}})

test_same_tenant_is_allowed if {
	decision.allow with input as fx.baseline
}

test_cross_tenant_is_denied if {
	d := decision with input as cross_tenant
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_cross_tenant_is_denied_for_admins if {
	d := decision with input as object.union(cross_tenant, {"subject": {"properties": {"roles": ["admin"]}}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_cross_tenant_is_denied_even_with_relations_in_the_other_tenant if {
	d := decision with input as object.union(cross_tenant, {"relations": {"project:p1": ["owner"]}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_tenant_ids_compare_exactly if {
	d := decision with input as fx.request({"resource": {"properties": {"tenant_id": "ACME"}}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_missing_resource_tenant_is_denied if {
	d := decision with input as fx.without(["resource/properties/tenant_id"])
	not d.allow
	"missing_tenant" in d.reasons
	"tenant_mismatch" in d.reasons
}

test_missing_subject_tenant_is_denied if {
	d := decision with input as fx.without(["subject/properties/tenant_id"])
	not d.allow
	"missing_tenant" in d.reasons
}

test_empty_tenants_do_not_match_each_other if {
	d := decision with input as fx.request({
		"subject": {"properties": {"tenant_id": ""}},
		"resource": {"properties": {"tenant_id": ""}},
	})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_non_string_tenants_do_not_match if {
	d := decision with input as fx.request({
		"subject": {"properties": {"tenant_id": 7}},
		"resource": {"properties": {"tenant_id": 7}},
	})
	not d.allow
	"missing_tenant" in d.reasons
}

# ---------------------------------------------------------------- act-as (support)

test_act_as_support_with_reason_is_allowed if {
	d := decision with input as fx.support_request({})
	d.allow
	d.reasons == []
}

test_act_as_is_high_risk if {
	decision.high_risk with input as fx.support_request({})
}

test_act_as_needs_a_reason if {
	d := decision with input as json.remove(fx.support_request({}), ["context/act_as/reason"])
	not d.allow
	d.reasons == ["act_as_not_granted", "tenant_mismatch"]
}

test_act_as_needs_a_non_blank_reason if {
	d := decision with input as fx.support_request({"context": {"act_as": {"reason": "   "}}})
	not d.allow
	"act_as_not_granted" in d.reasons
}

test_act_as_needs_an_explicit_request if {
	d := decision with input as json.remove(fx.support_request({}), ["context/act_as"])
	not d.allow
	d.reasons == ["tenant_mismatch"]
}

test_act_as_must_name_the_resource_tenant if {
	d := decision with input as fx.support_request({"context": {"act_as": {"tenant_id": "initech"}}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_act_as_is_limited_to_the_granted_actions if {
	d := decision with input as fx.support_request({"action": {"name": "invoices:write"}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_act_as_needs_the_support_role if {
	d := decision with input as fx.support_request({"subject": {"properties": {"roles": ["admin"]}}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_act_as_needs_the_grant_home_tenant if {
	# A "support" role inside a customer tenant is just a name: no cross-tenant access.
	d := decision with input as fx.support_request({"subject": {"properties": {"tenant_id": "acme"}}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

test_act_as_still_respects_the_token_scope if {
	d := decision with input as fx.support_request({"token": {"scope": "tickets:read"}})
	not d.allow
	d.reasons == ["scope_exceeded"]
}

test_act_as_grant_can_list_tenants if {
	grants := [{"role": "support", "home_tenant": "tg_support", "tenants": ["initech"], "actions": ["invoices:read"]}]
	not decision.allow with input as fx.support_request({}) with data.tenantguard.config.act_as as grants
	decision.allow with input as fx.support_request({
		"resource": {"properties": {"tenant_id": "initech"}},
		"context": {"act_as": {"tenant_id": "initech"}},
	})
		with data.tenantguard.config.act_as as grants
}

test_act_as_inside_own_tenant_changes_nothing if {
	d := decision with input as fx.request({"context": {"act_as": {"tenant_id": "acme", "reason": "x"}}})
	d.allow
	not d.high_risk
}

test_act_as_entrypoint_answers_the_builtin_check if {
	act_as with input as fx.support_request({})
	not act_as with input as fx.support_request({"context": {"act_as": {"reason": ""}}})
	not act_as with input as cross_tenant
	not act_as with input as fx.baseline
	act_as == false with input as {}
}

# The decision never takes a bare flag for an act-as grant: it re-checks the grant.
test_act_as_flag_without_details_is_not_a_grant if {
	d := decision with input as fx.support_request({"context": {"act_as": true}})
	not d.allow
	"tenant_mismatch" in d.reasons
}

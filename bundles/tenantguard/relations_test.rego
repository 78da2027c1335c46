package tenantguard.relations_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

# Membership itself is the schema's (schema.fga, answered through tg.related, which no
# Rego test can call: it reads the sidecar's relations). These tests fix its answer with
# `with data.tenantguard.project_member as ...` and check what the rules make of it;
# schema_test.fga.yaml checks the schema's answers (`tenantguard bundle test` runs both), and
# tests/policy/test_example_schema.py the two together on real relations.

test_project_member_is_allowed if {
	decision.allow with input as fx.in_project with data.tenantguard.project_member as true
}

test_non_member_is_denied if {
	d := decision with input as fx.in_project
	not d.allow
	d.reasons == ["not_project_member"]
}

# Relations in the input are not membership: the policy asks the schema, never input.relations.
test_relations_in_the_input_are_not_membership if {
	d := decision with input as object.union(fx.in_project, {"relations": {"project:p1": ["member", "owner"]}})
	d.reasons == ["not_project_member"]
}

test_tenant_admin_needs_no_project_membership if {
	decision.allow with input as object.union(fx.in_project, {"subject": {"properties": {"roles": ["admin"]}}})
}

test_resource_without_project_needs_no_relation if {
	decision.allow with input as fx.baseline
}

test_membership_does_not_cross_tenants if {
	d := decision with input as object.union(fx.in_project, {"resource": {"properties": {"tenant_id": "globex"}}})
		with data.tenantguard.project_member as true
	not d.allow
}

test_non_string_project_is_invalid if {
	d := decision with input as fx.request({"resource": {"properties": {"project": ["p1"]}}})
	not d.allow
	"invalid_input" in d.reasons
}

test_empty_project_is_invalid if {
	d := decision with input as fx.request({"resource": {"properties": {"project": ""}}})
	not d.allow
	"invalid_input" in d.reasons
}

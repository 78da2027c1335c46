package tenantguard.relations_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

with_relations(relations) := json.patch(fx.baseline, [{"op": "replace", "path": "/relations", "value": relations}])

test_project_member_is_allowed if {
	decision.allow with input as with_relations({"project:p1": ["member"]})
}

test_project_owner_is_allowed if {
	decision.allow with input as with_relations({"project:p1": ["owner"]})
}

test_non_member_is_denied if {
	d := decision with input as with_relations({})
	not d.allow
	d.reasons == ["not_project_member"]
}

test_other_relation_on_the_project_is_not_membership if {
	d := decision with input as with_relations({"project:p1": ["viewer"]})
	d.reasons == ["not_project_member"]
}

test_membership_of_another_project_does_not_count if {
	d := decision with input as with_relations({"project:p2": ["member"]})
	d.reasons == ["not_project_member"]
}

# Python expands group membership (one level of nesting) before the policy runs: a
# user in group:eng, where group:eng#member is a member of project:p1, arrives with
# both entries. The policy reads the project entry and needs nothing else.
test_group_membership_expanded_by_python_is_accepted if {
	decision.allow with input as with_relations({
		"group:eng": ["member"],
		"project:p1": ["member"],
	})
}

# The policy does not expand groups itself: a group entry alone grants nothing.
test_group_membership_alone_grants_no_project if {
	d := decision with input as with_relations({"group:eng": ["member"]})
	d.reasons == ["not_project_member"]
}

test_tenant_admin_needs_no_project_membership if {
	decision.allow with input as object.union(
		with_relations({}),
		{"subject": {"properties": {"roles": ["admin"]}}},
	)
}

test_resource_without_project_needs_no_relation if {
	decision.allow with input as json.remove(with_relations({}), ["resource/properties/project"])
}

test_missing_relations_means_not_a_member if {
	d := decision with input as fx.without(["relations"])
	d.reasons == ["not_project_member"]
}

test_malformed_relation_value_means_not_a_member if {
	d := decision with input as with_relations({"project:p1": "member"})
	d.reasons == ["not_project_member"]
}

test_non_string_project_is_invalid if {
	d := decision with input as fx.request({"resource": {"properties": {"project": ["p1"]}}})
	not d.allow
	"invalid_input" in d.reasons
}

test_project_relations_are_data_driven if {
	decision.allow with input as with_relations({"project:p1": ["contributor"]})
		with data.tenantguard.config.project_relations as ["contributor"]
}

package tenantguard.roles_test

import rego.v1

import data.tenantguard.decision
import data.tenantguard.fixtures_test as fx

allowed(roles, action_name) if {
	decision.allow with input as fx.request({
		"subject": {"properties": {"roles": roles}},
		"action": {"name": action_name},
	})
}

reasons(roles, action_name) := result if {
	result := decision.reasons with input as fx.request({
		"subject": {"properties": {"roles": roles}},
		"action": {"name": action_name},
	})
}

test_viewer_can_read if allowed(["viewer"], "invoices:read")

test_viewer_can_list if allowed(["viewer"], "invoices:list")

test_viewer_cannot_write if reasons(["viewer"], "invoices:write") == ["missing_role"]

test_viewer_cannot_delete if not allowed(["viewer"], "invoices:delete")

test_editor_can_read if allowed(["editor"], "invoices:read")

test_editor_can_write if allowed(["editor"], "invoices:write")

test_editor_can_create_update_delete if {
	allowed(["editor"], "invoices:create")
	allowed(["editor"], "invoices:update")
	allowed(["editor"], "invoices:delete")
}

test_editor_cannot_grant_admin if reasons(["editor"], "grant_admin") == ["missing_role"]

test_editor_cannot_export_all if not allowed(["editor"], "export_all")

test_admin_can_do_everything if {
	allowed(["admin"], "invoices:read")
	allowed(["admin"], "invoices:write")
	allowed(["admin"], "grant_admin")
	allowed(["admin"], "export_all")
	allowed(["admin"], "change_billing")
}

test_roles_combine if allowed(["viewer", "editor"], "invoices:write")

test_unknown_role_grants_nothing if reasons(["superuser"], "invoices:read") == ["missing_role"]

test_no_roles_grant_nothing if not allowed([], "invoices:read")

test_non_string_roles_are_ignored if not allowed([{"name": "admin"}, 1], "invoices:read")

test_roles_must_be_an_array if {
	d := decision with input as fx.request({"subject": {"properties": {"roles": "admin"}}})
	not d.allow
	"invalid_input" in d.reasons
}

test_unknown_verb_needs_admin if {
	not allowed(["editor"], "invoices:frobnicate")
	allowed(["admin"], "invoices:frobnicate")
}

test_action_without_verb_needs_admin if {
	not allowed(["editor"], "rotate_keys")
	allowed(["admin"], "rotate_keys")
}

test_nested_action_names_need_admin if not allowed(["editor"], "invoices:lines:read")

test_roles_are_data_driven if {
	decision.allow with input as fx.with_roles(["auditor"])
		with data.tenantguard.config.roles as {"auditor": ["read"]}
}

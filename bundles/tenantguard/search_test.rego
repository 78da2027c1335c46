package tenantguard.search_test

import rego.v1

import data.tenantguard.search_actions

test_search_actions_cover_verbs_of_the_type if {
	actions := search_actions with input as {"resource": {"type": "invoice"}}
	"invoices:read" in actions
	"invoice:write" in actions
	"export_all" in actions
}

test_search_actions_list_only_named_actions_without_a_type if {
	actions := search_actions with input as {"resource": {}}
	actions == ["change_billing", "export_all", "grant_admin"]
}

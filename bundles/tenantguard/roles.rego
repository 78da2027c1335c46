# Roles within the subject's tenant: viewer reads, editor reads and writes, admin does
# everything including the admin-only actions (grant_admin, export_all, ...).
# Which verbs a role holds and which verb an action needs are data (config.roles,
# config.verbs, config.actions), so adding a role or an action needs no Rego change.
package tenantguard

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

subject_roles := {role |
	some role in lib.array_or_empty(object.get(input, ["subject", "properties", "roles"], []))
	is_string(role)
}

# The verb an action needs: listed explicitly, else from the part after ":"
# ("invoices:read" -> read), else "admin" so an unknown action needs the most
# privileged role rather than none.
action_verb(name) := verb if {
	verb := config.actions[name].verb
} else := verb if {
	parts := split(name, ":")
	count(parts) == 2
	verb := config.verbs[parts[1]]
} else := "admin"

granted_by_role if {
	some role in subject_roles
	action_verb(action) in config.roles[role]
}

deny contains "missing_role" if {
	same_tenant
	not granted_by_role
}

deny contains "invalid_input" if {
	lib.malformed_array(object.get(input, ["subject", "properties"], {}), "roles")
}

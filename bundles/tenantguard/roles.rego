# Roles within the subject's tenant: viewer reads, editor reads and writes, admin does
# everything including the admin-only actions (grant_admin, export_all, ...).
# Which verbs a role holds and which verb an action needs are data (config.roles,
# config.verbs, config.actions), so adding a role or an action needs no Rego change.
package tenantguard

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

subject_roles := {role |
	some role in lib.array_or_empty(input.subject.properties.roles)
	is_string(role)
}

# The verb the action needs: listed explicitly, else from the part after ":"
# ("invoices:read" -> read), else "admin" so an unknown action needs the most
# privileged role rather than none. A rule rather than a function of the action:
# a rule is evaluated once per decision, a function once per call.
required_verb := verb if {
	verb := config.actions[action].verb
} else := verb if {
	[_, name] := split(action, ":")
	verb := config.verbs[name]
} else := "admin"

granted_by_role if required_verb in config.roles[subject_roles[_]]

deny contains "missing_role" if {
	same_tenant
	not granted_by_role
}

deny contains "invalid_input" if lib.malformed_array(input.subject.properties, "roles")

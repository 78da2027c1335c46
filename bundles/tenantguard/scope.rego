# Scope: when the verified token (or the subject stated by a local PEP) carries a
# scope, the action must be within it. Both are checked when both are present, so a
# scope can only narrow what roles and relations allow.
package tenantguard

import rego.v1

import data.tenantguard.lib

scope_sources contains scope if {
	scope := input.token.scope
	scope != null
}

scope_sources contains scope if {
	scope := input.subject.properties.scope
	scope != null
}

deny contains "scope_exceeded" if {
	some scope in scope_sources
	not lib.any_covers(lib.scope_set(scope), action)
}

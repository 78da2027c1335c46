# Helpers shared by the decision, exchange and propagation packages.
#
# Everything here reads data.tenantguard.config (data.json) and is total: a helper
# given a value of the wrong type is undefined or false, never an evaluation error,
# so a malformed request is denied with a reason instead of failing the evaluation.
package tenantguard.lib

import rego.v1

import data.tenantguard.config

# A non-empty string: tenant ids, project ids, service names.
valid_id(x) if {
	is_string(x)
	x != ""
}

# "svc:orders" -> "orders". Actors in a chain are always services.
service_name(actor) := name if {
	is_string(actor)
	startswith(actor, "svc:")
	name := trim_prefix(actor, "svc:")
	name != ""
}

zone_of(service) := config.services[service]

sensitive_zone(zone) if config.zones[zone].sensitive == true

# The scopes `caller` may use when calling `callee`: one line per callee in data.json.
# Undefined when the pair has no rule, which every user of it treats as "not allowed".
call_scopes(caller, callee) := scopes if {
	callers := config.calls[callee] # one variable key per reference (bundles/README.md, 10)
	scopes := callers[caller]
	is_array(scopes)
}

# Scopes come as an RFC 8693 space-separated string or as an array of strings.
scope_set(s) := {x | some x in split(s, " "); x != ""} if {
	is_string(s)
} else := {x | some x in s; is_string(x)} if {
	is_array(s)
} else := set()

# "invoices:read" covers itself; "invoices:*" covers every "invoices:..." action.
scope_covers(granted, wanted) if granted == wanted

scope_covers(granted, wanted) if {
	endswith(granted, ":*")
	startswith(wanted, trim_suffix(granted, "*"))
}

any_covers(granted_scopes, wanted) if {
	some granted in granted_scopes
	scope_covers(granted, wanted)
}

# An array input field, or [] when absent. A present field of another type is
# reported by the caller (see `malformed_array`) instead of being treated as empty.
array_or_empty(x) := x if {
	is_array(x)
} else := []

malformed_array(obj, key) if {
	is_object(obj)
	value := obj[key]
	not is_array(value)
}

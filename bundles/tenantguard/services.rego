# Service-to-service rules. A call made by a service (on behalf of a user, with the
# user as subject and the services in actor_chain, nearest first; or by a service as
# its own subject) is allowed only when config.calls has a line for
# callee <- caller that covers the action, e.g.
#   "billing": {"orders": ["invoices:read", "invoices:write"]}
# reads "billing accepts calls from orders for these scopes"; reports has no line,
# so billing never accepts a call from reports, whatever the user may do.
package tenantguard

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

default actor_chain := []

actor_chain := input.actor_chain if is_array(input.actor_chain)

default callee := ""

callee := input.context.service

# The service that called this one directly.
caller := lib.service_name(actor_chain[0]) if {
	count(actor_chain) > 0
} else := lib.service_name(input.subject.id) if {
	input.subject.type == "service"
}

service_call if count(actor_chain) > 0

service_call if input.subject.type == "service"

caller_allowed if {
	lib.valid_id(callee)
	some scope in lib.call_scopes(caller, callee)
	lib.scope_covers(scope, action)
}

deny contains "caller_not_allowed" if {
	service_call
	not caller_allowed
}

# Every hop must be a service; a chain naming anything else was not built by us.
deny contains "caller_not_allowed" if {
	some actor in actor_chain
	not lib.service_name(actor)
}

deny contains "actor_chain_too_deep" if count(actor_chain) > config.max_actor_chain

deny contains "invalid_input" if {
	chain := input.actor_chain
	not is_array(chain)
}

# Candidate actions for AuthZEN action search (POST /access/v1/search/action): the sidecar
# asks this sibling of the decision rule which action names to consider for a resource,
# then decides each one with the decision rule. Proposing an action grants nothing.
#
# For a resource of type "invoice": "invoice:<verb>" and "invoices:<verb>" for every verb
# in config.verbs, plus the named actions of config.actions.
package tenantguard

import rego.v1

import data.tenantguard.config

search_actions := sort([name |
	some name in search_action_names
])

search_action_names contains concat(":", [prefix, verb]) if {
	is_string(input.resource.type)
	some prefix in {input.resource.type, concat("", [input.resource.type, "s"])}
	some verb, _ in config.verbs
}

search_action_names contains name if some name, _ in config.actions

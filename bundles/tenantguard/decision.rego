# METADATA
# title: tenantguard decision
# description: |
#   The entrypoint data.tenantguard.decision. Input is an AuthZEN 1.0 shaped request
#   plus the verified token, the actor chain and the subject's relations in its tenant
#   (see bundles/README.md). Output: {"allow", "reasons", "high_risk"}.
#
#   Every check lives in its own file and adds a stable short string to `deny`;
#   the request is allowed only when something grants it and nothing denies it.
package tenantguard

import rego.v1

import data.tenantguard.lib

decision := {
	"allow": allow,
	"reasons": sort(deny),
	"high_risk": high_risk,
}

default allow := false

allow if {
	count(deny) == 0
	granted
}

# A positive grant: a role in the subject's own tenant, or an act-as grant across tenants.
granted if {
	same_tenant
	granted_by_role
}

granted if acting_as

# ---------------------------------------------------------------- request fields

subject_tenant := object.get(input, ["subject", "properties", "tenant_id"], "")

resource_tenant := object.get(input, ["resource", "properties", "tenant_id"], "")

# Always a string, so the checks below never meet a type error.
action := name if {
	name := input.action.name
	is_string(name)
} else := ""

# ---------------------------------------------------------------- malformed requests

deny contains "invalid_input" if not is_object(input)

deny contains "invalid_input" if not lib.valid_id(action)

deny contains "invalid_input" if not lib.valid_id(object.get(input, ["subject", "id"], ""))

deny contains "missing_tenant" if not lib.valid_id(subject_tenant)

deny contains "missing_tenant" if not lib.valid_id(resource_tenant)

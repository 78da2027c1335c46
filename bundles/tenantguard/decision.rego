# METADATA
# title: tenantguard decision
# description: |
#   The entrypoint data.tenantguard.decision. Input is an AuthZEN 1.0 shaped request
#   plus the verified token, the actor chain and the subject's relations in its tenant
#   (see bundles/README.md). Output: {"allow", "reasons", "high_risk"}.
#
#   Every check lives in its own file and adds a stable short string to `deny`;
#   the request is allowed only when something grants it and nothing denies it.
#
#   `decision` reads `deny` and nothing else decides: a deny rule added in any file of
#   the package takes effect on every request, with no other edit. Speed comes from the
#   sidecar, never from rule bodies restating other rules (bundles/README.md, "How to
#   keep a policy fast"): it answers a question asked again from its verdict memo, keyed
#   on exactly the input members this bundle's modules mention, and the built-in checks
#   (token, tenant, kill switch, scope of the relations) run in Python before the policy.
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
# Direct references with a default: cheaper than object.get(input, [...], default),
# and (with no bare `input` anywhere) they let the engine pass the policy only the
# input fields it reads.

default subject_tenant := ""

subject_tenant := input.subject.properties.tenant_id

default resource_tenant := ""

resource_tenant := input.resource.properties.tenant_id

# Always a string, so the checks below never meet a type error.
default action := ""

action := input.action.name if is_string(input.action.name)

# ---------------------------------------------------------------- malformed requests
# A request that is not an object has no action either, so it is reported below.

deny contains "invalid_input" if not lib.valid_id(action)

deny contains "invalid_input" if not lib.valid_id(subject_id)

deny contains "missing_tenant" if not lib.valid_id(subject_tenant)

deny contains "missing_tenant" if not lib.valid_id(resource_tenant)

default subject_id := ""

subject_id := input.subject.id

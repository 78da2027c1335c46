# Tenant isolation. The sidecar also compares the tenants in Python before the policy
# runs; this file enforces it again so a policy bug or a skipped built-in check alone
# cannot open one tenant's data to another (defence in depth).
#
# The only way across tenants is an act-as grant listed in data.json
# (config.act_as), requested explicitly in context.act_as with a reason that the
# decision log keeps: {"tenant_id": "<target tenant>", "reason": "<ticket or why>"}.
package tenantguard

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

same_tenant if {
	lib.valid_id(subject_tenant)
	subject_tenant == resource_tenant
}

default act_as_request := null

act_as_request := input.context.act_as

# Cross-tenant access through an explicit, audited grant. Roles and relations of the
# target tenant do not apply; the grant lists the actions it allows.
acting_as if {
	not same_tenant
	lib.valid_id(subject_tenant)
	lib.valid_id(resource_tenant)
	is_object(act_as_request)
	act_as_request.tenant_id == resource_tenant
	audited_reason(act_as_request)
	some grant in config.act_as
	grant.home_tenant == subject_tenant
	grant.role in subject_roles
	tenant_covered(grant.tenants, resource_tenant)
	action in grant.actions
}

# data.tenantguard.act_as: the decision core asks this before its built-in tenant check
# lets a cross-tenant request through to the decision (which checks it again).
default act_as := false

act_as if acting_as

audited_reason(request) if {
	is_string(request.reason)
	trim_space(request.reason) != ""
	count(request.reason) <= 512
}

tenant_covered(tenants, tenant) if "*" in tenants

tenant_covered(tenants, tenant) if tenant in tenants

deny contains "tenant_mismatch" if {
	not same_tenant
	not acting_as
}

deny contains "act_as_not_granted" if {
	act_as_request != null
	not same_tenant
	not acting_as
}

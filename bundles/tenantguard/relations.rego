# Relationship rules. The sidecar hands the policy the subject's relations in its
# tenant, group memberships already expanded (a user in group:eng that is a member of
# project:p1 arrives with "project:p1": ["member"]), so the policy only looks them up.
#
# A resource that belongs to a project needs the subject to hold one of
# config.project_relations on it; tenant admins are exempt.
package tenantguard

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

default resource_project := null

resource_project := input.resource.properties.project

project_member if {
	lib.valid_id(resource_project)
	held := input.relations[concat(":", ["project", resource_project])]
	is_array(held)
	held[_] in config.project_relations
}

tenant_admin if "admin" in subject_roles

deny contains "not_project_member" if {
	same_tenant
	resource_project != null
	not tenant_admin
	not project_member
}

deny contains "invalid_input" if {
	resource_project != null
	not lib.valid_id(resource_project)
}

# Relationship rules. A resource that belongs to a project (`resource.properties.project`)
# needs the subject to hold one of config.project_relations on that project (the example
# data asks for "member"); tenant admins are exempt.
#
# Membership is the schema's (schema.fga): tg.related asks it, in the subject's tenant, on
# the sidecar's relations (no round trip). A member is one named directly, through a team
# (nested teams too), an owner, or a member of a folder the project sits in.
package tenantguard

import rego.v1

import data.tenantguard.config
import data.tenantguard.lib

default resource_project := null

resource_project := input.resource.properties.project

project_member if {
	lib.valid_id(resource_project)
	is_string(input.subject.type)
	lib.valid_id(subject_id)
	some relation in config.project_relations
	tg.related(concat(":", ["project", resource_project]), relation, concat(":", [input.subject.type, subject_id]))
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

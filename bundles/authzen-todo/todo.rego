# The AuthZEN interop "Todo" scenario (AuthZEN 1.0), as a tenantguard bundle.
#
# Scenario: https://authzen-interop.net/docs/scenarios/todo-1.0-id (openid/authzen,
# interop/authzen-interop-website/docs/scenarios/todo-1.0-id/index.md). The PEP names the
# subject by its PID and the action by its permission; the users' attributes (email id,
# roles) are this bundle's data (the scenario's PIP). Tenancy is the sidecar's: run it
# with --tenant, or bind the PEP's key to a tenant (docs/decision-input.md).
package todo

import rego.v1

# Subjects the PIP does not know are denied everything, the "always true" reads included.
user := data.todo.users[input.subject.id] if input.subject.type == "user"

roles contains role if some role in user.roles

# The owner of a todo is named by its email id in resource.properties.ownerID.
owner if {
	input.resource.type == "todo"
	input.resource.properties.ownerID == user.id
}

default allow := false

# Viewing users and the todo list: every known user.
allow if {
	user
	input.action.name in {"can_read_user", "can_read_todos"}
}

allow if {
	input.action.name == "can_create_todo"
	some role in ["admin", "editor"]
	role in roles
}

# evil_genius edits anyone's todos; an editor edits their own.
allow if {
	input.action.name == "can_update_todo"
	"evil_genius" in roles
}

allow if {
	input.action.name == "can_update_todo"
	"editor" in roles
	owner
}

# admin deletes anyone's todos; an editor deletes their own.
allow if {
	input.action.name == "can_delete_todo"
	"admin" in roles
}

allow if {
	input.action.name == "can_delete_todo"
	"editor" in roles
	owner
}

reasons := [] if allow
else := ["unknown_subject"] if not user
else := ["not_permitted"]

decision := {"allow": allow, "reasons": reasons}

# No cross-tenant access in this scenario (the sidecar asks this before a cross-tenant question).
act_as := false

# Candidate actions for AuthZEN action search: each is then decided by `decision`.
search_actions := ["can_create_todo", "can_delete_todo", "can_read_todos", "can_read_user", "can_update_todo"]

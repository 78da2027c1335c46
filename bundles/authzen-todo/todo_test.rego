package todo.todo_test

import data.todo.decision
import rego.v1

rick := "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"

morty := "CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"

beth := "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"

ask(subject, action, resource) := {
	"subject": {"type": "user", "id": subject, "properties": {"tenant_id": "acme"}},
	"action": {"name": action},
	"resource": resource,
	"context": {"service": "todo"},
}

todo_of(owner) := {"type": "todo", "id": "t1", "properties": {"ownerID": owner, "tenant_id": "acme"}}

list := {"type": "todo", "id": "todo-1"}

test_every_known_user_reads if {
	decision.allow with input as ask(beth, "can_read_todos", list)
	decision.allow with input as ask(beth, "can_read_user", {"type": "user", "id": "rick@the-citadel.com"})
}

test_unknown_subject_reads_nothing if {
	d := decision with input as ask("nobody", "can_read_todos", list)
	not d.allow
	d.reasons == ["unknown_subject"]
}

test_subject_must_be_a_user if {
	d := decision with input as json.patch(ask(rick, "can_read_todos", list), [{"op": "replace", "path": "/subject/type", "value": "service"}])
	not d.allow
}

test_create_needs_admin_or_editor if {
	decision.allow with input as ask(rick, "can_create_todo", list)
	decision.allow with input as ask(morty, "can_create_todo", list)
	d := decision with input as ask(beth, "can_create_todo", list)
	not d.allow
	d.reasons == ["not_permitted"]
}

test_editor_updates_and_deletes_own_todos_only if {
	decision.allow with input as ask(morty, "can_update_todo", todo_of("morty@the-citadel.com"))
	decision.allow with input as ask(morty, "can_delete_todo", todo_of("morty@the-citadel.com"))
	not allowed(ask(morty, "can_update_todo", todo_of("rick@the-citadel.com")))
	not allowed(ask(morty, "can_delete_todo", todo_of("rick@the-citadel.com")))
}

test_evil_genius_updates_and_admin_deletes_any if {
	decision.allow with input as ask(rick, "can_update_todo", todo_of("morty@the-citadel.com"))
	decision.allow with input as ask(rick, "can_delete_todo", todo_of("morty@the-citadel.com"))
}

test_viewer_changes_nothing_not_even_own if {
	not allowed(ask(beth, "can_update_todo", todo_of("beth@the-smiths.com")))
	not allowed(ask(beth, "can_delete_todo", todo_of("beth@the-smiths.com")))
}

test_ownership_needs_a_todo_resource if {
	r := {"type": "note", "id": "n1", "properties": {"ownerID": "morty@the-citadel.com"}}
	not allowed(ask(morty, "can_update_todo", r))
}

test_unknown_action_denied if {
	not allowed(ask(rick, "can_launch_portal_gun", list))
}

test_no_act_as if {
	not data.todo.act_as with input as ask(rick, "can_read_todos", list)
}

allowed(request) if {
	d := decision with input as request
	d.allow
}

package cert.cert_test

import data.cert.decision
import rego.v1

ask(subject, action, resource) := {
	"subject": object.union({"type": "user", "properties": {"tenant_id": "acme"}}, subject),
	"action": action,
	"resource": resource,
}

record1 := {"type": "record", "id": "record-1"}

archived := {"type": "record", "id": "record-2", "properties": {"status": "archived"}}

test_rules_1_to_4 if {
	decision.allow with input as ask({"id": "alice"}, {"name": "read"}, record1)
	decision.allow with input as ask({"id": "alice"}, {"name": "write"}, record1)
	decision.allow with input as ask({"id": "bob"}, {"name": "read"}, record1)
	not decision.allow with input as ask({"id": "bob"}, {"name": "write"}, record1)
}

test_rules_5_and_6 if {
	not decision.allow with input as ask({"id": "alice"}, {"name": "write"}, archived)
	admin := {"id": "bob", "properties": {"tenant_id": "acme", "role": "admin"}}
	decision.allow with input as ask(admin, {"name": "write"}, archived)
}

test_rules_7_and_8 if {
	decision.allow with input as ask({"id": "alice"}, {"name": "delete", "properties": {"soft": true}}, record1)
	not decision.allow with input as ask({"id": "alice"}, {"name": "delete", "properties": {"soft": false}}, record1)
}

test_unknown_subjects_and_types_get_nothing if {
	not decision.allow with input as ask({"id": "nonexistent-user"}, {"name": "read"}, record1)
	not decision.allow with input as ask({"type": "spaceship", "id": "x"}, {"name": "read"}, record1)
}

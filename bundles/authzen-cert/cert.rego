# The AuthZEN 1.0 certification fixture (openid/authzen certification/authorization-api-1_0-scenario.md,
# "Required Fixture"), as a tenantguard bundle: the eight decisions the harness validates, and
# search answers S1-S6 (candidates come from the relations the test loads: record#viewer@user).
#
#   1 alice read record-1: true        5 alice write an archived record: false
#   2 alice write record-1: true       6 a subject with role "admin" writes an archived record: true
#   3 bob read record-1: true          7 alice delete record-1, soft true: true
#   4 bob write record-1: false        8 alice delete record-1, soft false: false
#
# Properties in the request win over the fixture's own attributes (the PIP, data.json).
package cert

import rego.v1

user := data.cert.users[input.subject.id] if input.subject.type == "user"

role := input.subject.properties.role if input.subject.properties.role
else := user.role

record := data.cert.records[input.resource.id] if input.resource.type == "record"

status := input.resource.properties.status if input.resource.properties.status
else := record.status

archived if status == "archived"

default allow := false

allow if {
	user
	input.action.name == "read"
}

allow if {
	input.action.name == "write"
	not archived
	user.edits_active
}

allow if {
	input.action.name == "write"
	archived
	role == "admin"
}

allow if {
	input.action.name == "delete"
	user.edits_active
	input.action.properties.soft == true
}

reasons := [] if allow
else := ["not_permitted"]

decision := {"allow": allow, "reasons": reasons}

act_as := false

# Candidate actions for AuthZEN action search: each is then decided by `decision`.
search_actions := ["delete", "read", "write"]

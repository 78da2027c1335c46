# METADATA
# title: outbound propagation mode
# description: |
#   The entrypoint data.tenantguard.propagation.mode: how a service's outbound call
#   carries the caller's context. Input {"source": "orders", "target": "billing"}.
#   "forward": the target is in the same trust zone and the zone is not sensitive;
#   "exchange": the call crosses zones or enters a sensitive zone, so the sidecar
#   mints a narrowed token for the target (RFC 8693);
#   "deny": unknown service, or the target accepts no calls from the source.
package tenantguard.propagation

import rego.v1

import data.tenantguard.lib

default mode := "deny"

mode := "forward" if {
	call_allowed
	lib.zone_of(input.source) == lib.zone_of(input.target)
	not lib.sensitive_zone(lib.zone_of(input.target))
} else := "exchange" if {
	call_allowed
}

# Both services are known and the target has a config.calls line for the source.
call_allowed if {
	lib.zone_of(input.source)
	lib.zone_of(input.target)
	lib.call_scopes(input.source, input.target)
}

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

default mode := "deny"

# Written out with one data reference per branch instead of through the lib helpers:
# the sidecar asks this for every outbound call, and each helper call or rule
# reference costs a few microseconds (bundles/README.md, "How to keep a policy fast").
mode := "forward" if {
	config := data.tenantguard.config
	source_zone := config.services[input.source]
	target_zone := config.services[input.target]
	callers := config.calls[input.target] # one variable key per reference (bundles/README.md, 10)
	is_array(callers[input.source]) # a call rule exists
	source_zone == target_zone
	not config.zones[target_zone].sensitive == true
} else := "exchange" if {
	config := data.tenantguard.config
	config.services[input.source]
	config.services[input.target]
	callers := config.calls[input.target]
	is_array(callers[input.source])
}

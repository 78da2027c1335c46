# High-risk decisions. The sidecar confirms an allowed high-risk decision against the
# authoritative store (and fails closed when it cannot), so this only marks them:
# the actions flagged in config.actions, and every cross-tenant act-as access.
package tenantguard

import rego.v1

import data.tenantguard.config

default high_risk := false

high_risk if config.actions[action].high_risk == true

high_risk if acting_as

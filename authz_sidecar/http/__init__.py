"""The sidecar's HTTP doors: each parses, hands off to the decision core, renders."""

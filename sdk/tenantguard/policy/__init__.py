"""Rego behind a protocol: the prepared engine (regorus) and the bundle's own test runner."""

"""Sidecar clients (async and sync) and the sans-IO core they share; see ``tenantguard.client``."""

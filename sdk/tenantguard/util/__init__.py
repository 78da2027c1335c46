"""Small shared readers and writers with no tenantguard state: bounded JSON, URLs, atomic files, HTTP TLS settings."""

"""tenantguard: tenant-safe authorization for microservices (the library)."""

__version__ = "0.1.0"

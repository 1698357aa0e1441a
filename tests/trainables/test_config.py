"""When a trial decodes answers (trainables.config.EvalConfig.generates_at): the last step always,
every `generate_every` steps, step 0 only with `generate_at_start`. Fast: no model."""

from __future__ import annotations

import pytest

from trainables.config import EvalConfig


def _steps(cfg: EvalConfig, last: int = 512) -> list[int]:
    return [s for s in range(last + 1) if cfg.generates_at(s, final=s == last)]


@pytest.mark.parametrize(
    ("given", "steps"),
    [
        ({}, [512]),  # generate_every 0: the last step only
        ({"generate_every": 256}, [0, 256, 512]),
        ({"generate_every": 256, "generate_at_start": False}, [256, 512]),
        ({"generate_every": 200}, [0, 200, 400, 512]),  # the last step, off the stride, too
        ({"generate_every": 0, "generate_at_start": False}, [512]),
    ],
)
def test_generation_steps(given, steps):
    assert _steps(EvalConfig(**given)) == steps

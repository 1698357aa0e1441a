"""The learning-rate schedules (trainables/worker/schedule.py) and their settings: the cosine
decay as before, a constant rate after the warm-up, warmup-stable-decay with its decay where the
config puts it; a decay that does not fit the run is refused, naming the key."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from trainables.config import TrainConfig
from trainables.worker.schedule import lr_factor


def factors(**train) -> list[float]:
    config = TrainConfig.model_validate(train)
    return [lr_factor(s, config) for s in range(config.steps + 2)]


def test_cosine_is_the_default_and_unchanged():
    got = factors(steps=20, warmup_steps=4, min_lr_ratio=0.1)
    # warm-up (s + 1) / 4, then 0.1 + 0.9 · ½(1 + cos(π (s − 4) / 16)), held after the end
    expected = [(s + 1) / 4 for s in range(4)] + [
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, (s - 4) / 16))) for s in range(4, 22)
    ]
    assert got == pytest.approx(expected)
    assert got[4] == 1.0 and got[20] == pytest.approx(0.1)


def test_constant_holds_the_peak_after_the_warm_up():
    assert factors(steps=10, warmup_steps=3, schedule="constant") == pytest.approx(
        [1 / 3, 2 / 3, 1.0] + [1.0] * 9
    )
    assert factors(steps=3, warmup_steps=0, schedule="constant") == [1.0] * 5


def test_warmup_stable_decay_falls_where_it_is_registered():
    got = factors(
        steps=12, warmup_steps=2, schedule="wsd", decay_start=6, decay_steps=4, min_lr_ratio=0.2
    )
    # warm-up 0.5, 1; stable 1 to step 6; then 1 − 0.8 · (s − 6) / 4 down to 0.2 at step 10
    expected = [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2, 0.2, 0.2, 0.2]
    assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    ("train", "message"),
    [
        ({"schedule": "wsd", "decay_start": 5}, "needs train.decay_start and train.decay_steps"),
        ({"schedule": "cosine", "decay_steps": 5}, "train.decay_steps is for train.schedule: wsd"),
        ({"schedule": "constant", "decay_start": 5}, r"decay_start is for .*constant"),
        (
            {"schedule": "wsd", "decay_start": 5, "decay_steps": 10, "warmup_steps": 8},
            "decay_start: 5 is inside the warm-up",
        ),
        (
            {"schedule": "wsd", "decay_start": 60, "decay_steps": 50, "steps": 100},
            "= 110 is past train.steps",
        ),
        ({"schedule": "linear"}, "schedule"),
    ],
)
def test_a_schedule_that_does_not_fit_is_refused(train, message):
    with pytest.raises(ValidationError, match=message):
        TrainConfig.model_validate(train)

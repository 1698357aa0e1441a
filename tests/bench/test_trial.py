"""bench.trial's comparison windows: with several trials at once, each side counts only what
ran while every trial trained."""

from __future__ import annotations

import pytest

from bench.trial import trials_steady


def trial(trained_from: float, trained_until: float, windows: list[tuple[float, float]]) -> dict:
    """A trial as `numsweep_trials` gives it: (step time, unix time stored) per window."""
    return {
        "trained_from": trained_from,
        "trained_until": trained_until,
        "step_windows_s": [w for w, _ in windows],
        "step_window_at": [at for _, at in windows],
    }


def test_only_windows_stored_while_every_trial_trained_count():
    # The first trial trains alone from t=10 to t=12 (fast windows, 0.010 s), both from 12 to 20
    # (0.020-0.024 s), the second alone from 20 to 22 (fast again).
    first = trial(10, 20, [(0.010, 11), (0.011, 12), (0.020, 14), (0.022, 16), (0.024, 18)])
    second = trial(12, 22, [(0.021, 14), (0.023, 16), (0.025, 18), (0.012, 21), (0.010, 22)])
    # Kept: first 0.011 (at 12, the window that warm-up dropping removes), 0.020, 0.022, 0.024;
    # second 0.021, 0.023, 0.025. steady() drops each list's first window and takes the median.
    assert trials_steady([first, second], "x") == [pytest.approx(0.022), pytest.approx(0.024)]


def test_a_trial_with_too_few_shared_windows_is_refused():
    first = trial(10, 12, [(0.010, 11), (0.011, 12)])
    second = trial(11, 20, [(0.021, 14), (0.023, 16)])
    with pytest.raises(SystemExit, match="x: a trial stored only 0 windows"):
        trials_steady([first, second], "x")

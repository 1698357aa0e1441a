"""A size's point is the mean over its trials, and the same to the last bit whatever order the
trials' rows come in (`aggregate_points` sums them in trial order): floating-point addition is not
associative, so without that order a rebuilt report's last digits would change from run to run."""

from __future__ import annotations

import polars as pl

from analysis.scaling.points import aggregate_points


def test_a_size_mean_is_the_same_in_any_row_order() -> None:
    # Three trials of one size whose values sum differently by order: in trial order
    # (0.1 + 0.2) + 0.3 = 0.6000000000000001, in the reverse order (0.3 + 0.2) + 0.1 = 0.6.
    values = {"t1": 0.1, "t2": 0.2, "t3": 0.3}
    assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1  # the premise
    rows = [
        {
            "loss": "mle",
            "metric": "m",
            "model": "xs",
            "N": 100.0,
            "step": 10,
            "trial_id": t,
            "value": v,
        }
        for t, v in values.items()
    ]
    means = set()
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        frame = pl.DataFrame([rows[i] for i in order])
        points = aggregate_points(frame, ["loss"], "N", "size")
        assert points["trials"].to_list() == [3]
        means.add(points["y"].item())
    assert means == {((0.1 + 0.2) + 0.3) / 3}  # one mean, the trial-order sum over 3

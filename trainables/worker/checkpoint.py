"""A trial's reports and checkpoints through Ray Train: restore, replay, save, stop.

Every `eval.every` steps the worker reports its metrics; at `train.checkpoint_every` steps (and
the last) the report carries a checkpoint, every rank saving its own DeepSpeed shard (Ray Train
merges them into one). A restarted worker group restores the latest: the step, the tokens seen,
the trial's cost so far (`trainables.worker.trial_cost`), and the metrics of the latest reports,
which it reports again (`replay`) because Ray Train commits a checkpoint before its report reaches
the sweep driver. A trial whose loss became non-finite saves a marker checkpoint instead (`stop`),
so that a resumed trial stays stopped.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import ray.train

from trainables.worker.report_protocol import REPLAYED_KEY, STOPPED_FILE, STOPPED_KEY
from trainables.worker.trial_cost import CostMeter

CHECKPOINT_TAG = "numsweep"
# A checkpoint carries the metrics of this many latest reports, all reported again on resume.
# Between the worker and the sweep driver's Parquet sink a report passes a chain of one-slot
# queues (the worker's, the Tune session's, the Tune driver's pending result), so a few reports
# whose checkpoints Ray Train has committed can still be on their way when the driver dies;
# this is well above that depth. The sink drops the steps it already has.
REPLAYED_REPORTS = 8


class TrialCheckpoint:
    """The reports and checkpoints of one trial on one rank (every rank holds one).

    `engine` is the trial's DeepSpeed engine (`save_checkpoint` / `load_checkpoint`)."""

    def __init__(self, engine: Any, cost: CostMeter) -> None:
        self.engine = engine
        self.cost = cost
        """The trial's cost meter: its state is saved with each checkpoint and restored."""
        self.start_step = 0
        """The step training starts from: 0, or the restored checkpoint's."""
        self.tokens_seen = 0.0
        """Non-padding input tokens trained on before `start_step` (all micro-batches, ranks)."""
        self.reports: list[dict[str, Any]] = []
        """The latest REPLAYED_REPORTS reports, oldest first."""

    def restore(self) -> bool:
        """Load Ray Train's latest checkpoint, if any, into the engine and this object. False: the
        checkpoint is a stop marker (the trial stopped for a non-finite loss; that is final)."""
        checkpoint = ray.train.get_checkpoint()
        if checkpoint is None:
            return True
        with checkpoint.as_directory() as directory:
            if Path(directory, STOPPED_FILE).is_file():
                return False
            _, client_state = self.engine.load_checkpoint(directory, tag=CHECKPOINT_TAG)
        self.start_step = int(client_state["step"])
        self.tokens_seen = float(client_state["tokens_seen"])
        self.reports = client_state["reports"]
        self.cost.restore(client_state.get("cost"))  # absent in checkpoints from before it
        return True

    def replay(self) -> None:
        """Report the restored reports again: a crash between Ray Train committing a checkpoint
        and its report reaching the sweep driver would otherwise lose those steps for good (the
        Parquet sink drops the steps it already has)."""
        for metrics in self.reports:
            ray.train.report({**metrics, REPLAYED_KEY: True})

    def report(self, step: int, metrics: dict[str, float], *, save: bool) -> None:
        """Report `metrics` of `step` (NaN ones left out), with a checkpoint when `save`."""
        # NaN marks a metric with nothing to measure (e.g. decimal-place accuracy on integers):
        # leave it out rather than store a number nobody computed.
        metrics = {"step": step, **{k: v for k, v in metrics.items() if not math.isnan(v)}}
        self.reports.append(metrics)
        del self.reports[:-REPLAYED_REPORTS]
        if not save:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory() as directory:
            # Every rank writes its own ZeRO shard; Ray Train merges them into one checkpoint.
            state = {
                "step": step,
                "reports": self.reports,
                "tokens_seen": self.tokens_seen,
                "cost": self.cost.state(),
            }
            self.engine.save_checkpoint(directory, tag=CHECKPOINT_TAG, client_state=state)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory))

    def stop(self, step: int, reason: str) -> None:
        """Stop the trial cleanly at `step`: raising would make Ray Train retry from the last
        checkpoint, which fails the same way. A marker checkpoint carries `reason` to the Tune
        driver, which fails the trial with it, and keeps the trial stopped if ever resumed."""
        with tempfile.TemporaryDirectory() as directory:
            Path(directory, STOPPED_FILE).write_text(json.dumps({"reason": reason}))
            ray.train.report(
                {"step": step, STOPPED_KEY: reason},
                checkpoint=ray.train.Checkpoint.from_directory(directory),
            )

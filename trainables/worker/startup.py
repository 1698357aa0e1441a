"""The start-up timeline of a trial's worker: when each phase before training ended.

Reported once, with the first report after training begins, as `perf/startup/launched_at` (the
Unix time the trial's Tune driver launched the Train run) and `perf/startup/<phase>_s`, seconds
from then to the end of each phase (`records.metric_names.STARTUP_PHASES`: worker process
created, imports, model, data, DeepSpeed engine, step-0 report, first training step; with
`train.compile`, `compile_s` is the first compile's own duration, not a point on the timeline).
"""

from __future__ import annotations

import time

import psutil


class StartupTimeline:
    """Marks of the start-up phases of this process, relative to the trial's launch."""

    def __init__(self, launched_at: float | None, imported_at: float) -> None:
        self.launched_at = launched_at
        self.marks = {"worker_process": psutil.Process().create_time(), "imports": imported_at}
        self.durations: dict[str, float] = {}
        """Phases measured as durations (seconds), not as points on the timeline."""
        self.reported = False
        """Taken once: a mark or duration after `take_metrics` is ignored (never reported twice)."""

    def mark(self, phase: str) -> None:
        """`phase` ended now (once: a phase marked again keeps its first time)."""
        if not self.reported:
            self.marks.setdefault(phase, time.time())

    def took(self, phase: str, seconds: float) -> None:
        """`phase` (e.g. the first compile) took `seconds`, wherever it fell."""
        if not self.reported:
            self.durations.setdefault(phase, seconds)

    def take_metrics(self) -> dict[str, float]:
        """The timeline's metrics, once: nothing without a launch time or after the first call."""
        if self.launched_at is None or self.reported:
            return {}
        at = self.launched_at
        metrics = {f"perf/startup/{phase}_s": t - at for phase, t in self.marks.items()}
        metrics.update({f"perf/startup/{phase}_s": s for phase, s in self.durations.items()})
        self.marks, self.durations, self.reported = {}, {}, True
        return {"perf/startup/launched_at": at, **metrics}

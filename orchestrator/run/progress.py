"""The sweep's progress line: trials done / running / failed, the best objective so far, elapsed
and estimated time left.

`numsweep sweep` runs Ray Tune with `verbose=0` and this Tune `Callback` instead of Tune's
status tables (those come back with `--verbose`); it also gives each failed trial a line of its
own, with its error and where its logs are, in both modes. On a terminal it redraws one line in
place; otherwise (a log file, `ray job submit`, CI) it prints a plain line whenever a count
changes and at least every `interval` seconds. The counts come from Tune's trial list at each
step, the best value from each trial's last reported value of the objective (what Optuna is
told), so a restored run shows the trials it already finished.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any

from ray.tune import Callback

from orchestrator.run.parquet_sink import error_text

_FINISHED = ("TERMINATED", "ERROR")


@dataclass(frozen=True)
class Progress:
    """What one progress line says."""

    name: str
    total: int
    done: int
    """Finished trials, failed ones included."""
    running: int
    failed: int
    elapsed_s: float
    eta_s: float | None = None
    """Estimated seconds left; None until a trial has finished in this run."""
    metric: str | None = None
    mode: str | None = None
    best: float | None = None


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h07m`."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def progress_line(p: Progress) -> str:
    """`demo: 3/8 done, 2 running, 1 failed | best max eval/test/digit_acc 0.4123 | 2m05s
    elapsed, ~3m10s left`."""
    parts = [f"{p.name}: {p.done}/{p.total} done, {p.running} running, {p.failed} failed"]
    if p.metric is not None:
        best = "-" if p.best is None else f"{p.best:.4g}"
        parts.append(f"best {p.mode} {p.metric} {best}")
    left = "" if p.eta_s is None else f", ~{duration(p.eta_s)} left"
    parts.append(f"{duration(p.elapsed_s)} elapsed{left}")
    return " | ".join(parts)


def best_value(trials: list[Any], metric: str, mode: str) -> float | None:
    """The best of the trials' last reported `metric` (None when no trial reported it)."""
    values = []
    for trial in trials:
        last = (trial.metric_analysis.get(metric) or {}).get("last")
        if isinstance(last, int | float) and math.isfinite(last):
            values.append(float(last))
    if not values:
        return None
    return max(values) if mode == "max" else min(values)


class ProgressCallback(Callback):
    """Prints the progress line of one Tune run (see the module docstring)."""

    def __init__(
        self,
        name: str,
        total: int,
        metric: str | None = None,
        mode: str | None = None,
        interval: float = 30.0,
        logs: str | None = None,
        line: bool = True,
    ) -> None:
        self.name, self.total, self.metric, self.mode = name, total, metric, mode
        self.interval = interval
        self.logs = logs
        """The experiment's log folder, named in a failed trial's line (None: on the terminal)."""
        self.line = line
        """Whether to print the progress line (False with --verbose: Tune's tables instead)."""
        self._reset()

    def _reset(self) -> None:
        self._started = time.monotonic()
        self._baseline: int | None = None  # trials finished before this run started
        self._last_counts: tuple[int, int, int] | None = None
        self._last_print = -math.inf

    def setup(self, **info: Any) -> None:
        # Called at the start of every fit, a restored one too (the callback is unpickled).
        self._reset()

    def __getstate__(self) -> dict[str, Any]:
        keep = ("name", "total", "metric", "mode", "interval", "logs", "line")
        return {k: getattr(self, k) for k in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def progress(self, trials: list[Any]) -> Progress:
        statuses = [t.status for t in trials]
        done = sum(s in _FINISHED for s in statuses)
        if self._baseline is None:
            self._baseline = done
        elapsed = time.monotonic() - self._started
        new = done - self._baseline
        total = max(self.total, len(trials))
        eta = elapsed / new * (total - done) if new > 0 else None
        best = None
        if self.metric is not None:
            best = best_value(trials, self.metric, self.mode or "max")
        return Progress(
            self.name,
            total,
            done,
            statuses.count("RUNNING"),
            statuses.count("ERROR"),
            elapsed,
            eta,
            self.metric,
            self.mode,
            best,
        )

    def _show(self, trials: list[Any], final: bool = False) -> None:
        p = self.progress(trials)
        counts = (p.done, p.running, p.failed)
        now = time.monotonic()
        out = sys.stdout
        if out.isatty():
            if final or now - self._last_print >= 1.0:
                out.write("\r" + progress_line(p) + "\x1b[K" + ("\n" if final else ""))
                out.flush()
                self._last_print = now
        elif final or counts != self._last_counts or now - self._last_print >= self.interval:
            print(progress_line(p), file=out, flush=True)
            self._last_print = now
        self._last_counts = counts

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        if self.line:
            self._show(trials)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        if self.line:
            self._show(trials, final=True)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """A line of its own for a failed trial (on a terminal, the progress line is cleared
        first and redrawn at the next step)."""
        out = sys.stdout
        clear = "\r\x1b[K" if self.line and out.isatty() else ""
        print(clear + failed_trial_line(trial, self.logs), file=out, flush=True)
        self._last_print = -math.inf


def failed_trial_line(trial: Any, logs: str | None) -> str:
    """`numsweep: trial 1a2b3c4d failed: NonFiniteLossError: … | error: …/error.txt | logs: …`:
    the error's last line, the file with its traceback and where the trial's output went."""
    error_file, text = error_text(trial)
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    message = lines[-1][:300] if lines else "(no error text)"
    parts = [f"numsweep: trial {trial.trial_id} failed: {message}"]
    if error_file:
        parts.append(f"error: {error_file}")
    if logs:
        parts.append(f"logs: {logs}")
    return " | ".join(parts)

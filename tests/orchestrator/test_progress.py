"""The sweep's progress line on its own: the formatter, the durations, the best value over
Tune's trials and when the callback prints (a real sweep's output is checked in
tests/orchestrator/test_tracking.py)."""

from __future__ import annotations

import io
import math
from types import SimpleNamespace

from orchestrator.run.progress import (
    Progress,
    ProgressCallback,
    best_value,
    duration,
    progress_line,
)


def test_durations() -> None:
    assert [duration(s) for s in (0, 44.6, 60, 185, 3599, 3600, 7625)] == [
        "0s",
        "45s",
        "1m00s",
        "3m05s",
        "59m59s",
        "1h00m",
        "2h07m",
    ]


def test_line_with_and_without_an_objective() -> None:
    full = Progress("demo", 8, 3, 2, 1, 125, 190, "eval/test/digit_acc", "max", 0.41234)
    assert progress_line(full) == (
        "demo: 3/8 done, 2 running, 1 failed | best max eval/test/digit_acc 0.4123 | "
        "2m05s elapsed, ~3m10s left"
    )
    early = Progress("demo", 8, 0, 2, 0, 7, None, "eval/test/ce", "min", None)
    assert progress_line(early) == (
        "demo: 0/8 done, 2 running, 0 failed | best min eval/test/ce - | 7s elapsed"
    )
    grid = Progress("grid", 4, 4, 0, 0, 61, 0)
    assert progress_line(grid) == "grid: 4/4 done, 0 running, 0 failed | 1m01s elapsed, ~0s left"


def trial(status: str, **last: float) -> SimpleNamespace:
    return SimpleNamespace(status=status, metric_analysis={k: {"last": v} for k, v in last.items()})


def test_best_is_over_the_trials_last_values() -> None:
    trials = [
        trial("TERMINATED", acc=0.3),
        trial("RUNNING", acc=0.5),
        trial("ERROR", acc=math.nan),
        trial("PENDING"),
    ]
    assert best_value(trials, "acc", "max") == 0.5
    assert best_value(trials, "acc", "min") == 0.3
    assert best_value(trials, "ce", "min") is None


def test_plain_lines_when_counts_change_and_one_at_the_end(monkeypatch) -> None:
    out = io.StringIO()  # not a terminal
    monkeypatch.setattr("sys.stdout", out)
    cb = ProgressCallback("run", 2, "acc", "max", interval=3600)
    cb.setup()
    running = [trial("RUNNING"), trial("PENDING")]
    cb.on_step_end(0, running)
    cb.on_step_end(1, running)  # nothing changed: no line
    done = [trial("TERMINATED", acc=0.25), trial("RUNNING")]
    cb.on_step_end(2, done)
    cb.on_experiment_end([trial("TERMINATED", acc=0.25), trial("ERROR")])
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("run: 0/2 done, 1 running, 0 failed | best max acc - |")
    assert lines[1].startswith("run: 1/2 done, 1 running, 0 failed | best max acc 0.25 |")
    assert "left" in lines[1]  # one trial finished in this run: an estimate
    assert lines[2].startswith("run: 2/2 done, 0 running, 1 failed | best max acc 0.25 |")


def test_one_redrawn_line_on_a_terminal(monkeypatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    monkeypatch.setattr("sys.stdout", out)
    cb = ProgressCallback("run", 1)
    cb.setup()
    cb.on_step_end(0, [trial("RUNNING")])
    cb.on_experiment_end([trial("TERMINATED")])
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # one line, ended once at the end
    assert text.count("\r") == 2 and "\x1b[K" in text
    assert "run: 1/1 done, 0 running, 0 failed" in text.rsplit("\r", 1)[1]


def test_the_callback_pickles_without_its_clock() -> None:
    import pickle

    cb = ProgressCallback("run", 3, "acc", "max", interval=5)
    back = pickle.loads(pickle.dumps(cb))
    assert (back.name, back.total, back.metric, back.mode, back.interval) == (
        "run",
        3,
        "acc",
        "max",
        5,
    )
    assert back.progress([trial("RUNNING"), trial("TERMINATED")]).done == 1  # a fresh clock

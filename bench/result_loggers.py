"""What processing one trial result costs the sweep driver, per Tune callback, side by side.

Tune's driver handles every report of every trial on one thread: its searcher, scheduler and
callbacks run there, and Tune warns ("The process_trial_result operation took 0.902 s") when
that takes over 0.5 s. This runs a real Tune experiment whose trials replay the results of a
real numsweep trial (every report of one trial of a results store: hundreds of metrics each) and
times each callback's `on_trial_result` (wall and thread CPU),: Tune's three default loggers (CSV,
JSON, TensorboardX: the last writes every metric as an event and fsyncs its file at every
result). `--load N` runs N busy processes beside it, as a sweep's
training workers keep every core busy.

    python -m bench.result_loggers results --experiment demo [--repeats 20] [--load 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from typing import Any

import polars as pl
import ray
from ray import tune
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, TBXLoggerCallback

from records.writer import ResultsStore

TIMES: dict[str, list[tuple[float, float]]] = {}


def timed(cls: type, label: str) -> type:
    """`cls` with its `on_trial_result` timed into TIMES[label] (wall s, thread CPU s)."""

    class Timed(cls):
        def on_trial_result(self, *args: Any, **kwargs: Any) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            super().on_trial_result(*args, **kwargs)
            spent = (time.perf_counter() - wall, time.thread_time() - cpu)
            TIMES.setdefault(label, []).append(spent)

    Timed.__name__ = f"Timed{cls.__name__}"
    return Timed


def trial_results(root: str, experiment: str) -> list[dict[str, float]]:
    """Every report of the store's first trial, as the dict the worker reported."""
    table = ResultsStore(root, experiment).read_table("metrics")
    if table is None:
        raise SystemExit(f"no metrics of {experiment!r} under {root}")
    metrics = pl.from_arrow(table)
    first = metrics["trial_id"].sort()[0]
    rows = metrics.filter(pl.col("trial_id") == first)
    return [
        {"step": step, **dict(zip(part["metric"], part["value"], strict=True))}
        for (step,), part in sorted(rows.group_by("step"), key=lambda g: g[0][0])
    ]


def _busy() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--experiment", default="demo")
    parser.add_argument("--repeats", type=int, default=20, help="times each result is replayed")
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the driver")
    args = parser.parse_args()
    results = trial_results(args.results, args.experiment) * args.repeats

    def replay(config: dict[str, Any]) -> None:
        for result in results:
            tune.report(result)

    busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for process in busy:
        process.start()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as storage:
        loggers = [
            timed(TBXLoggerCallback, "TensorboardX logger (Tune default)")(),
            timed(CSVLoggerCallback, "CSV logger (Tune default)")(),
            timed(JsonLoggerCallback, "JSON logger (Tune default; numsweep keeps it)")(),
        ]
        tune.Tuner(
            replay,
            run_config=tune.RunConfig(storage_path=storage, callbacks=loggers, verbose=0),
        ).fit()
    ray.shutdown()
    for process in busy:
        process.kill()
    n = len(results)
    print(f"{n} results of up to {max(map(len, results)) - 1} metrics, load {args.load}")
    print("| callback | median ms (wall) | max ms | total s | total CPU s |")
    print("|---|---:|---:|---:|---:|")
    for label, spent in TIMES.items():
        walls = [w for w, _ in spent]
        print(
            f"| {label} | {statistics.median(walls) * 1e3:.2f} | {max(walls) * 1e3:.1f} | "
            f"{sum(walls):.2f} | {sum(c for _, c in spent):.2f} |"
        )


if __name__ == "__main__":
    main()

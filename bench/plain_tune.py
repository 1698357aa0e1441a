"""Benchmark: the demo's sweep by plain Ray Tune and by numsweep, one after the other, as ratios.

    python -m bench.plain_tune [--config orchestrator/configs/demo.yaml] [--steps N]
                               [--first plain|numsweep] [--json OUT]

The plain side is what a user would write instead of numsweep: a Tune function trainable around
the plain PyTorch loop (`bench.plain_loop`: one process, torch's AdamW; no Ray Train, no
DeepSpeed), evaluated and reported at the sweep's evaluation steps by the same evaluation
(`trainables.worker.evaluation.evaluate`), Ray Tune's `OptunaSearch` (TPE, the sweep's sampler
seed) over the same conditional space with the same queued first trials, as many trials at a
time with one CPU each, on a local Ray instance bound to 127.0.0.1 as numsweep's. numsweep's
side is `python -m orchestrator sweep CONFIG`. Each side runs in a process of its own, timed
from its start to its exit; `--steps` shortens every trial of both (evaluation every quarter).

Per side: wall time, and per trial (the means over the trials): the trial's start to its first
step, the mean step, the seconds spent evaluating and the other report work each side measures
(numsweep: its manipulation check; plain: `tune.report`). Printed as a
Markdown table with the machine and its load average; written to `--json` (default
bench/out/plain_tune.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.trial import _env, load_average, machine, numsweep_trials, start_numsweep, wait

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "orchestrator" / "configs" / "demo.yaml"


def sweep_with_steps(config: Path, steps: int | None) -> dict[str, Any]:
    """The sweep file as data, every trial `steps` long (evaluation every quarter) if given."""
    sweep = yaml.safe_load(config.read_text())
    if steps is not None:
        sweep["trial"]["train"]["steps"] = steps
        sweep["trial"]["eval"]["every"] = max(1, steps // 4)
    return sweep


def plain_trainable(config: dict[str, Any], sweep_json: dict[str, Any], out: str) -> None:
    """One plain trial (a Tune function trainable): its TrialConfig as numsweep's driver makes
    it, the plain loop, `evaluate` and `tune.report` at each evaluation step."""
    started = time.time()
    from ray import tune

    from bench.plain_loop import Trained, train
    from orchestrator.sweep.search_space import trial_config, trial_params
    from orchestrator.sweep.sweep_file import SweepConfig
    from trainables.config import TrialConfig
    from trainables.worker.evaluation import evaluate

    trial_id = tune.get_context().get_trial_id()
    sweep = SweepConfig.model_validate(sweep_json)
    cfg = TrialConfig.model_validate(trial_config(sweep, trial_params(config), trial_id))
    spent: dict[str, list[float]] = {"eval_s": [], "report_s": []}

    def on_step(done: int, trained: Trained) -> None:
        final = done == cfg.train.steps
        if done and done % cfg.eval.every and not final:
            return
        began = time.perf_counter()
        metrics = evaluate(
            trained.model,
            trained.splits,
            cfg,
            tokenizer=trained.tokenizer,
            vocab=trained.vocab,
            step=done,
            final=final,
            device=trained.device,
            rank=0,
            world_size=1,
        )
        evaluated = time.perf_counter()
        tune.report({**metrics, "step": done})
        spent["eval_s"].append(evaluated - began)
        spent["report_s"].append(time.perf_counter() - evaluated)

    run = train(cfg, on_step=on_step)
    record = {
        "trial_id": trial_id,
        "loss": cfg.loss.name,
        "first_step_s": run.step_end_at[0] - started,
        "step_s": statistics.fmean(run.step_time_s),
        **{k: sum(v) for k, v in spent.items()},
        "reports": len(spent["eval_s"]),
    }
    Path(out, f"{trial_id}.json").write_text(json.dumps(record))


def run_plain(sweep_path: Path, out: Path) -> None:
    """The plain Tune sweep of `sweep_path`, each trial's record written under `out`."""
    from optuna.samplers import TPESampler
    from ray import tune
    from ray.tune.search.optuna import OptunaSearch

    from orchestrator.run.local_ray import connect
    from orchestrator.sweep.search_space import define_by_run, enqueue_params
    from orchestrator.sweep.sweep_file import load_sweep

    sweep = load_sweep(sweep_path, [])
    search, losses = sweep.search, tuple(sweep.search.losses)
    objective = search.objectives[0]
    connect(num_cpus=os.cpu_count())
    searcher = OptunaSearch(
        space=define_by_run(sweep),
        metric=objective.metric,
        mode=objective.mode,
        sampler=TPESampler(seed=search.sampler_seed),
        points_to_evaluate=[enqueue_params(p, losses) for p in search.enqueue],
    )
    trainable = tune.with_parameters(
        plain_trainable, sweep_json=sweep.model_dump(mode="json"), out=str(out)
    )
    resources = sweep.resources
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": resources.cpus_per_worker}),
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=search.num_trials,
            max_concurrent_trials=resources.max_concurrent_trials,
        ),
        run_config=tune.RunConfig(storage_path=str(out / "ray"), name="plain", verbose=0),
    )
    results = tuner.fit()
    if results.errors:
        raise SystemExit(f"plain Tune sweep: {len(results.errors)} trial(s) failed")


# numsweep's per-report seconds: its evaluation, and its manipulation check (train/aux_grad_*),
# which the plain side does not do.
EVAL_METRICS = ("perf/eval_s", "perf/aux_grad_s")


def numsweep_side(results: Path, steps: int) -> list[dict[str, Any]]:
    """numsweep's trials in the same terms as the plain records."""
    import polars as pl

    spent = (
        pl.read_parquet(f"{results}/metrics/*/*.parquet")
        .filter(pl.col("metric").is_in(EVAL_METRICS))
        .group_by("trial_id", "metric")
        .agg(pl.col("value").sum(), pl.len().alias("reports"))
    )
    seconds = {(r["trial_id"], r["metric"]): r for r in spent.iter_rows(named=True)}
    out = []
    for trial in numsweep_trials(results):
        evals = seconds[(trial["trial_id"], "perf/eval_s")]
        aux = seconds.get((trial["trial_id"], "perf/aux_grad_s"), {"value": 0.0})
        out.append(
            {
                "trial_id": trial["trial_id"],
                "loss": trial["loss"],
                "first_step_s": trial["timeline_s"]["first_step"],
                "step_s": statistics.fmean(trial["step_windows_s"]),
                "eval_s": evals["value"],
                "report_s": aux["value"],
                "reports": evals["reports"],
                "steps": steps,
            }
        )
    return out


def run_side(side: str, sweep_path: Path, folder: Path) -> dict[str, Any]:
    """One side's sweep in a process of its own: its wall time and its trials."""
    steps = yaml.safe_load(sweep_path.read_text())["trial"]["train"]["steps"]
    began = time.monotonic()
    if side == "plain":
        out = folder / "plain"
        out.mkdir(parents=True)
        command = [sys.executable, "-m", "bench.plain_tune", "--plain-run", str(sweep_path)]
        with (folder / "plain.log").open("w") as log:
            done = subprocess.run(
                [*command, str(out)], cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT
            )
        if done.returncode:
            raise SystemExit(f"the plain Tune sweep failed; see {folder / 'plain.log'}")
        wall = time.monotonic() - began
        trials = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
        trials = [{**t, "steps": steps} for t in trials]
    else:
        proc, results = start_numsweep(sweep_path, folder / "numsweep")
        wait(proc, "the numsweep sweep", folder / "numsweep")
        wall = time.monotonic() - began
        trials = numsweep_side(results, steps)
    return {"side": side, "wall_s": wall, "trials": trials}


def summary(run: dict[str, Any]) -> dict[str, float]:
    """A side's sweep wall time and its trials' means."""
    trials = run["trials"]
    keys = ("first_step_s", "step_s", "eval_s", "report_s")
    mean = {k: statistics.fmean(t[k] for t in trials) for k in keys}
    mean["training_s"] = mean["step_s"] * trials[0]["steps"]
    return {"wall_s": run["wall_s"], "trials": len(trials), **mean}


def markdown(runs: dict[str, dict[str, Any]]) -> str:
    """The two sides, with numsweep / plain as a ratio."""
    plain, ours = summary(runs["plain"]), summary(runs["numsweep"])
    rows = [
        ("sweep wall time, start to exit (s)", "wall_s", "{:.1f}"),
        ("trials", "trials", "{:.0f}"),
        ("a trial's start to its first step (s)", "first_step_s", "{:.2f}"),
        ("a step (ms)", "step_s", "{:.2f}"),
        ("a trial's training, steps x step (s)", "training_s", "{:.1f}"),
        ("a trial's evaluation (s)", "eval_s", "{:.2f}"),
        (
            "a trial's reporting extras (s): numsweep's manipulation check, plain's tune.report",
            "report_s",
            "{:.2f}",
        ),
    ]
    lines = ["| per side | plain Tune | numsweep | numsweep / plain |", "|---|---:|---:|---:|"]
    for label, key, form in rows:
        scale = 1000 if key == "step_s" else 1
        a, b = plain[key] * scale, ours[key] * scale
        ratio = f"{b / a:.2f}" if a else "—"
        lines.append(f"| {label} | {form.format(a)} | {form.format(b)} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plain_tune", description=__doc__)
    parser.add_argument("--config", type=Path, default=DEMO)
    parser.add_argument("--steps", type=int, default=None, help="every trial's steps")
    parser.add_argument("--first", choices=["plain", "numsweep"], default="plain")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/out/plain_tune.json")
    parser.add_argument("--plain-run", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.plain_run:
        run_plain(*args.plain_run)
        return 0
    print(f"{machine()}, load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="numsweep-plain-tune-") as tmp:
        folder = Path(tmp)
        sweep_path = folder / "sweep.yaml"
        sweep_path.write_text(yaml.safe_dump(sweep_with_steps(args.config, args.steps)))
        order = ["plain", "numsweep"] if args.first == "plain" else ["numsweep", "plain"]
        runs = {}
        for side in order:
            runs[side] = run_side(side, sweep_path, folder / side)
            print(f"{side}: {runs[side]['wall_s']:.1f} s", flush=True)
    print(markdown(runs))
    print(f"load average after: {load_average()}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

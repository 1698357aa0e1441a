"""Benchmark: one trial as a plain PyTorch loop and as a numsweep trial, side by side, as ratios.

    python -m bench.trial [--presets tiny s] [--steps 200] [--fixed-cost-trials 4]
                          [--losses mle del compensated ...] [--device cpu|cuda]
                          [--skip throughput fixed] [--json OUT] [--at-once 2] [--apart]
                          [--train compile=off,compile=on precision=fp32,bf16]

The trial is the demo's (`orchestrator/configs/demo.yaml`: model, data, batch, learning rate,
ZeRO stage 0, one Ray Train worker with one CPU) with its preset and step count replaced.

1. Throughput (per preset): the plain loop (`bench.plain_loop`, one process, one torch thread)
   and the same trial through the CLI (`python -m orchestrator sweep`, one trial) start
   together, and the plain loop trains on until the trial is done, so the machine's load falls
   on both alike. Step time: the mean over each window of `every` steps (`perf/step_time_s`,
   which times the same span the plain loop does: batches, forward, loss, backward, clip,
   AdamW), the median over the windows after the first (warm-up); for the plain loop, over its
   steps while the trial trained. Ratio = plain / numsweep (1.0: as fast as the plain loop).
   Peak memory: the plain process's peak RSS and the worker's (`perf/peak_mem_mb`). Fixed cost:
   plain = its process start to its first step; numsweep = the Tune trial's start (the Parquet
   trials table) to its first step and to its step-0 report (when the sink received it).
   `--at-once N` (CPU): N plain loops against a sweep of N trials (seeds 0..N-1, N at a time),
   each side's median step over its runs while every trial trained (the medians' median).
   `--apart`: the plain loops first, then the trials, each side alone on the machine (as on a
   GPU), so that a trial's other processes take CPU from the trials only.
   `--train` runs the throughput comparison once per setting of the trial's training keys
   (each word KEY=VALUE, or alternatives joined by ','), one after another; the plain loop
   stays eager fp32.
2. Fixed cost, several trials two at a time (`--fixed-cost-trials`, tiny): the demo sweep
   itself with fewer steps; every trial's start-up timeline (`perf/startup/*`), and the mean over
   the trials after the first pair (steady state: caches warm, Tune's actors reused).
3. Loss cost (`--losses`): each loss's step time inside a real training step, as a ratio to
   `mle`'s, in the plain loop and in a numsweep trial (run one after another), on the preset
   (`--loss-preset`, `--vocab-size`) or a pretrained model (`--model-path smollm2`). With
   `--device cuda` the trials get one GPU each and bf16 where the GPU has it (as a trial with
   `train.precision: auto`); the plain loop then runs its forward under bf16 autocast, and the
   throughput runs take turns on the GPU instead of running at the same time.

Timings are printed as Markdown tables with the machine and its load average, and written to
`--json` (default bench/out/trial.json) with every number measured.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from records.metric_names import STARTUP_PHASES

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "orchestrator" / "configs" / "demo.yaml"
DEFAULT_JSON = ROOT / "bench" / "out" / "trial.json"
# Start-up phases the worker reports (`perf/startup/<phase>_s`), in order.
PHASES = STARTUP_PHASES


def demo_sweep() -> dict[str, Any]:
    return yaml.safe_load(DEMO.read_text())


def single_trial_sweep(
    experiment: str,
    preset: str,
    steps: int,
    every: int,
    loss: str,
    device: str,
    model: dict[str, Any] | None = None,
    train: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The demo's trial as a one-trial grid sweep (`loss`, seed 0, one worker); `model`
    replaces the demo's model section (a vocabulary size, a pretrained model), `train` sets
    training keys (`compile`, `precision`)."""
    sweep = demo_sweep()
    trial = sweep["trial"]
    trial["model"] = {**trial["model"], "preset": preset, **(model or {})}
    trial["train"] = {**trial["train"], **(train or {}), "steps": steps}
    trial["eval"] = {**trial["eval"], "every": every, "generate_examples": 0}
    resources = {"workers_per_trial": 1, "cpus_per_worker": 1, "max_concurrent_trials": 1}
    if device == "cuda":
        resources["gpus_per_worker"] = 1
    return {
        "experiment": experiment,
        "mode": "grid",
        "seed": 0,
        "trial": trial,
        "grid": {"losses": [loss], "seeds": [0]},
        "resources": resources,
    }


def trial_config_of(sweep: dict[str, Any], loss: str) -> dict[str, Any]:
    """The TrialConfig the sweep's one trial runs with (as the driver resolves it)."""
    from orchestrator.sweep.search_space import trial_config
    from orchestrator.sweep.sweep_file import SweepConfig

    return trial_config(SweepConfig.model_validate(sweep), {"loss": loss, "seed": 0}, "plain")


def windows(step_times: list[float], every: int) -> list[float]:
    """Mean step time of each window of `every` steps (what the worker reports)."""
    return [statistics.fmean(step_times[i : i + every]) for i in range(0, len(step_times), every)]


def steady(window_means: list[float]) -> float:
    """The median window after the first (which holds the warm-up steps)."""
    return statistics.median(window_means[1:] if len(window_means) > 1 else window_means)


def start_plain(
    config: dict[str, Any], folder: Path, device: str, until: Path | None = None
) -> tuple[subprocess.Popen, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    out = folder / "plain.json"
    command = [sys.executable, "-m", "bench.plain_loop", str(folder / "config.json"), str(out)]
    command += ["--device", device, "--threads", "1"]
    if until is not None:
        command += ["--until-file", str(until)]
    proc = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL)
    return proc, out


def start_numsweep(
    sweep: dict[str, Any] | Path, folder: Path, *overrides: str
) -> tuple[subprocess.Popen, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(sweep, Path):
        path = sweep
    else:
        path = folder / "sweep.yaml"
        path.write_text(yaml.safe_dump(sweep))
    results = folder / "results"
    log = (folder / "numsweep.log").open("w")
    command = [sys.executable, "-m", "orchestrator", "sweep", str(path), *overrides]
    command += ["--results", str(results)]
    proc = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    return proc, results


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # an embedded Ray
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def wait(proc: subprocess.Popen, what: str, folder: Path) -> None:
    if proc.wait() not in (0,):
        log = folder / "numsweep.log"
        tail = log.read_text()[-3000:] if log.is_file() else ""
        raise SystemExit(f"{what} failed (exit {proc.returncode}); see {folder}\n{tail}")


def numsweep_trials(results: Path) -> list[dict[str, Any]]:
    """Per trial of a finished sweep: its loss, step-time windows, start-up timeline (seconds
    from the Tune trial's start), step-0 report and peak memory, in start order."""
    metrics = pl.read_parquet(glob.glob(f"{results}/metrics/*/*.parquet"))
    trials = pl.read_parquet(glob.glob(f"{results}/trials/*/*.parquet"))
    starts = (
        trials.filter(pl.col("start").is_not_null())
        .group_by("trial_id")
        .agg(pl.col("start").min(), pl.col("loss").first())
        .sort("start")
    )
    out = []
    for row in starts.iter_rows(named=True):
        rows = metrics.filter(pl.col("trial_id") == row["trial_id"])
        start = row["start"].timestamp()
        values = {r["metric"]: r["value"] for r in rows.iter_rows(named=True)}
        launched = values["perf/startup/launched_at"]
        timeline = {"launch": launched - start}
        for phase in PHASES:
            timeline[phase] = launched + values[f"perf/startup/{phase}_s"] - start
        step0 = rows.filter(pl.col("step") == 0)["ts"].min().timestamp()
        timeline["step0_stored"] = step0 - start
        last = rows.filter(pl.col("step") == rows["step"].max())["ts"].min().timestamp()
        step_rows = rows.filter(pl.col("metric") == "perf/step_time_s").sort("step")
        peak = rows.filter(pl.col("metric") == "perf/peak_mem_mb")["value"].max()
        out.append(
            {
                "trial_id": row["trial_id"],
                "loss": row["loss"],
                "timeline_s": timeline,
                "step_windows_s": step_rows["value"].to_list(),
                # Unix time each window was stored, as soon as it was reported.
                "step_window_at": [ts.timestamp() for ts in step_rows["ts"]],
                "peak_mem_mb": peak,
                # Unix times bounding its training: the first step's end, the last report stored.
                "trained_from": start + timeline["first_step"],
                "trained_until": last,
            }
        )
    return out


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def machine() -> dict[str, Any]:
    import torch

    info = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def throughput(
    preset: str,
    steps: int,
    device: str,
    work: Path,
    train: dict[str, Any] | None = None,
    at_once: int = 1,
    apart: bool = False,
) -> dict[str, Any]:
    """Plain loop and numsweep trial of `preset`, started together; the plain loop trains on
    until the trial ends, and its steps while the trial trained are compared with the trial's.
    `train`: the trial's training keys (the plain loop stays eager fp32 on the CPU). `at_once`
    (CPU): that many plain loops against one sweep of that many trials (seeds 0..n-1) at once,
    each side's steps taken while every trial trained. `apart`: the plain loops first, then the
    trials, each side alone on the machine (always so on a GPU)."""
    every = max(1, steps // 8)
    sweep = single_trial_sweep(f"bench-{preset}", preset, steps, every, "mle", device, train=train)
    config = trial_config_of(sweep, "mle")
    if at_once > 1:
        sweep["grid"]["seeds"] = list(range(at_once))
        sweep["resources"]["max_concurrent_trials"] = at_once
    load_before = load_average()
    plain_dirs = [work / f"plain-{preset}-{i}" for i in range(at_once)]
    numsweep_dir = work / f"numsweep-{preset}"
    apart = apart or device == "cuda"  # one GPU shared by two runs would time neither
    if apart:
        plain_runs = [start_plain(config, d, device) for d in plain_dirs]
        for (proc, _), folder in zip(plain_runs, plain_dirs, strict=True):
            wait(proc, f"plain loop ({preset})", folder)
        ns_proc, results = start_numsweep(sweep, numsweep_dir)
        wait(ns_proc, f"numsweep trial ({preset})", numsweep_dir)
    else:
        stop = work / f"stop-{preset}"
        plain_runs = [start_plain(config, d, device, until=stop) for d in plain_dirs]
        try:
            ns_proc, results = start_numsweep(sweep, numsweep_dir)
            wait(ns_proc, f"numsweep trial ({preset})", numsweep_dir)
        finally:
            stop.touch()  # the plain loops end after their current step, also if a trial failed
        for (proc, _), folder in zip(plain_runs, plain_dirs, strict=True):
            wait(proc, f"plain loop ({preset})", folder)
    plains = [json.loads(out.read_text()) for _, out in plain_runs]
    trials = numsweep_trials(results)
    plain_steps, compared = plain_steady(plains, trials, every, apart, preset)
    plain_step = statistics.median(plain_steps)
    numsweep_step = statistics.median(trials_steady(trials, preset))
    return {
        "preset": preset,
        "train": train or {},
        "at_once": at_once,
        "apart": apart,
        "steps": steps,
        "window": every,
        "load_before": load_before,
        "load_after": load_average(),
        "plain_step_s": plain_step,
        "numsweep_step_s": numsweep_step,
        "ratio": plain_step / numsweep_step,
        "plain_steps_compared": compared,
        "plain_first_step_s": plains[0]["startup_s"]["first_step"],
        "plain_startup_s": plains[0]["startup_s"],
        "numsweep_timeline_s": trials[0]["timeline_s"],
        "plain_peak_mem_mb": plains[0]["peak_mem_mb"],
        "numsweep_peak_mem_mb": trials[0]["peak_mem_mb"],
    }


def while_all_trained(
    values: list[float], times: list[float], trials: list[dict[str, Any]]
) -> list[float]:
    """The values whose unix time lies where every trial trained: from the latest first step's
    end to the earliest last report."""
    trained_from = max(t["trained_from"] for t in trials)
    trained_until = min(t["trained_until"] for t in trials)
    return [v for v, at in zip(values, times, strict=True) if trained_from <= at <= trained_until]


def plain_steady(
    plains: list[dict[str, Any]], trials: list[dict[str, Any]], every: int, apart: bool, what: str
) -> tuple[list[float], int]:
    """Each plain loop's steady step time over its steps while every trial trained (all of them
    when the two sides ran apart), and the fewest steps one of them had."""
    steps, counts = [], []
    for plain in plains:
        during = plain["step_time_s"]
        if not apart:
            during = while_all_trained(during, plain["step_end_at"], trials)
        if len(during) < 2 * every:
            raise SystemExit(f"{what}: a plain loop ran only {len(during)} steps during the trials")
        steps.append(steady(windows(during, every)))
        counts.append(len(during))
    return steps, min(counts)


def trials_steady(trials: list[dict[str, Any]], what: str) -> list[float]:
    """Each trial's steady step time over its windows stored while every trial trained (with
    several at once, the one that started first trains alone for a while, the last alone at
    the end, and those windows are faster than the rest)."""
    steps = []
    for trial in trials:
        during = while_all_trained(trial["step_windows_s"], trial["step_window_at"], trials)
        if len(during) < 2:
            raise SystemExit(f"{what}: a trial stored only {len(during)} windows while all trained")
        steps.append(steady(during))
    return steps


def fixed_cost(n_trials: int, steps: int, work: Path) -> dict[str, Any]:
    """The demo sweep with `n_trials` trials of `steps` steps, two at a time."""
    every = max(1, steps // 2)
    load_before = load_average()
    proc, results = start_numsweep(
        DEMO,
        work / "fixed",
        f"search.num_trials={n_trials}",
        f"train.steps={steps}",
        f"eval.every={every}",
        "--name",
        "bench-fixed",
    )
    wait(proc, "demo sweep", work / "fixed")
    trials = numsweep_trials(results)
    later = trials[2:] or trials
    mean = {k: statistics.fmean(t["timeline_s"][k] for t in later) for k in trials[0]["timeline_s"]}
    return {
        "trials": trials,
        "steady_mean_s": mean,
        "load_before": load_before,
        "load_after": load_average(),
    }


def loss_costs(
    losses: list[str],
    preset: str,
    steps: int,
    device: str,
    work: Path,
    model: dict[str, Any] | None = None,
) -> dict:
    """Each loss's step time (plain loop and numsweep trial) and its ratio to mle's."""
    every = max(1, steps // 4)
    rows = {}
    vocab_size = None
    for loss in dict.fromkeys(["mle", *losses]):
        sweep = single_trial_sweep(
            f"bench-loss-{loss}", preset, steps, every, loss, device, model=model
        )
        folder = work / f"loss-{loss}"
        plain_proc, plain_out = start_plain(trial_config_of(sweep, loss), folder, device)
        wait(plain_proc, f"plain loop ({loss})", folder)
        ns_proc, results = start_numsweep(sweep, folder)
        wait(ns_proc, f"numsweep trial ({loss})", folder)
        plain = json.loads(plain_out.read_text())
        vocab_size = plain["vocab_size"]
        (trial,) = numsweep_trials(results)
        rows[loss] = {
            "plain_step_s": steady(windows(plain["step_time_s"], every)),
            "numsweep_step_s": steady(trial["step_windows_s"]),
        }
    for row in rows.values():
        row["plain_x_mle"] = row["plain_step_s"] / rows["mle"]["plain_step_s"]
        row["numsweep_x_mle"] = row["numsweep_step_s"] / rows["mle"]["numsweep_step_s"]
    model_name = (model or {}).get("path") or preset
    return {
        "model": model_name,
        "vocab_size": vocab_size,
        "steps": steps,
        "device": device,
        "losses": rows,
    }


def print_tables(report: dict[str, Any]) -> None:
    m = report["machine"]
    print(f"\nmachine: {m['cpus']} CPUs, {m.get('gpu', 'no GPU')}, torch {m['torch']}")
    if report.get("throughput"):
        print(
            "\n| preset | plain step | numsweep step | ratio | plain first step | "
            "numsweep first step | step-0 report | peak MB plain / numsweep | load |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in report["throughput"]:
            t = r["numsweep_timeline_s"]
            label = " ".join([r["preset"], *(f"{k}={v}" for k, v in r.get("train", {}).items())])
            if r.get("at_once", 1) > 1:
                label += f", {r['at_once']} at once"
            if r.get("apart"):
                label += ", apart"
            print(
                f"| {label} | {r['plain_step_s'] * 1e3:.1f} ms | "
                f"{r['numsweep_step_s'] * 1e3:.1f} ms | {r['ratio']:.2f} | "
                f"{r['plain_first_step_s']:.1f} s | {t['first_step']:.1f} s | "
                f"{t['step0_stored']:.1f} s | {r['plain_peak_mem_mb']:.0f} / "
                f"{r['numsweep_peak_mem_mb']:.0f} | {r['load_before']} → {r['load_after']} |"
            )
    if report.get("fixed_cost"):
        fixed = report["fixed_cost"]
        phases = ["launch", *PHASES, "step0_stored"]
        print("\nStart-up timeline, seconds from the Tune trial's start (end of each phase):\n")
        print("| trial | loss | " + " | ".join(phases) + " |")
        print("|---|---|" + "---:|" * len(phases))
        for i, t in enumerate(fixed["trials"], 1):
            cells = " | ".join(f"{t['timeline_s'][p]:.1f}" for p in phases)
            print(f"| {i} | {t['loss']} | {cells} |")
        cells = " | ".join(f"{fixed['steady_mean_s'][p]:.1f}" for p in phases)
        print(f"| mean after the first pair | | {cells} |")
        print(f"\nload average {fixed['load_before']} → {fixed['load_after']}")
    if report.get("loss_cost"):
        lc = report["loss_cost"]
        print(
            f"\nLoss cost in a training step ({lc['model']}, V={lc['vocab_size']}, "
            f"{lc['device']}):\n"
        )
        print("| loss | plain step | × mle | numsweep step | × mle |")
        print("|---|---:|---:|---:|---:|")
        for loss, r in lc["losses"].items():
            print(
                f"| {loss} | {r['plain_step_s'] * 1e3:.1f} ms | {r['plain_x_mle']:.2f} | "
                f"{r['numsweep_step_s'] * 1e3:.1f} ms | {r['numsweep_x_mle']:.2f} |"
            )


def train_settings(items: list[str]) -> list[dict[str, str | int]]:
    """`--train` words -> the trial settings to run, in turn: each word is KEY=VALUE, or several
    KEY=VALUE joined by ',' (one setting each); with no words, the demo's own."""
    settings: list[dict[str, str | int]] = [{}]
    for item in items:
        options = []
        for pair in item.split(","):
            key, sep, value = pair.partition("=")
            if not sep:
                raise SystemExit(f"--train {item!r}: expected KEY=VALUE")
            # A whole number stays a number (a Literal[0, 1, 2, 3] takes no "2"); the rest
            # stays text for the config's own parsing (YAML would read off/on as booleans).
            options.append((key, int(value) if value.lstrip("-").isdigit() else value))
        settings = [{**s, k: v} for s in settings for k, v in options]
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trial", description=__doc__)
    parser.add_argument("--presets", nargs="+", default=["tiny", "s"])
    parser.add_argument("--steps", type=int, default=200, help="steps of each throughput run")
    parser.add_argument(
        "--at-once",
        type=int,
        default=1,
        help="throughput (CPU): this many plain loops against this many trials at once",
    )
    parser.add_argument(
        "--apart",
        action="store_true",
        help="throughput: the plain loops first, then the trials, each alone on the machine",
    )
    parser.add_argument("--fixed-cost-trials", type=int, default=4)
    parser.add_argument("--fixed-cost-steps", type=int, default=50)
    parser.add_argument("--losses", nargs="*", default=[], help="loss-cost mode: these vs mle")
    parser.add_argument("--loss-preset", default="tiny")
    parser.add_argument("--loss-steps", type=int, default=100)
    parser.add_argument(
        "--vocab-size", type=int, help="loss mode: the digit tokenizer's size (model.vocab_size)"
    )
    parser.add_argument(
        "--model-path", help="loss mode: a pretrained model instead of the preset (e.g. smollm2)"
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--train",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="throughput: train keys of the trial, e.g. compile=on precision=bf16; several "
        "settings separated by ',' run one after another (compile=off,compile=on)",
    )
    parser.add_argument("--skip", nargs="*", default=[], choices=["throughput", "fixed"])
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--work", type=Path, help="keep runs here (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.at_once > 1 and args.device == "cuda":
        parser.error("--at-once: on the CPU only (the GPU runs take turns)")

    report: dict[str, Any] = {"machine": machine(), "started": time.time()}
    with tempfile.TemporaryDirectory(prefix="bench-trial-") as scratch:
        work = args.work or Path(scratch)
        if "throughput" not in args.skip:
            report["throughput"] = [
                throughput(
                    preset, args.steps, args.device, work / f"t{i}", train, args.at_once, args.apart
                )
                for preset in args.presets
                for i, train in enumerate(train_settings(args.train))
            ]
        if "fixed" not in args.skip:
            report["fixed_cost"] = fixed_cost(args.fixed_cost_trials, args.fixed_cost_steps, work)
        if args.losses:
            model: dict[str, Any] = {}
            if args.vocab_size:
                model["vocab_size"] = args.vocab_size
            if args.model_path:
                model.update(preset=None, path=args.model_path)
            report["loss_cost"] = loss_costs(
                args.losses, args.loss_preset, args.loss_steps, args.device, work, model
            )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    print_tables(report)
    print(f"\nall numbers: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

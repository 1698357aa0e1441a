"""Benchmark of the analysis commands on a large generated results store, next to the same
aggregations written with pandas.

    python -m bench.analysis [--steps 585] [--reuse] [--out bench/out]

Generates (or with --reuse, keeps) a store of about 10 million metric rows over 2,000 trials
under bench/out/analysis_store (git-ignored), then runs every job in a fresh Python subprocess and
reports the job's wall time (imports excluded; import time is listed apart), its CPU time (user +
system, all threads) and the subprocess's peak resident memory, which the subprocess reads from
`resource.getrusage(RUSAGE_SELF).ru_maxrss` at the end. Timings are measurements for
bench/README.md, never asserted anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported only inside the pandas jobs (their import is timed apart)
    import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
LOSSES = ("mle", "del", "ntl_mse", "dist2", "mixce", "emo", "compensated", "ntl_was")
SIZES = {"xs": 1_000_000, "s": 4_000_000, "m": 16_000_000, "l": 64_000_000, "xl": 256_000_000}
LRS = (1e-4, 2e-4, 3e-4, 5e-4, 7e-4, 1e-3, 1.5e-3, 2e-3, 3e-3, 5e-3)
SEEDS = (0, 1, 2, 3, 4)
JOBS = ("ablation", "entropy", "scaling", "search", "report")


# ----------------------------------------------------------------------------------------------
# pandas versions of the same aggregations (bench only: analysis/ never imports pandas)


def _pandas_latest(store: Path, metrics: list[str]) -> pd.DataFrame:
    """Deduplicated rows of `metrics` (highest attempt, then latest write), pandas + pyarrow."""
    import pandas as pd

    frames = []
    for folder in sorted((store / "metrics").iterdir()):
        df = pd.read_parquet(
            folder,
            columns=["trial_id", "attempt", "step", "metric", "value", "ts"],
            filters=[("metric", "in", metrics)],
        )
        df["experiment"] = folder.name.split("=", 1)[1]
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    df = df.sort_values(["attempt", "ts"]).drop_duplicates(
        ["experiment", "trial_id", "step", "metric"], keep="last"
    )
    return df.drop(columns=["attempt", "ts"])


def _pandas_trials(store: Path) -> pd.DataFrame:
    import pandas as pd

    frames = []
    for folder in sorted((store / "trials").iterdir()):
        for part in sorted(folder.glob("part-*.parquet")):
            df = pd.read_parquet(part)
            df["experiment"] = folder.name.split("=", 1)[1]
            frames.append(df)
    df = pd.concat(frames, ignore_index=True).sort_values("ts")
    return df.groupby(["experiment", "trial_id"], as_index=False).last()


def _pandas_final(latest: pd.DataFrame) -> pd.DataFrame:
    return (
        latest.sort_values("step")
        .groupby(["experiment", "trial_id", "metric"], as_index=False)
        .last()
    )


def _pandas_seed_stats(values: pd.DataFrame, trials: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean ± t-interval over seeds per arm (arm = loss, lr, model here)."""
    from scipy import stats

    merged = values.merge(trials[trials["status"] == "TERMINATED"], on=["experiment", "trial_id"])
    per_seed = merged.groupby(["loss", "lr", "model", "seed", *keys], as_index=False)[
        "value"
    ].mean()
    out = per_seed.groupby(["loss", "lr", "model", *keys])["value"].agg(["mean", "std", "count"])
    out["half"] = stats.t.ppf(0.975, out["count"] - 1) * out["std"] / out["count"] ** 0.5
    return out


def _pandas_paired(values: pd.DataFrame, trials: pd.DataFrame, keys: list[str]) -> None:
    """Paired t-tests of every arm against mle (same lr, model, seeds), Holm within a metric."""
    import numpy as np
    from scipy import stats

    merged = values.merge(trials[trials["status"] == "TERMINATED"], on=["experiment", "trial_id"])
    wide = merged.pivot_table(
        index=["lr", "model", "seed", *keys], columns="loss", values="value"
    ).reset_index()
    for _, group in wide.groupby(["lr", "model", *keys]):
        p = [
            stats.ttest_rel(group[loss], group["mle"], nan_policy="omit").pvalue
            for loss in LOSSES
            if loss != "mle"
        ]
        order = np.argsort(p)
        np.maximum.accumulate(np.asarray(p)[order] * (len(p) - np.arange(len(p))))


def pandas_job(job: str, store: Path) -> None:
    """The pandas counterpart of one analysis command (the table numbers, not the rendering)."""
    trials = _pandas_trials(store)
    if job == "ablation":
        # The headline metrics (final values): mean ± CI per arm, paired tests against mle.
        leaves = ("digit_acc", "digit_entropy", "ce", "error_entropy")
        names = [f"eval/{s}/{leaf}" for s in ("test", "extra") for leaf in leaves]
        names += [
            f"gen/{b}/{leaf}"
            for b in ("mathgen", "mathgen_extra", "gsm8k")
            for leaf in ("exact_match", "mae")
        ] + ["gen/macc"]
        final = _pandas_final(_pandas_latest(store, names))
        _pandas_seed_stats(final, trials, ["metric"])
        _pandas_paired(final, trials, ["metric"])
    elif job == "entropy":
        names = [
            f"eval/{s}/{leaf}" for s in ("test", "extra") for leaf in ("digit_entropy", "digit_acc")
        ]
        latest = _pandas_latest(store, names)
        _pandas_seed_stats(latest, trials, ["metric", "step"])
    elif job == "scaling":
        # Best lr per (loss, size) by mean eval/test/ce, per-size means over seeds, then both
        # forms with scipy (linregress; curve_fit for E + A·N^a) and leave-one-size-out refits.
        import numpy as np
        from scipy import optimize, stats

        leaves = ("ce", "error_entropy", "self_alignment", "log_confidence")
        names = ["model/params_non_embedding"]
        names += [f"eval/{s}/{leaf}" for s in ("test", "extra") for leaf in leaves]
        final = _pandas_final(_pandas_latest(store, names))
        sizes = final[final["metric"] == "model/params_non_embedding"][
            ["experiment", "trial_id", "value"]
        ].rename(columns={"value": "N"})
        points = final[final["metric"] != "model/params_non_embedding"].merge(sizes)
        points = points.merge(
            trials[trials["status"] == "TERMINATED"], on=["experiment", "trial_id"]
        )
        ce = points[points["metric"] == "eval/test/ce"]
        by_lr = ce.groupby(["loss", "N", "lr"])["value"].mean().reset_index()
        best = by_lr.loc[by_lr.groupby(["loss", "N"])["value"].idxmin(), ["loss", "N", "lr"]]
        means = points.merge(best).groupby(["loss", "metric", "N"])["value"].mean().reset_index()

        def sat(x: np.ndarray, e: float, b: float, a: float) -> np.ndarray:
            return np.log(np.maximum(e + b * np.exp(a * (x - x.mean())), 1e-300))

        for _, group in means.groupby(["loss", "metric"]):
            x, y = np.log(group["N"].to_numpy()), np.log(group["value"].to_numpy())
            for keep in [np.ones(x.size, bool), *(np.arange(x.size) != i for i in range(x.size))]:
                stats.linregress(x[keep], y[keep])
                with contextlib.suppress(RuntimeError):
                    optimize.curve_fit(sat, x[keep], y[keep], p0=(0.5, 1.0, -0.2), maxfev=2000)
    elif job == "search":
        final = _pandas_final(_pandas_latest(store, ["gen/macc"]))
        done = final.merge(trials[trials["status"] == "TERMINATED"], on=["experiment", "trial_id"])
        done.sort_values("value", ascending=False).head(10)
        total = ((done["value"] - done["value"].mean()) ** 2).sum()
        for param in ("loss", "lr", "model", "seed"):
            grouped = done.groupby(param)["value"].agg(["mean", "count"])
            ((grouped["mean"] - done["value"].mean()) ** 2 * grouped["count"]).sum() / total
    else:
        raise ValueError(f"no pandas version of {job!r}")


def polars_job(job: str, store: Path, out: Path) -> None:
    """One analysis command with its default settings through the analysis library, its
    result rendered as the command line's Markdown and discarded (the report: its page)."""
    from analysis.commands import call, settings_of
    from analysis.result import render

    settings = settings_of(job)(**({"out": out / "report"} if job == "report" else {}))
    result = call(settings, str(store))
    if not isinstance(result, Path):
        render(result, "md")


def child(engine: str, job: str, store: Path, out: Path) -> None:
    """Runs in the fresh subprocess: import, time the job, print one JSON line."""
    t0 = time.perf_counter()
    if engine == "polars":
        # Import cost measured apart from the job: the CLI and the command modules (scipy).
        import analysis.__main__
        import analysis.report  # noqa: F401 - imports every command module
    else:
        import pandas  # noqa: F401
    t1 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF)
    if engine == "polars":
        polars_job(job, store, out)
    else:
        pandas_job(job, store)
    t2 = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_SELF)
    # CPU seconds (all threads) next to wall time: on a shared machine the wall time also
    # measures the neighbours.
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rss_mb = after.ru_maxrss / 1024  # Linux reports KiB
    print(
        json.dumps({"import_s": t1 - t0, "job_s": t2 - t1, "cpu_s": cpu_s, "peak_rss_mb": rss_mb})
    )


def run_child(engine: str, job: str, store: Path, out: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.analysis", "--child", engine, job, str(store), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{engine} {job} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def generate(store: Path, steps: int) -> None:
    """Runs in its own subprocess: write the store and print what was written."""
    import shutil

    from bench.synthetic_store import generate_store

    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    made = generate_store(
        store,
        experiment="bench",
        losses=LOSSES,
        seeds=SEEDS,
        sizes=SIZES,
        lrs=LRS,
        steps=steps,
        eval_every=50,
        restored_fraction=0.01,
        retried_fraction=0.05,
        running_fraction=0.03,
        errored_fraction=0.02,
        seed=0,
    )
    print(
        f"generated {made.n_trials} trials, {made.n_metric_rows:,} metric rows "
        f"({made.n_unique_rows:,} after deduplication) in {time.perf_counter() - t0:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--steps", type=int, default=585, help="training steps per trial")
    parser.add_argument("--reuse", action="store_true", help="keep an existing generated store")
    parser.add_argument(
        "--child", nargs=4, metavar=("ENGINE", "JOB", "STORE", "OUT"), help=argparse.SUPPRESS
    )
    parser.add_argument("--generate", nargs=2, metavar=("STORE", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, job, store, out = args.child
        child(engine, job, Path(store), Path(out))
        return
    if args.generate:
        generate(Path(args.generate[0]), int(args.generate[1]))
        return
    # This parent process imports neither polars nor pandas and builds nothing big: a child's
    # ru_maxrss starts from its parent's resident size at fork (Linux carries the high-water mark
    # across exec), so a fat parent would inflate every measurement.
    store = args.out / "analysis_store"
    if not (args.reuse and (store / "metrics").is_dir()):
        subprocess.run(
            [sys.executable, "-m", "bench.analysis", "--generate", str(store), str(args.steps)],
            cwd=ROOT,
            check=True,
        )
    size_mb = sum(p.stat().st_size for p in store.rglob("*.parquet")) / 2**20
    print(f"store: {store} ({size_mb:.0f} MiB of Parquet)")
    print(f"cores: {os.cpu_count()}; load average before: {os.getloadavg()[0]:.1f}\n")
    rows = []
    for job in JOBS:
        pol = run_child("polars", job, store, args.out)
        pan = run_child("pandas", job, store, args.out) if job != "report" else None
        rows.append((job, pol, pan))
    print(
        "| command | polars wall (s) | polars CPU (s) | polars peak RSS (MiB) | pandas wall (s) | "
        "pandas CPU (s) | pandas peak RSS (MiB) |"
    )
    print("|---|---|---|---|---|---|---|")

    def cells(r: dict[str, float] | None) -> str:
        if r is None:
            return "— | — | —"
        return f"{r['job_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f}"

    for job, pol, pan in rows:
        print(f"| {job} | {cells(pol)} | {cells(pan)} |")
    print(
        f"\nimport time, not included above: analysis CLI {rows[0][1]['import_s']:.2f} s, "
        f"pandas {rows[0][2]['import_s']:.2f} s; load average after: {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the project root: python -m bench.analysis")
    main()

"""`numsweep status E`: an experiment's trials, their states and best values, and its files."""

from __future__ import annotations

import polars as pl

from orchestrator.driver import ExperimentPaths, study_storage, tune_runs
from orchestrator.parquet_sink import ResultsStore
from orchestrator.sweep_file import SweepConfig


def _read(store: ResultsStore, table: str) -> pl.DataFrame | None:
    parts = store.list_parts(table)
    if not parts:
        return None
    if "://" in store.base or not store.base.startswith("/"):
        return pl.from_arrow(store.read_table(table, None))
    return pl.read_parquet(parts)


def experiment_status(root: str, sweep: SweepConfig) -> str:
    store = ResultsStore(root, sweep.experiment)
    paths = ExperimentPaths(root, sweep.experiment)
    lines = [f"experiment {sweep.experiment} ({sweep.mode}) under {root}"]
    trials = _read(store, "trials")
    metrics = _read(store, "metrics")
    if trials is None:
        lines.append("no trial has started yet")
    else:
        latest = trials.sort("ts").group_by("trial_id", maintain_order=True).last()
        counts = latest.group_by("status").len().sort("status")
        lines.append(
            f"{latest.height} trial(s): " + ", ".join(f"{n} {s}" for s, n in counts.iter_rows())
        )
        last_step = (
            metrics.group_by("trial_id").agg(pl.col("step").max().alias("last_step"))
            if metrics is not None
            else pl.DataFrame(
                {"trial_id": [], "last_step": []},
                schema={"trial_id": pl.String, "last_step": pl.Int64},
            )
        )
        table = latest.join(last_step, on="trial_id", how="left")
        objectives = sweep.search.objectives if sweep.mode == "search" else []
        for objective in objectives:
            if metrics is None:
                break
            final = (
                metrics.filter(pl.col("metric") == objective.metric)
                .sort("step")
                .group_by("trial_id")
                .last()
                .select("trial_id", pl.col("value").alias(objective.metric))
            )
            table = table.join(final, on="trial_id", how="left")
        columns = ["trial_id", "status", "loss", "seed", "last_step"]
        columns += [c for c in ("alpha", "decay_base", "lam", "eta", "lr") if c in table.columns]
        columns += [o.metric for o in objectives if o.metric in table.columns]
        with pl.Config(
            tbl_rows=200, tbl_cols=20, tbl_width_chars=160, tbl_hide_dataframe_shape=True
        ):
            lines.append(str(table.select(columns).sort("trial_id")))
        for objective in objectives:
            if objective.metric in table.columns:
                ranked = table.drop_nulls(objective.metric).sort(
                    objective.metric, descending=objective.mode == "max"
                )
                if ranked.height:
                    best = ranked.row(0, named=True)
                    lines.append(
                        f"best {objective.mode} {objective.metric}: {best[objective.metric]:.6g} "
                        f"(trial {best['trial_id']}, loss {best['loss']})"
                    )
    if sweep.mode == "search":
        import optuna

        storage = study_storage(sweep, paths)
        names = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
        for run in tune_runs(sweep):
            name = run.name if sweep.search.per_loss else sweep.experiment
            summary = names.get(name)
            if summary is not None:
                lines.append(f"Optuna study {name}: {summary.n_trials} trial(s)")
        lines.append(f"Optuna storage: {sweep.search.storage or paths.default_study_storage()}")
    for table in ("metrics", "trials"):
        where = f"{root}/{table}/experiment={sweep.experiment}"
        lines.append(f"{table} parts: {len(store.list_parts(table))} in {where}")
    lines += [
        f"manifest:      {paths.directory}/manifest.json",
        f"Ray storage:   {paths.ray_storage}",
    ]
    return "\n".join(lines)

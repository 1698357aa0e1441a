"""Synthetic results stores in the exact on-disk format the sweep writes (schema version 1), for
tests and the benchmark.

Two layers:
- `write_metrics_part` / `write_trials_part` write given rows into
  `metrics/experiment=<E>/part-*.parquet` and `trials/experiment=<E>/part-*.parquet` with the
  contract's Arrow types (hand-built golden stores use these directly);
- `generate_store` fabricates a whole sweep (losses × sizes × learning rates × seeds) whose
  metrics follow known power laws in the parameter count, with optional restored duplicates,
  retried attempts, and trials that are still running or failed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.results import METRICS_SCHEMA, TRIAL_COLUMNS

TRIALS_TYPES: dict[str, pa.DataType] = {field.name: field.type for field in TRIAL_COLUMNS}
"""Types of the trials table's fixed columns; other columns (the loss parameters) get Arrow's
inferred type."""

EPOCH = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
"""Timestamps of generated stores count from here."""


def _part_path(root: Path, table: str, experiment: str, part: str) -> Path:
    folder = Path(root) / table / f"experiment={experiment}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"part-{part}.parquet"


def write_metrics_part(
    root: str | Path,
    experiment: str,
    rows: Sequence[tuple[str, int, int, str, float, dt.datetime]] | Mapping[str, Any],
    part: str = "00000",
) -> Path:
    """Write one metrics part file and return its path.

    `rows` is either a sequence of (trial_id, attempt, step, metric, value, ts) tuples or a
    mapping of column name to array (numpy arrays or Arrow arrays; `ts` as datetimes or as int64
    microseconds since the Unix epoch).
    """
    if isinstance(rows, Mapping):
        columns = dict(rows)
    else:
        names = METRICS_SCHEMA.names
        columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    missing = [name for name in METRICS_SCHEMA.names if name not in columns]
    if missing:
        raise ValueError(f"metrics rows lack column(s) {missing}")
    arrays = [
        pa.array(columns[f.name]).cast(f.type)
        if not isinstance(columns[f.name], pa.Array)
        else columns[f.name].cast(f.type)
        for f in METRICS_SCHEMA
    ]
    path = _part_path(Path(root), "metrics", experiment, part)
    pq.write_table(pa.Table.from_arrays(arrays, schema=METRICS_SCHEMA), path)
    return path


def write_trials_part(
    root: str | Path, experiment: str, rows: Sequence[Mapping[str, Any]], part: str = "00000"
) -> Path:
    """Write one trials part file (one row per trial state change) and return its path.

    Columns absent from every row are left out of the file, as the contract allows; known
    columns get the contract's types, unknown ones Arrow's inferred type.
    """
    if not rows:
        raise ValueError("write_trials_part needs at least one row")
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in names)
    for required in ("trial_id", "status", "ts"):
        if required not in names:
            raise ValueError(f"trials rows lack the {required!r} column")
    arrays, fields = [], []
    for name in names:
        values = [row.get(name) for row in rows]
        typ = TRIALS_TYPES.get(name)
        arr = pa.array(values, type=typ) if typ is not None else pa.array(values)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    path = _part_path(Path(root), "trials", experiment, part)
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)
    return path


@dataclass(frozen=True)
class SyntheticStore:
    """What `generate_store` wrote, including the truths tests compare against."""

    root: Path
    experiment: str
    n_trials: int
    n_metric_rows: int
    """Rows written, duplicates and retried overlaps included."""
    n_unique_rows: int
    """Rows after keeping one per (trial, step, metric)."""
    exponents: dict[str, float] = field(default_factory=dict)
    """True exponent a of M ∝ N^a for eval/<split>/<leaf> at the end of training, by leaf."""
    statuses: dict[str, str] = field(default_factory=dict)
    """Final status per trial_id."""


SPLIT_LEAVES = (
    "ce",
    "error_entropy",
    "self_alignment",
    "log_confidence",
    "digit_entropy",
    "digit_acc",
    "digit_acc_int",
    "digit_acc_dec",
)
TRAIN_METRICS = (
    "train/loss",
    "train/ce",
    "train/aux",
    "train/lr",
    "train/grad_norm",
    "perf/tokens_per_s",
    "perf/step_time_s",
    "perf/peak_mem_mb",
)
GEN_LEAVES = ("exact_match", "mae", "rel_error")

# Per-loss multipliers of the final error entropy and the level digit entropy settles at: del
# sharpens the digit distribution, ntl flattens it, the rest sit near mle.
_LOSS_EFFECT = {"mle": 1.0, "del": 0.96, "ntl": 0.98, "dist2": 1.01, "mixce": 0.99, "emo": 1.0}
_LOSS_ENTROPY = {"mle": 0.9, "del": 0.55, "ntl": 1.25, "dist2": 1.0, "mixce": 0.85, "emo": 0.95}


def generate_store(
    root: str | Path,
    *,
    experiment: str = "synthetic",
    losses: Sequence[str] = ("mle", "del", "ntl"),
    seeds: Sequence[int] = (0, 1, 2),
    sizes: Mapping[str, int] | None = None,
    lrs: Sequence[float] = (1e-3,),
    steps: int = 200,
    eval_every: int = 50,
    splits: Sequence[str] = ("test", "extra"),
    benchmarks: Sequence[str] = ("mathgen", "gsm8k", "svamp"),
    dataset: str = "mathgen",
    noise: float = 0.02,
    restored_fraction: float = 0.0,
    retried_fraction: float = 0.0,
    running_fraction: float = 0.0,
    errored_fraction: float = 0.0,
    trials_per_part: int = 100,
    seed: int = 0,
) -> SyntheticStore:
    """Write a full synthetic sweep under `root` and describe it.

    Every combination of loss × size × lr × seed is one trial. At the end of training the
    teacher-forced metrics follow power laws in the non-embedding parameter count N with the
    exponents in the returned `exponents` (times a per-trial log-normal seed effect of sd
    `noise`), and ce = error_entropy + self_alignment − log_confidence holds on every row.
    `restored_fraction` of rows are written twice (the second copy later, with a different value:
    the one analysis must keep); `retried_fraction` of trials have a second attempt that re-reports
    the last quarter of training with different values; `running_fraction` / `errored_fraction`
    of trials stop early with status RUNNING / ERROR.
    """
    root = Path(root)
    sizes = dict(sizes) if sizes is not None else {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000}
    rng = np.random.default_rng(seed)
    combos = [
        (loss, name, n, lr, s)
        for loss in losses
        for name, n in sizes.items()
        for lr in lrs
        for s in seeds
    ]
    n_trials = len(combos)
    trial_ids = np.array([f"{experiment}_{i:05d}" for i in range(n_trials)])
    loss_of = np.array([c[0] for c in combos])
    n_of = np.array([c[2] for c in combos], dtype=np.float64)  # (T,)
    lr_of = np.array([c[3] for c in combos], dtype=np.float64)  # (T,)
    rel_n = n_of / 1e6  # (T,)
    effect = np.array([_LOSS_EFFECT.get(loss, 1.0) for loss in loss_of])  # (T,)
    h_level = np.array([_LOSS_ENTROPY.get(loss, 1.0) for loss in loss_of])  # (T,)
    # Learning rates away from 1e-3 cost a little, quadratically in decades.
    lr_cost = 1.0 + 0.05 * (np.log10(lr_of) + 3.0) ** 2  # (T,)

    def seed_effect() -> np.ndarray:
        return np.exp(rng.normal(0.0, noise, n_trials))[:, None]  # (T, 1)

    # Log-confidence is positive and grows with size (as in the sweep's own output), so that
    # ce = EE + SA − LC shrinks faster than EE alone.
    exponents = {"error_entropy": -0.12, "self_alignment": -0.05, "log_confidence": 0.05}
    eval_steps = np.unique(np.r_[np.arange(0, steps + 1, eval_every), steps]).astype(np.int64)
    train_steps = np.arange(1, steps + 1, dtype=np.int64)

    def progress(s: np.ndarray) -> np.ndarray:
        return 1.0 - np.exp(-s / (0.25 * steps))  # (S,)

    blocks: list[tuple[str, np.ndarray, np.ndarray]] = []  # (metric, steps (S,), values (T, S))
    pe = progress(eval_steps)[None, :]  # (1, S_eval)
    early = 1.0 + 1.5 * (1.0 - pe)  # (1, S_eval): metrics start 2.5× their final value
    # The model's underlying quality, shared by every split, the generation benchmarks and the
    # training loss: final error entropy (T, 1) and digit accuracy over evaluation steps.
    ee_final = (1.2 * rel_n ** exponents["error_entropy"] * effect * lr_cost)[:, None]
    base_acc = np.clip(0.97 - 0.35 * ee_final, 0.0, 1.0) * pe  # (T, S_eval)
    for k, split in enumerate(splits):
        harder = 1.0 + 0.3 * k  # later splits (extrapolation) are harder
        ee = ee_final * harder * seed_effect() * early  # (T, S_eval)
        sa = (0.3 * rel_n ** exponents["self_alignment"])[:, None] * harder * seed_effect() * early
        # Confidence is lowest early in training: divide by the same early factor.
        lc = (0.2 * rel_n ** exponents["log_confidence"])[:, None] * seed_effect() / early
        ce = ee + sa - lc
        h_final = (h_level * rel_n**-0.03)[:, None] * seed_effect()  # (T, 1)
        entropy = h_final + (np.log(10.0) - h_final) * (1.0 - pe)  # (T, S_eval)
        acc = base_acc * seed_effect() / harder
        blocks += [
            (f"eval/{split}/ce", eval_steps, ce),
            (f"eval/{split}/error_entropy", eval_steps, ee),
            (f"eval/{split}/self_alignment", eval_steps, sa),
            (f"eval/{split}/log_confidence", eval_steps, lc),
            (f"eval/{split}/digit_entropy", eval_steps, entropy),
            (f"eval/{split}/digit_acc", eval_steps, acc),
            (f"eval/{split}/digit_acc_int", eval_steps, np.clip(acc * 1.02, 0, 1)),
            (f"eval/{split}/digit_acc_dec", eval_steps, acc * 0.97),
        ]
    exact = []
    for b, bench in enumerate(benchmarks):
        em = np.clip(base_acc * (0.9 - 0.15 * b) * seed_effect(), 0.0, 1.0)
        exact.append(em)
        blocks += [
            (f"gen/{bench}/exact_match", eval_steps, em),
            (f"gen/{bench}/mae", eval_steps, (1.0 - em) * 40.0 * (1 + b)),
            (f"gen/{bench}/rel_error", eval_steps, (1.0 - em) * 0.5),
        ]
    if benchmarks:
        blocks.append(("gen/macc", eval_steps, np.mean(exact, axis=0)))
    pt = progress(train_steps)[None, :]  # (1, S_train)
    # Training CE: a bit above the held-out CE the model ends at, decaying from 3× that.
    final_ce = ee_final * 1.6 * seed_effect()  # (T, 1)
    train_ce = final_ce * (1.0 + 2.0 * (1.0 - pt))  # (T, S_train)
    train_ce = train_ce * np.exp(rng.normal(0.0, 0.01, train_ce.shape))
    aux = np.where(loss_of == "mle", 0.0, 0.1)[:, None] * (1.0 - 0.5 * pt)
    schedule = lr_of[:, None] * 0.5 * (1.0 + np.cos(np.pi * train_steps / steps))[None, :]
    tokens_per_s = (2e4 * rel_n**-0.5)[:, None] * np.exp(rng.normal(0.0, 0.05, train_ce.shape))
    train_values = {
        "train/loss": train_ce + aux,
        "train/ce": train_ce,
        "train/aux": aux,
        "train/lr": schedule,
        "train/grad_norm": 1.0 / (0.2 + pt) * seed_effect(),
        "perf/tokens_per_s": tokens_per_s,
        "perf/step_time_s": 4096.0 / tokens_per_s,
        "perf/peak_mem_mb": np.broadcast_to((300.0 + 2e-5 * n_of)[:, None], train_ce.shape),
    }
    blocks += [(name, train_steps, train_values[name]) for name in TRAIN_METRICS]
    step0 = np.zeros(1, dtype=np.int64)
    blocks += [
        ("model/params_total", step0, (n_of + 5e6)[:, None]),
        ("model/params_non_embedding", step0, n_of[:, None]),
    ]

    # Which trials end early, and where.
    u = rng.random(n_trials)
    status = np.full(n_trials, "TERMINATED", dtype=object)
    status[u < running_fraction + errored_fraction] = "ERROR"
    status[u < running_fraction] = "RUNNING"
    stop = np.where(status == "TERMINATED", steps, rng.integers(1, max(2, steps), n_trials))

    # Flatten every block into long rows: trial index, step, metric code, value.
    metric_names = [name for name, _, _ in blocks]
    t_idx, st, code, val = [], [], [], []
    for c, (_, bsteps, values) in enumerate(blocks):
        t_grid = np.repeat(np.arange(n_trials), bsteps.size)  # (T·S,)
        s_grid = np.tile(bsteps, n_trials)  # (T·S,)
        keep = s_grid <= stop[t_grid]
        t_idx.append(t_grid[keep])
        st.append(s_grid[keep])
        code.append(np.full(int(keep.sum()), c, dtype=np.int32))
        val.append(np.ascontiguousarray(values).reshape(-1)[keep])
    trial = np.concatenate(t_idx)
    step = np.concatenate(st)
    mcode = np.concatenate(code)
    value = np.concatenate(val)
    attempt = np.zeros(trial.size, dtype=np.int32)
    # Each trial starts 10 s after the previous one; a step takes 0.5 s.
    t0_us = int((EPOCH - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds() * 1e6)
    trial_start_us = t0_us + np.arange(n_trials, dtype=np.int64) * 10_000_000
    ts = trial_start_us[trial] + step * 500_000
    n_unique = trial.size

    extra: list[tuple[np.ndarray, ...]] = []
    retried = rng.random(n_trials) < retried_fraction
    if retried.any():
        # Attempt 1 resumes from a checkpoint at 3/4 of the run and re-reports the later steps
        # (with other values), after attempt 0 finished writing.
        sel = retried[trial] & (step >= (3 * stop[trial]) // 4)
        extra.append(
            (
                trial[sel],
                step[sel],
                mcode[sel],
                value[sel] * (1.0 + rng.normal(0.0, 0.05, int(sel.sum()))),
                np.ones(int(sel.sum()), dtype=np.int32),
                ts[sel] + 3_600_000_000,
            )
        )
    dup = rng.random(trial.size) < restored_fraction
    if dup.any():
        # A restored sweep re-writes rows it had already flushed: same key, later ts.
        extra.append(
            (
                trial[dup],
                step[dup],
                mcode[dup],
                value[dup] * 0.99,
                attempt[dup],
                ts[dup] + 7_200_000_000,
            )
        )
    for e_trial, e_step, e_code, e_value, e_attempt, e_ts in extra:
        trial = np.concatenate([trial, e_trial])
        step = np.concatenate([step, e_step])
        mcode = np.concatenate([mcode, e_code])
        value = np.concatenate([value, e_value])
        attempt = np.concatenate([attempt, e_attempt])
        ts = np.concatenate([ts, e_ts])

    order = np.lexsort((ts, trial))  # part files hold whole trials, rows in time order
    trial, step, mcode, value, attempt, ts = (
        a[order] for a in (trial, step, mcode, value, attempt, ts)
    )
    names_arr = pa.array(metric_names, type=pa.string())
    ids_arr = pa.array(trial_ids.tolist(), type=pa.string())
    bounds = np.searchsorted(trial, np.arange(0, n_trials + trials_per_part, trials_per_part))
    for p in range(len(bounds) - 1):
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        if lo == hi:
            continue
        write_metrics_part(
            root,
            experiment,
            {
                "trial_id": ids_arr.take(pa.array(trial[lo:hi])),
                "attempt": attempt[lo:hi],
                "step": step[lo:hi],
                "metric": names_arr.take(pa.array(mcode[lo:hi])),
                "value": value[lo:hi],
                "ts": pa.array(ts[lo:hi], type=pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            },
            part=f"{p:05d}",
        )

    # Trials: PENDING and RUNNING rows in one part, the final state in another (without the
    # RUNNING trials, so that part lacks nothing but has `end` and `error`).
    first_rows, final_rows = [], []
    for i, (loss, model, _, lr, s) in enumerate(combos):
        start = EPOCH + dt.timedelta(seconds=10 * i)
        config = {
            "trial_id": str(trial_ids[i]),
            "loss": loss,
            "alpha": 0.5 if loss == "del" else None,
            "lr": float(lr),
            "seed": int(s),
            "model": model,
            "dataset": dataset,
        }
        first_rows.append({**config, "status": "PENDING", "ts": start - dt.timedelta(seconds=1)})
        first_rows.append({**config, "status": "RUNNING", "start": start, "ts": start})
        if status[i] != "RUNNING":
            end = start + dt.timedelta(seconds=0.5 * int(stop[i]))
            final_rows.append(
                {
                    **config,
                    "status": str(status[i]),
                    "start": start,
                    "end": end,
                    "error": "RuntimeError: synthetic failure" if status[i] == "ERROR" else None,
                    "ts": end,
                }
            )
    write_trials_part(root, experiment, first_rows, part="00000")
    if final_rows:
        write_trials_part(root, experiment, final_rows, part="00001")
    return SyntheticStore(
        root=root,
        experiment=experiment,
        n_trials=n_trials,
        n_metric_rows=int(trial.size),
        n_unique_rows=n_unique,
        exponents=exponents,
        statuses={str(trial_ids[i]): str(status[i]) for i in range(n_trials)},
    )

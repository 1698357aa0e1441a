"""Synthetic results stores, written through the sweep's own writer: `records.writer.ResultsStore`
for the Parquet parts and `trial_row` (from a real `TrialConfig`) for the trials table, so what
analysis reads here is what a sweep writes. Used by `python -m bench.analysis` (the analysis
speed benchmark), by the analysis tests, and to try the analysis without training
(docs/analysis.md).

Two layers:
- `write_metric_rows` / `write_trial_states` write given rows (hand-built golden stores use them);
  `write_foreign_trials_part` writes a trials part the way another writer version might (missing
  and unknown columns), for the reader's tolerance tests;
- `generate_store` fabricates a whole sweep (losses × sizes × learning rates × seeds × step
  budgets) whose CE decomposition behaves like "What Scales in Cross-Entropy Scaling Law?":
  error entropy follows a power law in N (and in tokens seen D), self-alignment and
  log-confidence do not scale, so CE = EE + (SA − LC) has an irreducible part and EE's share of
  CE falls with size. Optional restored duplicates, retried attempts, running and failed trials.
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

from records.layout import METRICS_SCHEMA, trial_row, trials_schema
from records.writer import ResultsStore
from trainables.config import TrialConfig
from trainables.losses import param_columns

TRIALS_SCHEMA_NOW = trials_schema(param_columns())
"""The trials schema the sweep's sink writes (parameter columns from the loss registry)."""

EPOCH = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
"""Timestamps of generated stores count from here."""

EXACT_METRICS = (
    "model/params_total",
    "model/params_non_embedding",
    "train/tokens_seen",
    "train/lr",
)
"""Metrics a re-run reports with the same value (a model's size, the tokens it was fed, the
schedule): restored or retried rows never change them."""


def write_metric_rows(
    root: str | Path,
    experiment: str,
    rows: Sequence[tuple[str, int, int, str, float, dt.datetime]] | Mapping[str, Any],
) -> str:
    """Write one metrics part through the sink's ResultsStore; returns its path.

    `rows` is a sequence of (trial_id, attempt, step, metric, value, ts) tuples or a mapping of
    column name to array (numpy or Arrow; `ts` as datetimes or Arrow timestamps).
    """
    if isinstance(rows, Mapping):
        columns = dict(rows)
    else:
        columns = {name: [row[i] for row in rows] for i, name in enumerate(METRICS_SCHEMA.names)}
    missing = [name for name in METRICS_SCHEMA.names if name not in columns]
    if missing:
        raise ValueError(f"metrics rows lack column(s) {missing}")
    arrays = [
        columns[f.name].cast(f.type)
        if isinstance(columns[f.name], pa.Array)
        else pa.array(columns[f.name]).cast(f.type)
        for f in METRICS_SCHEMA
    ]
    table = pa.Table.from_arrays(arrays, schema=METRICS_SCHEMA)
    return ResultsStore(str(root), experiment).write_part("metrics", table, METRICS_SCHEMA)


def trial_config(
    *,
    loss: str = "mle",
    params: Mapping[str, float | bool] | None = None,
    seed: int = 0,
    lr: float = 1e-3,
    model: str = "tiny",
    dataset: str = "mathgen",
    steps: int = 200,
) -> dict[str, Any]:
    """A real TrialConfig as the plain JSON a worker receives. `dataset` other than mathgen is
    an instruction file of that name (trial_row records its path as the dataset)."""
    data = {"source": "mathgen"} if dataset == "mathgen" else {"source": "instructions"}
    if dataset != "mathgen":
        data["path"] = dataset
    config = TrialConfig(
        seed=seed,
        model={"preset": model},
        data=data,
        train={"lr": lr, "steps": steps},
        loss={"name": loss, "params": dict(params or {})},
    )
    return config.model_dump(mode="json")


def write_trial_states(root: str | Path, experiment: str, rows: Sequence[dict[str, Any]]) -> str:
    """Write trials-table rows (from `trial_row`) as one part through the sink's ResultsStore."""
    return ResultsStore(str(root), experiment).write_part("trials", list(rows), TRIALS_SCHEMA_NOW)


def write_foreign_trials_part(
    root: str | Path, experiment: str, rows: Sequence[Mapping[str, Any]], part: str = "99999"
) -> Path:
    """A trials part as another writer version might leave it: only the columns the rows have
    (known ones with the contract's types, unknown ones with Arrow's inferred type)."""
    names: list[str] = []
    for row in rows:
        names.extend(k for k in row if k not in names)
    types = {f.name: f.type for f in TRIALS_SCHEMA_NOW}
    arrays = [
        pa.array([row.get(n) for row in rows], type=types.get(n))
        if n in types
        else pa.array([row.get(n) for row in rows])
        for n in names
    ]
    folder = Path(root) / "trials" / f"experiment={experiment}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{part}.parquet"
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
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
    """True exponents of the final test-split metrics: error_entropy in N, error_entropy_tokens
    in tokens seen D; self_alignment and log_confidence 0 (they do not scale)."""
    irreducible: float = 0.0
    """CE − EE on the test split at the end of training (SA − LC, without seed noise)."""
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
    "train/tokens_seen",
    "perf/tokens_per_s",
    "perf/step_time_s",
    "perf/peak_mem_mb",
)
GEN_LEAVES = ("exact_match", "mae", "rel_error", "log_error")

# Per-loss multipliers of the final error entropy and the level digit entropy settles at: del
# sharpens the digit distribution, ntl flattens it, the rest sit near mle.
_LOSS_EFFECT = {"mle": 1.0, "del": 0.96, "ntl_mse": 0.98, "dist2": 1.01, "mixce": 0.99, "emo": 1.0}
_LOSS_ENTROPY = {"mle": 0.9, "del": 0.55, "ntl_mse": 1.25, "dist2": 1.0, "mixce": 0.85, "emo": 0.95}
_LOSS_PARAMS = {"del": {"alpha": 0.01, "decay_base": 1.02}, "ntl_mse": {"alpha": 0.3}}
_TOKENS_PER_STEP = 640.0  # 16 sequences of ~40 non-padding tokens
_REFERENCE_TOKENS = 200 * _TOKENS_PER_STEP  # D at which the tokens factor is 1
SA_LEVEL, LC_LEVEL = 1.0, 0.2
"""Self-alignment and log-confidence at the end of training (test split): CE = EE + 0.8."""


@dataclass(frozen=True)
class _Trial:
    loss: str
    model: str
    n: float
    lr: float
    seed: int
    steps: int


def _blocks(
    trials: Sequence[_Trial],
    steps: int,
    *,
    eval_every: int,
    splits: Sequence[str],
    benchmarks: Sequence[str],
    noise: float,
    rng: np.random.Generator,
    seed_tokens: Mapping[int, np.ndarray],
    lr_shift: float,
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(metric, steps (S,), values (T, S)) for trials that share one step budget."""
    n_of = np.array([t.n for t in trials], dtype=np.float64)  # (T,)
    lr_of = np.array([t.lr for t in trials], dtype=np.float64)  # (T,)
    rel_n = n_of / 1e6  # (T,)
    effect = np.array([_LOSS_EFFECT.get(t.loss, 1.0) for t in trials])  # (T,)
    h_level = np.array([_LOSS_ENTROPY.get(t.loss, 1.0) for t in trials])  # (T,)
    # Learning rates away from the best one cost a little, quadratically in decades; the best is
    # 1e-3 · (N/1e6)^lr_shift (lr_shift < 0: bigger models want smaller rates).
    lr_cost = 1.0 + 0.05 * (np.log10(lr_of) + 3.0 - lr_shift * np.log10(rel_n)) ** 2  # (T,)
    T = len(trials)

    def seed_effect() -> np.ndarray:
        return np.exp(rng.normal(0.0, noise, T))[:, None]  # (T, 1)

    eval_steps = np.unique(np.r_[np.arange(0, steps + 1, eval_every), steps]).astype(np.int64)
    train_steps = np.arange(1, steps + 1, dtype=np.int64)
    # Tokens fed per step depend on the data order, i.e. on the seed only (not on the model).
    tokens = np.stack([np.cumsum(seed_tokens[t.seed][:steps]) for t in trials])  # (T, S_train)
    d_final = tokens[:, -1]  # (T,)

    def progress(s: np.ndarray) -> np.ndarray:
        # 0 at step 0, exactly 1 at the last step: the final values are the stated truths.
        return (1.0 - np.exp(-s / (0.25 * steps))) / (1.0 - np.exp(-4.0))  # (S,)

    blocks: list[tuple[str, np.ndarray, np.ndarray]] = []
    pe = progress(eval_steps)[None, :]  # (1, S_eval)
    early = 1.0 + 1.5 * (1.0 - pe)  # (1, S_eval): metrics start 2.5× their final value
    # The model's underlying quality, shared by every split, the generation benchmarks and the
    # training loss: final error entropy (T, 1), a power law in N and in tokens seen.
    ee_final = (1.2 * rel_n**-0.12 * (d_final / _REFERENCE_TOKENS) ** -0.08 * effect * lr_cost)[
        :, None
    ]
    base_acc = np.clip(0.97 - 0.35 * ee_final, 0.0, 1.0) * pe  # (T, S_eval)
    for k, split in enumerate(splits):
        harder = 1.0 + 0.3 * k  # later splits (extrapolation) are harder
        ee = ee_final * harder * seed_effect() * early  # (T, S_eval)
        # Self-alignment and confidence carry no size trend, only seed noise.
        sa = SA_LEVEL * harder * seed_effect() * early
        lc = LC_LEVEL * seed_effect() / early  # confidence is lowest early in training
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
            # a wrong answer off by about the MAE's scale, log10(1 + |error|) of it
            (f"gen/{bench}/log_error", eval_steps, (1.0 - em) * np.log10(1.0 + 40.0 * (1 + b))),
        ]
    if benchmarks:
        blocks.append(("gen/macc", eval_steps, np.mean(exact, axis=0)))
    pt = progress(train_steps)[None, :]  # (1, S_train)
    # Training CE: a bit above the held-out CE the model ends at, decaying from 3× that.
    final_ce = (ee_final + SA_LEVEL - LC_LEVEL) * 1.1 * seed_effect()  # (T, 1)
    train_ce = final_ce * (1.0 + 2.0 * (1.0 - pt))  # (T, S_train)
    train_ce = train_ce * np.exp(rng.normal(0.0, 0.01, train_ce.shape))
    aux = np.array([0.0 if t.loss == "mle" else 0.1 for t in trials])[:, None] * (1.0 - 0.5 * pt)
    schedule = lr_of[:, None] * 0.5 * (1.0 + np.cos(np.pi * train_steps / steps))[None, :]
    tokens_per_s = (2e4 * rel_n**-0.5)[:, None] * np.exp(rng.normal(0.0, 0.05, train_ce.shape))
    train_values = {
        "train/loss": train_ce + aux,
        "train/ce": train_ce,
        "train/aux": aux,
        "train/lr": schedule,
        "train/grad_norm": 1.0 / (0.2 + pt) * seed_effect(),
        "train/tokens_seen": tokens,
        "perf/tokens_per_s": tokens_per_s,
        "perf/step_time_s": 4096.0 / tokens_per_s,
        "perf/peak_mem_mb": np.broadcast_to((300.0 + 2e-5 * n_of)[:, None], train_ce.shape),
    }
    blocks += [(name, train_steps, train_values[name]) for name in TRAIN_METRICS]
    step0 = np.zeros(1, dtype=np.int64)
    blocks += [
        ("train/tokens_seen", step0, np.zeros((T, 1))),
        ("model/params_total", step0, (n_of + 5e6)[:, None]),
        ("model/params_non_embedding", step0, n_of[:, None]),
    ]
    return blocks


def generate_store(
    root: str | Path,
    *,
    experiment: str = "synthetic",
    losses: Sequence[str] = ("mle", "del", "ntl_mse"),
    seeds: Sequence[int] = (0, 1, 2),
    sizes: Mapping[str, int] | None = None,
    lrs: Sequence[float] = (1e-3,),
    steps: int | Sequence[int] = 200,
    eval_every: int = 50,
    splits: Sequence[str] = ("test", "extra"),
    benchmarks: Sequence[str] = ("mathgen", "mathgen_extra", "gsm8k"),
    dataset: str = "mathgen",
    noise: float = 0.02,
    lr_shift: float = 0.0,
    restored_fraction: float = 0.0,
    retried_fraction: float = 0.0,
    running_fraction: float = 0.0,
    errored_fraction: float = 0.0,
    trials_per_part: int = 100,
    seed: int = 0,
) -> SyntheticStore:
    """Write a full synthetic sweep under `root` and describe it.

    Every combination of loss × size × lr × seed × step budget (`steps`, one or several) is one
    trial. At the end of training on the test split, error entropy is 1.2·(N/1e6)^−0.12 ·
    (D/128k)^−0.08 (D = tokens seen), self-alignment 1.0 and log-confidence 0.2, each times a
    per-trial log-normal seed effect of sd `noise`, and ce = EE + SA − LC on every row; the
    extrapolation split is harder (EE and SA × 1.3). A learning rate other than the size's
    best, 1e-3·(N/1e6)^`lr_shift`, multiplies EE by 1 + 0.05·(decades away)².
    `restored_fraction` of rows are written twice (the second copy later, with a different
    value, except for EXACT_METRICS: the one analysis must keep); `retried_fraction` of trials
    have a second attempt that re-reports the last quarter of training; `running_fraction` /
    `errored_fraction` of trials stop early with status RUNNING / ERROR.
    """
    root = Path(root)
    sizes = dict(sizes) if sizes is not None else {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000}
    budgets = [steps] if isinstance(steps, int) else list(steps)
    rng = np.random.default_rng(seed)
    longest = max(budgets)
    # Non-padding tokens per training step, per seed: ~640 with a seed-dependent mean.
    seed_tokens = {
        s: np.round(
            _TOKENS_PER_STEP
            * (1.0 + 0.02 * rng.standard_normal())
            * (1.0 + 0.05 * rng.standard_normal(longest))
        )
        for s in seeds
    }
    trials = [
        _Trial(loss, name, float(n), float(lr), int(s), int(b))
        for b in budgets
        for loss in losses
        for name, n in sizes.items()
        for lr in lrs
        for s in seeds
    ]
    n_trials = len(trials)
    trial_ids = np.array([f"{experiment}_{i:05d}" for i in range(n_trials)])

    # Long rows: trial index, step, metric code, value, over every budget's blocks.
    metric_names: list[str] = []
    t_idx, st, code, val = [], [], [], []
    stop = np.empty(n_trials, dtype=np.int64)
    u = rng.random(n_trials)
    status = np.full(n_trials, "TERMINATED", dtype=object)
    status[u < running_fraction + errored_fraction] = "ERROR"
    status[u < running_fraction] = "RUNNING"
    for b in budgets:
        members = np.array([i for i, t in enumerate(trials) if t.steps == b])
        blocks = _blocks(
            [trials[i] for i in members],
            b,
            eval_every=eval_every,
            splits=splits,
            benchmarks=benchmarks,
            noise=noise,
            rng=rng,
            seed_tokens=seed_tokens,
            lr_shift=lr_shift,
        )
        ended = status[members] == "TERMINATED"
        stop[members] = np.where(ended, b, rng.integers(1, max(2, b), members.size))
        for name, bsteps, values in blocks:
            if name not in metric_names:
                metric_names.append(name)
            c = metric_names.index(name)
            t_grid = np.repeat(members, bsteps.size)  # (T·S,)
            s_grid = np.tile(bsteps, members.size)  # (T·S,)
            keep = s_grid <= stop[t_grid]
            t_idx.append(t_grid[keep])
            st.append(s_grid[keep])
            code.append(np.full(int(keep.sum()), c, dtype=np.int32))
            val.append(np.ascontiguousarray(values, dtype=np.float64).reshape(-1)[keep])
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
    exact = np.isin(mcode, [metric_names.index(m) for m in EXACT_METRICS if m in metric_names])

    extra: list[tuple[np.ndarray, ...]] = []
    retried = rng.random(n_trials) < retried_fraction
    if retried.any():
        # Attempt 1 resumes from a checkpoint at 3/4 of the run and re-reports the later steps
        # (with other values, except the exact ones), after attempt 0 finished writing.
        sel = retried[trial] & (step >= (3 * stop[trial]) // 4)
        jitter = np.where(exact[sel], 1.0, 1.0 + rng.normal(0.0, 0.05, int(sel.sum())))
        extra.append(
            (
                trial[sel],
                step[sel],
                mcode[sel],
                value[sel] * jitter,
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
                value[dup] * np.where(exact[dup], 1.0, 0.99),
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
        write_metric_rows(
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
        )

    # Trials, as the sink writes them: a RUNNING row when a trial starts, then its final state.
    first_rows, final_rows = [], []
    for i, t in enumerate(trials):
        config = trial_config(
            loss=t.loss,
            params=_LOSS_PARAMS.get(t.loss),
            seed=t.seed,
            lr=t.lr,
            model=t.model,
            dataset=dataset,
            steps=t.steps,
        )
        start = EPOCH + dt.timedelta(seconds=10 * i)
        tid = str(trial_ids[i])
        first_rows.append(trial_row(tid, "RUNNING", config, start=start, ts=start))
        if status[i] != "RUNNING":
            end = start + dt.timedelta(seconds=0.5 * int(stop[i]))
            error = "RuntimeError: synthetic failure" if status[i] == "ERROR" else None
            final_rows.append(
                trial_row(tid, str(status[i]), config, start=start, end=end, error=error, ts=end)
            )
    write_trial_states(root, experiment, first_rows)
    if final_rows:
        write_trial_states(root, experiment, final_rows)
    return SyntheticStore(
        root=root,
        experiment=experiment,
        n_trials=n_trials,
        n_metric_rows=int(trial.size),
        n_unique_rows=n_unique,
        exponents={
            "error_entropy": -0.12,
            "error_entropy_tokens": -0.08,
            "self_alignment": 0.0,
            "log_confidence": 0.0,
        },
        irreducible=SA_LEVEL - LC_LEVEL,
        statuses={str(trial_ids[i]): str(status[i]) for i in range(n_trials)},
    )

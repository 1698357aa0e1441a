"""The settings of one `analysis scaling` run: every option that shapes its numbers, in one frozen
dataclass that the command's steps read instead of a dozen threaded parameters. The field
docstrings are the documentation of the command's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analysis.command_start import freeze_lists
from analysis.option_choices import AGGREGATES, AXES, LR_MODES
from analysis.planned_sizes import check_planned, sizes
from analysis.scaling.forms import HUBER_DELTA, JointForm, parse_fix
from analysis.scaling.points import PARAM_METRICS
from analysis.seed_stats import check_level
from analysis.selection import FINAL, VALUE_FLAG, ValueSpec
from analysis.settings_flags import METRICS_FLAG, STATUS_FLAG, flag, numbers
from records.errors import ResultsError
from records.reader import DEFAULT_STATUSES

flops = numbers("--budgets", "a number of FLOPs")
"""--budgets as FLOPs; a value that is not a number is bad input."""

BUDGETS_FLAG = flag(metavar="C,C,...", parse=flops)


"""--budgets 1e21,1e22: compute budgets in FLOPs."""
LINES = ("D", "ratio")
"""What a table's N lines hold fixed: its D, or its tokens per parameter D/N."""


def parse_where(texts: tuple[str, ...]) -> dict[str, list[str]]:
    """--where COL=VALUE items as {column: [values]}; a malformed item is a ResultsError."""
    out: dict[str, list[str]] = {}
    for text in texts:
        col, sep, value = text.partition("=")
        if not sep or not col.strip():
            raise ResultsError(f"--where {text!r}: give COL=VALUE")
        out.setdefault(col.strip(), []).append(value.strip())
    return out


@dataclass(frozen=True)
class ScalingSettings:
    """Options of the scaling command (`python -m analysis scaling --help` names each flag)."""

    metrics: tuple[str, ...] | None = field(default=None, metadata=METRICS_FLAG)
    """Metric names or globs to fit (--metrics); None: CE, EE, SA and log-confidence of every
    split the store has."""
    axes: tuple[str, ...] | None = field(default=None, metadata=flag("--axis"))
    """Axes to fit against (--axis): N (parameters), D (tokens seen), C ≈ 6·N·D; None: N, plus
    D and C when tokens seen vary across sizes."""
    params: str = field(default="non_embedding", metadata=flag(choices=tuple(PARAM_METRICS)))
    """Which parameter count is N (--params): non_embedding or total."""
    value: ValueSpec = field(default=FINAL, metadata=VALUE_FLAG)
    """Which value of a trial is its point (--value): final, best or step:N."""
    by: tuple[str, ...] = ("loss",)
    """Configuration columns that split the fits into groups (--by); experiment, dataset and
    group are added where they vary."""
    statuses: tuple[str, ...] = field(default=DEFAULT_STATUSES, metadata=STATUS_FLAG)
    """Trial statuses read (--status)."""
    aggregate: str = field(default="size", metadata=flag(choices=AGGREGATES))
    """size: fit the per-size means over seeds; trial: every trial a point (--aggregate)."""
    lr: str = field(default="best", metadata=flag(choices=LR_MODES))
    """When the learning rate varies within a group (--lr): best = per size only the trials of
    the best lr; pool = average over every lr."""
    select_by: str | None = field(default=None, metadata=flag(metavar="METRIC"))
    """Metric that picks the best learning rate (--select-by); None: eval/<first split>/ce."""
    n_boot: int = field(default=2000, metadata=flag("--bootstrap"))
    """Bootstrap resamples of the plain exponent's interval and of the R² difference
    (--bootstrap)."""
    seed: int = 0
    """Seed of every bootstrap (--seed)."""
    level: float = 0.95
    """Confidence level of every interval (--level)."""
    robust: bool = False
    """Also the field's fits (--robust): the saturating form by Huber loss on log residuals from
    a grid of starts with bootstrap intervals over (size, seed) units (table scaling_huber), and
    CE against EE by a paired bootstrap of leave-one-size-out and extrapolation errors (table
    scaling_prediction). Off by default: every resample refits every form (TNC, ~15–60 ms a
    refit here), about 1–4 minutes for study 2's 16 metrics at 100 resamples on this machine."""
    n_boot_fit: int | None = field(default=None, metadata=flag("--fit-bootstrap"))
    """Bootstrap resamples of the robust fits' intervals (Huber, joint L(N, D) and its
    compute-optimal allocation), of the paired comparison of prediction errors and of the
    held-out checks' prediction intervals (--fit-bootstrap); None: 100 for a store, 1,000 for a
    points table."""
    budgets: tuple[float, ...] | None = field(default=None, metadata=BUDGETS_FLAG)
    """Compute budgets C in FLOPs at which the joint fit's compute-optimal N*, D* and tokens per
    parameter are given (--budgets); None: the data's largest C and 10× and 100× beyond."""
    pool_experiments: bool = False
    """Fit the experiments read as one family (--pool-experiments) instead of one group each:
    a learning-rate grid, its extensions and more seeds at its chosen rates, each its own
    experiment, choose each size's rate together."""
    models: tuple[str, ...] | None = field(default=None, metadata=flag(metavar="PRESET"))
    """Only the trials of these model presets (--models); None: every size the store has. A
    study that drops a size after its learning-rate grid keeps the grid's trials in its store
    and names the sizes it fits here."""
    gate_only: bool = field(default=False, metadata=flag("--gate"))
    """Only the sanity gate (--gate): CE falls with N at the chosen learning rates, and each
    size's best learning rate lies inside its grid."""
    tie_exponents: bool = False
    """Fit the joint form with α = β (--tie-exponents), as the data-constrained (Muennighoff et
    al. 2023) and over-training (Gadre et al. 2024) studies fit it."""
    fix: tuple[str, ...] = field(default=(), metadata=flag(metavar="NAME=VALUE"))
    """Hold parameters of the joint fit at given values (--fix E=1.69; repeatable or
    comma-separated; NAME one of E, A, alpha or α, B, beta or β); a line's Huber fit holds E
    only (its exponent is its own)."""
    huber_delta: float = field(default=HUBER_DELTA, metadata=flag(metavar="DELTA"))
    """δ of the Huber loss on log residuals (--huber-delta); 1e-3 is Chinchilla's."""
    where: tuple[str, ...] = field(default=(), metadata=flag(metavar="COL=VALUE", commas=False))
    """Only the rows of a table, or the trials of a store, where column COL equals VALUE
    (--where, repeatable: one column repeated keeps any of its values, different columns must
    all hold)."""
    strict: bool = False
    """Refuse (exit 2) instead of warning where a column not declared varies within an (N, D)
    cell, or within a store's fit group (--strict)."""
    lines: str = field(default="D", metadata=flag(choices=LINES))
    """What a table's N lines hold fixed (--lines): D (tokens trained), or ratio (tokens per
    parameter D/N, as an over-training study's multipliers)."""

    reference: str | None = field(default=None, metadata=flag(metavar="VALUE"))
    """Compare every loss with this one across scale (--reference; a store's `loss`, a points
    table's --group column): the exponent test (table scaling_exponent_test), the parameter
    multiplier per N (scaling_multipliers), where seeds are paired the paired difference per size
    and its trend in ln N (scaling_paired_differences, scaling_paired_trend), and the loss-to-loss
    fits (scaling_loss_to_loss); None: no comparison. A loss split by --by loss,alpha is named
    "del, alpha=0.2"."""
    compare_at: tuple[float, ...] | None = field(
        default=None, metadata=flag("--at", metavar="N,N,...", parse=sizes)
    )
    """Planned sizes N at which the multipliers against --reference are given too (--at), beside
    each loss's own sizes."""

    def __post_init__(self) -> None:
        freeze_lists(
            self,
            (
                "metrics",
                "axes",
                "by",
                "statuses",
                "models",
                "budgets",
                "fix",
                "where",
                "compare_at",
            ),
        )
        check_planned(self.compare_at, self.reference)
        bad_budgets = [b for b in self.budgets or () if not b > 0]
        if bad_budgets:
            raise ResultsError(f"--budgets must be positive FLOPs, got {bad_budgets}")
        check_level(self.level)
        if self.params not in PARAM_METRICS:
            raise ResultsError(
                f"--params must be one of {', '.join(PARAM_METRICS)}, got {self.params!r}"
            )
        if self.aggregate not in AGGREGATES:
            raise ResultsError(
                f"--aggregate must be one of {', '.join(AGGREGATES)}: {self.aggregate!r}"
            )
        if self.lr not in LR_MODES:
            raise ResultsError(f"--lr must be one of {', '.join(LR_MODES)}, got {self.lr!r}")
        bad_axes = [a for a in self.axes or () if a not in AXES]
        if bad_axes:
            raise ResultsError(f"unknown axis {', '.join(bad_axes)}; axes: {', '.join(AXES)}")
        if self.n_boot < 1:
            raise ResultsError(f"--bootstrap must be >= 1, got {self.n_boot}")
        if self.n_boot_fit is not None and self.n_boot_fit < 1:
            raise ResultsError(f"--fit-bootstrap must be >= 1, got {self.n_boot_fit}")
        if self.lines not in LINES:
            raise ResultsError(f"--lines must be one of {', '.join(LINES)}, got {self.lines!r}")
        parse_where(self.where)
        try:
            parse_fix(self.fix)
        except ValueError as err:
            raise ResultsError(str(err)) from None

    @property
    def form(self) -> JointForm:
        """The joint fit's form (forms.JointForm) from --tie-exponents, --fix, --huber-delta."""
        # Made when asked (cheap), not stored: a frozen dataclass has no field for it.
        return JointForm(self.tie_exponents, parse_fix(self.fix), self.huber_delta)

    def as_json(self, store: bool = True) -> dict[str, Any]:
        """The settings a result's JSON reports (the numbers' provenance); a points table's
        (`store` False) leaves out the options that choose a store's trials."""
        out = {
            "level": self.level,
            "bootstrap": self.n_boot,
            "seed": self.seed,
            "robust": self.robust,
            "fit_bootstrap": self.n_boot_fit,
            "form": self.form.label(),
            "tie_exponents": self.tie_exponents,
            "fix": dict(self.form.fixed),
            "huber_delta": self.huber_delta,
            "where": parse_where(self.where),
            "strict": self.strict,
        }
        if self.reference is not None:
            out |= {"reference": self.reference, "at": list(self.compare_at or ())}
        if store:
            out |= {
                "aggregate": self.aggregate,
                "params": self.params,
                "value": self.value.label,
                "lr": self.lr,
                "gate_only": self.gate_only,
                "pool_experiments": self.pool_experiments,
                "models": list(self.models) if self.models is not None else None,
            }
        else:
            out["lines"] = self.lines
        return out | ({"budgets": list(self.budgets)} if self.budgets is not None else {})

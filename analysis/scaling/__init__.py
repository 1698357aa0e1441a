"""The scaling command (`python -m analysis scaling`): for CE and its decomposition (error entropy
EE, self-alignment SA, log-confidence) or any metric, fitted against parameters N, tokens seen D
or compute C ≈ 6·N·D, per fit group (loss × dataset, plus experiment or --by columns where they
vary):

- the plain power law log M = c + a·log N (CI for a: OLS t-interval below 10 points, studentized
  bootstrap from 10), R², the F-test of a = 0 and AICc against a constant model, so "does this
  metric follow a power law at all" is decided by the numbers;
- the saturating form M = E + A·N^a (irreducible part E), with Wald intervals, AICc and the
  F-test against the plain form;
- for each form the leave-one-size-out error and the extrapolation check (fit without the
  largest size, predict it);
- the verdict CE vs EE per split: R² of both, the R² difference with a bootstrap interval over
  seeds, and the prediction errors side by side;
- EE's share of CE per size, and its trend (slope per decade of N with a t-interval).

- every fit's held-out check (without its largest size, predicting it with a prediction
  interval), and the N lines' exponents with N counted without and with embeddings;
- with --reference, every loss against the reference across scale: the same-exponent test, the
  parameter multiplier per N, the paired differences' trend in ln N and loss-to-loss fits;
- with --robust and a D axis, or for a points table (`scaling_points`: any CSV or Parquet of
  (N, D, metric) rows), the joint L(N, D) with bootstrap intervals and the compute-optimal
  allocation N*(C), D*(C); `predict` gives a planned run's value from the same fits.

Points are per-size means over seeds by default (`aggregate="trial"`: every trial a point), and
the best learning rate per size is picked when the learning rate varies (lr.py).

Modules, in the order the command uses them: settings (the options), points (the values per
trial and size, the lines and frontiers), lr (the learning rate per size), powerlaw and
saturating (the two forms), checks (AICc, F-test, leave-one-size-out and extrapolation errors),
fits (both forms with their checks, as records), bootstrap (the R² difference's interval),
compare (CE against EE), share (EE's share of CE), rules (every decision rule), tables (every
table from its records), command (the whole run); then table_points and from_table (a table's
rows and the command on them), cells, joint, optimal, holdout and joint_fits (the joint form,
its allocation and the held-out checks), param_counts (N both ways), predict (`predict`); and
for losses compared across scale (--reference) loss_comparison, with group_lines (the plain laws
of two groups, separate and with the exponent shared), exponent_test, multipliers,
saturating_multipliers, paired_trend, loss_to_loss and comparison_tables.
"""

from analysis.scaling.command import scaling
from analysis.scaling.from_table import scaling_points
from analysis.scaling.predict import PredictSettings, predict
from analysis.scaling.settings import ScalingSettings
from analysis.scaling.table_points import TableColumns

__all__ = [
    "PredictSettings",
    "ScalingSettings",
    "TableColumns",
    "predict",
    "scaling",
    "scaling_points",
]

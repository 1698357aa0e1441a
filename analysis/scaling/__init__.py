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

Points are per-size means over seeds by default (`aggregate="trial"`: every trial a point), and
the best learning rate per size is picked when the learning rate varies (lr.py).

Modules, in the order the command uses them: settings (the options), points (the values per
trial and size, the lines and frontiers), lr (the learning rate per size), powerlaw and
saturating (the two forms), checks (AICc, F-test, leave-one-size-out and extrapolation errors),
fits (both forms with their checks, as records), bootstrap (the R² difference's interval),
compare (CE against EE), share (EE's share of CE), rules (every decision rule), tables (every
table from its records), command (the whole run).
"""

from analysis.scaling.command import scaling
from analysis.scaling.settings import ScalingSettings

__all__ = ["ScalingSettings", "scaling"]

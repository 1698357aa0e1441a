"""numsweep analysis: tables, fits and a report from a sweep's Parquet results store.

Commands (`python -m analysis <command> RESULTS`): `ablation` (per-loss held-out metrics, mean ±
95% CI over seeds, paired t-tests against mle), `entropy` (digit entropy and accuracy over
training), `scaling` (power-law fits against parameter count), `search` (best trials, parameter
importance, Pareto front) and `report` (all of them as a static HTML page with figures).

Only polars, numpy, the standard library and (for figures) matplotlib are used here: the package
never imports torch, ray, deepspeed or optuna, so results can be analysed on any machine.
"""

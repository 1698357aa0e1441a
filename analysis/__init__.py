"""numsweep analysis: tables, fits and a report from a sweep's Parquet results store.

Commands (`python -m analysis <command> RESULTS`): `ablation` (per-loss held-out metrics in
panels per split, mean ± CI over seeds, paired t-tests against mle with Holm-corrected p-values),
`entropy` (digit entropy and accuracy over training), `scaling` (plain and saturating power laws
against parameters, tokens seen or compute, the CE-vs-EE verdict, EE's share of CE), `search`
(best trials, parameter importance, Pareto front), `power` (seeds needed from a pilot: MDE,
t-test and TOST plans), `plateau` (arms still learning at the end) and `report` (a summary,
then all of them, as a static HTML page with figures). Every command also prints JSON
(`--format json`).

polars reads the store; scipy does the statistics (scipy.stats) and the saturating fit
(scipy.optimize); matplotlib draws the figures. The package never imports torch, ray, deepspeed
or optuna, so results can be analysed on any machine.
"""

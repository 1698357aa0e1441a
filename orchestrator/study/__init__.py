"""`numsweep study`: from a study file to a registered, group-sequential verdict (docs/studies.md).

Modules, in the order a study goes through them:

- study_file: the study file's schema (pydantic, extra keys refused) and `load_study`;
- stages: the pilot's and the main stage's sweeps, made from the study's sweep, and each look's
  trials (no Ray);
- launch: running a stage's trials through the sweep driver, blind (no end-of-sweep summary);
- pilot: the pilot's spread of the paired differences and cost per seed;
- sizing: the main stage's design from the pilot (analysis.sequential.plan), priced in hours,
  and the budget check;
- registration: the record locked before the first main-stage trial, and the changed-file check;
- looks: the main stage look by look, judged by analysis.sequential.replay;
- runner: `study run`, the stages in order, resumable;
- status, report: `study status` (blind) and `study report` / `study replay`;
- records_dir, errors: where the study's records live in the store; the refusal (exit 2);
- commands: the subcommands on the CLI.
"""

"""The Ray Train + DeepSpeed worker: one trial's fine-tune on every rank, from its plain-JSON
`TrialConfig` to the reports and checkpoints Tune receives.

`entry` is what Ray Train imports (light: no torch until a worker runs it); `loop` is the worker
loop, read top to bottom; `trial_setup` builds what it trains with (`trial_inputs`: tokenizer,
model, data; the loss; the DeepSpeed engine from `deepspeed_config`, with `precision`,
`schedule`, `compile_step`); `checkpoint` restores, reports and saves (`report_protocol`: what the
driver and the worker agree on); `evaluation` scores held-out splits and generations;
`step_stats`, `startup` and `trial_cost` are what a report measures; `data_order` says which
examples each rank sees at each step; `deepspeed_ops` builds DeepSpeed's CPU ops at set-up.

It stands on the torch library (`trainables.losses`, `metrics`, `data`, `models`, `config`) and on
the records contract (`records.metric_names`); every use of a library's private API goes through
`compat`. The orchestrator stands on it.
"""

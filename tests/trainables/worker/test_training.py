"""The worker loop under real Ray Train + DeepSpeed (CPU, gloo), without Tune: global-batch
normalisation makes data parallelism equal to gradient accumulation, ZeRO-3 (weights partitioned
at construction) trains like ZeRO-2, and EMO's cost embedding stays frozen. The runs of `del`
report the manipulation check at every evaluation (`train/aux_grad_*`): the same numbers one
worker or two, ZeRO 0, 2 or 3, eager or compiled, and the value of a separate computation; and
it changes nothing of the training (the plain-loop comparisons run without it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

import orchestrator  # noqa: F401  (Ray on the loopback interface)

BASE = {
    "model": {"preset": "tiny"},
    "data": {"modules": ["arithmetic__add_or_sub"], "n_train": 96, "n_test": 24, "max_length": 48},
    "train": {"steps": 6, "micro_batch_size": 8, "lr": 3e-3, "warmup_steps": 1},
    "eval": {"every": 6, "batch_size": 12, "generate_examples": 4, "max_new_tokens": 4},
    "loss": {"name": "del", "params": {"alpha": 0.5}},
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    """One tokenizer and data cache for the module's runs (each would otherwise build its own)."""
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def ray_local():
    import ray

    from orchestrator.run.local_ray import connect

    connect(num_cpus=2)
    yield
    ray.shutdown()


CHECK_KEYS = (
    "train/aux_grad_ratio",
    "train/aux_grad_cos",
    "train/aux_grad_turn_deg",
    "train/aux_grad_sign_flips",
)
"""The manipulation check's values (not its seconds)."""

# Five steps of two micro-batches of 8, every step reported: the config of the runs that compare
# step by step (the plain loop, data parallelism, the compiled step). With a launch time, each
# run reports its start-up timeline.
STEPPED = {
    **BASE,
    "train": {**BASE["train"], "steps": 5, "grad_accum": 2},
    "eval": {"every": 1, "batch_size": 12, "generate_examples": 0},
    "launched_at": time.time(),
}


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory, cache_dir, ray_local):
    """zero_stage -> (the reports, the run's folder) of STEPPED on one worker, run once for the
    module: the plain-loop, data-parallel and compile tests compare against the same run."""
    runs: dict[int, tuple[list[dict], Path]] = {}

    def get(zero_stage: int) -> tuple[list[dict], Path]:
        if zero_stage not in runs:
            tmp = tmp_path_factory.mktemp(f"one-worker-{zero_stage}")
            name = "stepped"
            reports = run(tmp, cache_dir, name, workers=1, config=STEPPED, zero_stage=zero_stage)
            runs[zero_stage] = reports, tmp / "ray" / name
        return runs[zero_stage]

    return get


def run(
    tmp_path, cache_dir: str, name: str, workers: int, config: dict | None = None, **train
) -> list[dict]:
    """Every report (rank 0's metrics) of one Ray Train run of the worker loop; its checkpoints
    are under tmp_path / "ray" / name."""
    import ray.train
    from ray.train.torch import TorchTrainer
    from ray.train.v2.api.callback import UserCallback

    from trainables.config import TrialConfig
    from trainables.worker.loop import train_loop_per_worker

    log = tmp_path / f"{name}.jsonl"

    class Keep(UserCallback):
        """Runs in Ray Train's controller process: appends each report to a file."""

        def after_report(self, run_context, metrics, checkpoint):
            with open(log, "a") as fh:
                fh.write(json.dumps(metrics[0]) + "\n")

    config = config or BASE
    config = {**config, "train": {**config["train"], **train}, "cache_dir": cache_dir}
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config=TrialConfig.model_validate(config).model_dump(mode="json"),
        scaling_config=ray.train.ScalingConfig(num_workers=workers),
        run_config=ray.train.RunConfig(
            name=name, storage_path=str(tmp_path / "ray"), callbacks=[Keep()]
        ),
    )
    final = trainer.fit().metrics
    reports = [json.loads(line) for line in log.read_text().splitlines()]
    assert reports[-1] == final
    return reports


@pytest.mark.slow
def test_data_parallel_equals_gradient_accumulation_and_zero3(tmp_path, cache_dir, one_worker):
    # Same global batch of 16 sequences per step, split three ways.
    accumulated, _ = one_worker(2)
    parallel = run(tmp_path, cache_dir, "dp", workers=2, config=STEPPED, grad_accum=1, zero_stage=2)
    zero3 = run(tmp_path, cache_dir, "zero3", workers=2, config=STEPPED, grad_accum=1, zero_stage=3)
    steps = [r["step"] for r in accumulated]
    assert (
        steps == [r["step"] for r in parallel] == [r["step"] for r in zero3] == [0, 1, 2, 3, 4, 5]
    )
    keys = ("train/loss", "train/ce", "train/aux", "train/tokens_seen", "eval/test/ce")
    for a, p, z in zip(accumulated[1:], parallel[1:], zero3[1:], strict=True):
        for key in (*keys, "eval/test/digit_entropy"):
            # Token means over the global batch: the same numbers up to float summation order.
            assert p[key] == pytest.approx(a[key], rel=1e-4), (a["step"], key)
            assert z[key] == pytest.approx(p[key], rel=1e-4), (a["step"], key)
    # The manipulation check sums the micro-batches' and the ranks' gradients: the global
    # batch's, whichever way it is split, also from ZeRO-3's partitioned weights.
    for a, p, z in zip(accumulated, parallel, zero3, strict=True):
        for key in CHECK_KEYS:
            assert p[key] == pytest.approx(a[key], rel=1e-3, abs=1e-4), (a["step"], key)
            assert z[key] == pytest.approx(p[key], rel=1e-3, abs=1e-4), (a["step"], key)
    assert parallel[-1]["eval/test/ce"] < 5.5  # it trained: ln(512) = 6.24 at initialisation
    # Tokens seen: every non-padding input token of the 5 global batches, counted here from the
    # examples' lengths in the data order every rank follows.
    from trainables.config import TrialConfig
    from trainables.worker.data_order import micro_batch_indices
    from trainables.worker.trial_inputs import load_splits, load_tokenizer

    cfg = TrialConfig.model_validate({**STEPPED, "cache_dir": str(tmp_path / "c")})
    train = load_splits(cfg, load_tokenizer(cfg.model, cfg.cache_dir)).train
    expected = sum(
        len(train[i]["input_ids"])
        for step in range(5)
        for micro in range(2)
        for i in micro_batch_indices(
            seed=cfg.seed,
            n_examples=len(train),
            step=step,
            micro=micro,
            rank=0,
            world_size=1,
            micro_batch_size=8,
            grad_accum=2,
        )
    )
    assert accumulated[-1]["train/tokens_seen"] == expected


@pytest.mark.slow
@pytest.mark.parametrize("zero_stage", [2, 0])
def test_a_numsweep_step_is_the_plain_pytorch_step(cache_dir, one_worker, zero_stage):
    """One Ray Train worker with a DeepSpeed engine (ZeRO-2, as in the studies; or no ZeRO, the
    demo's one-worker trials) and the plain single-process loop of `bench.plain_loop` (torch
    AdamW, clip_grad_norm_) take the same steps: the same loss at every step, the same gradient
    norm (at stage 0 the worker clips and measures it: DeepSpeed does not keep it), the same
    weights at the end."""
    from bench import plain_loop
    from trainables.config import TrialConfig
    from trainables.worker.trial_inputs import load_model_and_tokenizer

    reports, folder = one_worker(zero_stage)
    config = {
        **STEPPED,
        "train": {**STEPPED["train"], "zero_stage": zero_stage},
        "cache_dir": cache_dir,
    }
    plain = plain_loop.train(config)
    assert [r["step"] for r in reports] == [0, 1, 2, 3, 4, 5]
    # The run checked its DEL term at every report; the plain loop never does, so the equal
    # losses, norms and weights below say the check left the training as it was.
    assert all(0 < r["train/aux_grad_ratio"] < 10 and r["perf/aux_grad_s"] > 0 for r in reports)
    trained = reports[1:]  # eval.every=1: each report holds one step's loss and norm
    # Same forward and backward: the loss is the same number; DeepSpeed sums the norm in float64.
    assert [r["train/loss"] for r in trained] == pytest.approx(plain.loss, rel=1e-6)
    assert [r["train/grad_norm"] for r in trained] == pytest.approx(plain.grad_norm, rel=1e-5)
    (checkpoint,) = folder.glob("checkpoint_*/numsweep")
    weights = torch.load(checkpoint / "mp_rank_00_model_states.pt", weights_only=False)["module"]
    assert weights.keys() == plain.state.keys()
    for key, value in plain.state.items():
        # DeepSpeed's fused AdamW and torch's differ by rounding only (seen: 1.2e-7 after 6 steps).
        torch.testing.assert_close(weights[key], value, rtol=0, atol=1e-6, msg=key)
    # ... and the steps moved them: this compares trained weights, not two initialisations.
    initial, _ = load_model_and_tokenizer(
        TrialConfig.model_validate(config).model, config["cache_dir"], seed=0
    )
    moved = max(float((weights[k] - v).abs().max()) for k, v in initial.state_dict().items())
    assert moved > 1e-3


@pytest.mark.slow
def test_tiny_fine_tune_improves_held_out_digit_accuracy(tmp_path, cache_dir, ray_local):
    config = {
        "model": {"preset": "tiny"},
        "data": {
            "modules": ["arithmetic__add_or_sub", "numbers__place_value", "numbers__round_number"],
            "n_train": 2000,
            "n_test": 128,
            "max_length": 64,
        },
        "train": {"steps": 400, "micro_batch_size": 16, "lr": 3e-3, "warmup_steps": 10},
        "eval": {"every": 200, "generate_examples": 0},
        "loss": {"name": "mle"},
    }
    reports = run(tmp_path, cache_dir, "fine-tune", workers=1, config=config)
    assert [r["step"] for r in reports] == [0, 200, 400]
    # mle has no auxiliary term: no manipulation check
    assert not [k for r in reports for k in r if k.startswith("train/aux_grad")]
    start, end = reports[0], reports[-1]
    # Seen here: 0.19 -> 0.26 over 128 held-out problems (~770 digit positions); chance is 0.1.
    assert end["eval/test/digit_acc"] >= start["eval/test/digit_acc"] + 0.04
    assert end["eval/test/ce"] < 0.4 * start["eval/test/ce"]


@pytest.mark.slow
def test_a_compiled_step_matches_the_eager_step_and_repeats_exactly(
    tmp_path, cache_dir, one_worker
):
    """`train.compile: on` (engine.compile of the model, torch.compile of the digit loss `del`,
    padded batches): the same losses, norms and held-out CE as the eager step up to float
    rounding; a second compiled run (its graphs now from the inductor cache under cache_dir)
    gives the very same numbers; the reports say what ran and how long the first compile took."""
    # ZeRO stage 0, as the demo's one-worker trials run.
    eager, _ = one_worker(0)
    compiled = run(tmp_path, cache_dir, "compiled", 1, STEPPED, compile="on", zero_stage=0)
    again = run(tmp_path, cache_dir, "compiled-again", 1, STEPPED, compile="on", zero_stage=0)
    assert [r["step"] for r in compiled] == [r["step"] for r in eager] == [0, 1, 2, 3, 4, 5]
    assert eager[0]["perf/compiled"] == 0 and compiled[0]["perf/compiled"] == 1
    assert eager[0]["perf/bf16"] == compiled[0]["perf/bf16"] == 0  # tiny: fp32 under auto
    assert compiled[1]["perf/startup/compile_s"] > 0
    assert "perf/startup/launched_at" in eager[1] and "perf/startup/compile_s" not in eager[1]
    trained = ("train/loss", "train/ce", "train/aux", "train/grad_norm", "eval/test/ce")
    for key in (*trained, *CHECK_KEYS):
        for e, c, a in zip(eager[1:], compiled[1:], again[1:], strict=True):
            assert c[key] == pytest.approx(e[key], rel=1e-4), key
            assert a[key] == c[key], key
    assert any(Path(cache_dir, "inductor").iterdir())  # the persistent compile cache


@pytest.mark.slow
def test_the_reported_check_is_a_separate_computations_value(cache_dir, one_worker):
    """Step 0's reported check (ZeRO stage 0, the initial weights, the global batch of the first
    update: two micro-batches of 8) against the same model and batch here, the two gradients by
    two plain backward passes: ∇CE from `mle`, ∇(α·aux) = ∇(del) − ∇(mle)."""
    from trainables.config import TrialConfig
    from trainables.data.batching import collate
    from trainables.losses import build_loss
    from trainables.worker.data_order import micro_batch_indices
    from trainables.worker.trial_inputs import (
        check_tokenizer_for_loss,
        load_model_and_tokenizer,
        load_splits,
    )

    reports, _ = one_worker(0)
    cfg = TrialConfig.model_validate({**STEPPED, "cache_dir": cache_dir})
    model, tokenizer = load_model_and_tokenizer(cfg.model, cache_dir, seed=cfg.seed)
    train = load_splits(cfg, tokenizer).train
    order = {"seed": cfg.seed, "n_examples": len(train), "step": 0, "rank": 0, "world_size": 1}
    indices = [
        i
        for micro in range(2)
        for i in micro_batch_indices(**order, micro=micro, micro_batch_size=8, grad_accum=2)
    ]
    batch = collate([train[i] for i in indices], tokenizer.pad_token_id)  # the 16 as one batch
    vocab = check_tokenizer_for_loss(tokenizer, "del")

    def gradient(loss: str, **params) -> torch.Tensor:
        model.zero_grad()
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        build_loss(loss, vocab, **params)(logits, batch["labels"]).loss.backward()
        return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double()

    g_ce = gradient("mle")
    g_aux = gradient("del", **cfg.loss.params) - g_ce
    ratio = float(g_aux.norm() / g_ce.norm())
    cos = float(g_ce @ g_aux / (g_ce.norm() * g_aux.norm()))
    assert reports[0]["step"] == 0
    assert reports[0]["train/aux_grad_ratio"] == pytest.approx(ratio, rel=1e-3)
    assert reports[0]["train/aux_grad_cos"] == pytest.approx(cos, rel=1e-3, abs=1e-4)


def test_emo_cost_embedding_is_a_frozen_copy():
    from trainables.losses import LOSSES
    from trainables.models.presets import build_model

    model = build_model("tiny", 300, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    # The worker calls every loss's hook; only EMO takes something from the model.
    assert all(LOSSES[n].model_inputs(model) == {} for n in LOSSES if n != "emo")
    cost = LOSSES["emo"].model_inputs(model)["cost_embedding"]
    head = model.get_output_embeddings().weight
    assert torch.equal(cost, head) and not cost.requires_grad
    assert cost.data_ptr() != head.data_ptr()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(
        input_ids=torch.tensor([[1, 5, 7, 9]]), labels=torch.tensor([[1, 5, 7, 9]])
    ).loss.backward()
    optimizer.step()
    assert not torch.equal(cost, head)  # the model moved, the cost did not

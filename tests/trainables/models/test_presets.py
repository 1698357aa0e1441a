"""Tests for trainables.models.presets: from-scratch LLaMA presets, init and parameter counts."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaForCausalLM

from trainables.data import mathgen
from trainables.data.batching import collate, encode_records
from trainables.models.presets import (
    PRESETS,
    PresetSpec,
    build_model,
    count_parameters,
    llama_config,
)
from trainables.models.tokenizer import build_digit_tokenizer

VOCAB = 500
SPECIAL = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def non_embedding_by_hand(spec: PresetSpec) -> int:
    h, i, layers = spec.hidden_size, spec.intermediate_size, spec.num_layers
    kv_width = spec.num_kv_heads * (h // spec.num_heads)
    per_layer = (
        h * h  # q_proj
        + h * kv_width  # k_proj
        + h * kv_width  # v_proj
        + h * h  # o_proj
        + 3 * h * i  # gate_proj, up_proj, down_proj
        + 2 * h  # input_layernorm, post_attention_layernorm
    )
    return layers * per_layer + h  # + the final RMSNorm


def test_tiny_count_written_out() -> None:
    # tiny: h=48, 2 layers, 4 heads of 12, 2 kv heads (k/v width 24), MLP 128.
    per_layer = 48 * 48 + 48 * 24 + 48 * 24 + 48 * 48 + 3 * 48 * 128 + 2 * 48  # = 25_440
    assert per_layer == 25_440
    assert 2 * per_layer + 48 == 50_928
    model = build_model("tiny", VOCAB, 0, **SPECIAL)
    # Tied head: the embedding matrix VOCAB x 48 is counted once, in total only.
    assert count_parameters(model) == {"total": 50_928 + VOCAB * 48, "non_embedding": 50_928}


@pytest.mark.parametrize("preset", list(PRESETS))
def test_counts_match_the_formula(preset: str) -> None:
    spec = PRESETS[preset]
    model = build_model(preset, VOCAB, 0, **SPECIAL)
    expected = non_embedding_by_hand(spec)
    counts = count_parameters(model)
    assert counts["non_embedding"] == expected
    assert counts["total"] == expected + VOCAB * spec.hidden_size
    # Cross-check against torch's own listing (which de-duplicates the tied matrix).
    assert counts["total"] == sum(p.numel() for p in model.parameters())


def test_untied_head_is_excluded_too() -> None:
    config = llama_config("tiny", VOCAB, **SPECIAL)
    config.tie_word_embeddings = False
    model = LlamaForCausalLM(config)
    assert model.lm_head.weight is not model.model.embed_tokens.weight
    counts = count_parameters(model)
    assert counts["non_embedding"] == non_embedding_by_hand(PRESETS["tiny"])
    assert counts["total"] == counts["non_embedding"] + 2 * VOCAB * 48


def test_presets_span_two_orders_of_magnitude() -> None:
    sizes = sorted(non_embedding_by_hand(spec) for spec in PRESETS.values())
    assert sizes[-1] / sizes[0] >= 100
    assert "tiny" in PRESETS and non_embedding_by_hand(PRESETS["tiny"]) < 100_000
    assert sizes[-1] >= 10_000_000


def test_same_seed_same_weights_and_caller_rng_untouched() -> None:
    torch.manual_seed(77)
    expected_next = torch.rand(3)
    torch.manual_seed(77)
    first = build_model("tiny", VOCAB, 5, **SPECIAL).state_dict()
    torch.testing.assert_close(torch.rand(3), expected_next, rtol=0, atol=0)
    second = build_model("tiny", VOCAB, 5, **SPECIAL).state_dict()
    other = build_model("tiny", VOCAB, 6, **SPECIAL).state_dict()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)
    assert not torch.equal(
        first["model.layers.0.mlp.up_proj.weight"], other["model.layers.0.mlp.up_proj.weight"]
    )


def test_config_carries_the_tokens_and_dimensions() -> None:
    model = build_model("xs", VOCAB, 0, pad_token_id=3, bos_token_id=4, eos_token_id=5)
    config = model.config
    spec = PRESETS["xs"]
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (
        VOCAB,
        spec.hidden_size,
        spec.num_layers,
    )
    assert (config.num_attention_heads, config.num_key_value_heads) == (
        spec.num_heads,
        spec.num_kv_heads,
    )
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id) == (3, 4, 5)
    assert model.lm_head.weight is model.model.embed_tokens.weight


@pytest.mark.parametrize(
    ("preset", "vocab", "special", "error", "match"),
    [
        ("huge", VOCAB, SPECIAL, ValueError, "huge"),
        ("tiny", 0, SPECIAL, ValueError, "vocab_size"),
        ("tiny", VOCAB, {**SPECIAL, "eos_token_id": VOCAB}, ValueError, "eos_token_id"),
    ],
)
def test_bad_arguments(preset, vocab, special, error, match) -> None:
    with pytest.raises(error, match=match):
        build_model(preset, vocab, 0, **special)


def test_preset_spec_validates_heads() -> None:
    with pytest.raises(ValueError, match="num_heads"):
        PresetSpec(hidden_size=50, num_layers=1, num_heads=4, num_kv_heads=2, intermediate_size=8)
    with pytest.raises(ValueError, match="num_kv_heads"):
        PresetSpec(hidden_size=48, num_layers=1, num_heads=4, num_kv_heads=3, intermediate_size=8)


def test_tiny_model_learns_a_batch_of_real_problems(pytestconfig: pytest.Config) -> None:
    # A real training loop in miniature: the loss on one batch of generated problems must fall
    # well below its starting value (about ln(vocab) for a fresh model).
    tokenizer = build_digit_tokenizer(512, pytestconfig.cache.mkdir("numsweep-tokenizers"))
    records = mathgen.generate(["arithmetic__add_or_sub", "numbers__place_value"], 8, "train", 0)
    batch = collate(encode_records(tokenizer, records, max_length=64), tokenizer.pad_token_id)
    model = build_model(
        "tiny",
        len(tokenizer),
        0,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(40):
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(torch.log(torch.tensor(len(tokenizer))).item(), rel=0.1)
    assert losses[-1] < 0.5 * losses[0]


def test_presets_are_one_shape_family_in_size_order() -> None:
    # Scaling sweeps rely on it: depth and width grow together, each size a few times the last.
    specs = list(PRESETS.values())
    sizes = [non_embedding_by_hand(spec) for spec in specs]
    assert sizes == sorted(sizes)
    for smaller, larger, n_small, n_large in zip(specs, specs[1:], sizes, sizes[1:], strict=False):
        assert larger.hidden_size > smaller.hidden_size
        assert larger.num_layers >= smaller.num_layers
        assert 1.5 < n_large / n_small < 5
        assert 2.5 <= larger.intermediate_size / larger.hidden_size <= 2.8

"""From-scratch LLaMA-style model sizes (presets) and their construction and parameter counts.

Non-embedding parameters of a `LlamaForCausalLM` with hidden size h, L layers, n_kv key/value
heads of size d (= h / n_heads) and MLP width i:

    L * (2*h*h            # q_proj, o_proj
         + 2*h*n_kv*d     # k_proj, v_proj (grouped-query attention when n_kv < n_heads)
         + 3*h*i          # gate_proj, up_proj, down_proj (SwiGLU)
         + 2*h)           # input_layernorm, post_attention_layernorm (RMSNorm weights)
    + h                   # final norm

(no biases). The presets span about 2.9k to 29M of these, almost four orders of magnitude. All
presets tie the output head to the input embedding (as small LLaMA-family models such as
SmolLM2 do), which keeps the embedding share of tiny models from dwarfing the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import LlamaConfig, LlamaForCausalLM


@dataclass(frozen=True)
class PresetSpec:
    """The dimensions of one preset; vocabulary size and special token ids come from the
    tokenizer at build time."""

    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    max_position_embeddings: int = 1024
    tie_word_embeddings: bool = True
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} is not divisible by num_heads={self.num_heads}"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads={self.num_heads} is not divisible by num_kv_heads={self.num_kv_heads}"
            )

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


PRESETS: dict[str, PresetSpec] = {
    # One shape family, depth and width growing together (layers 1..10, width 32..512, MLP width
    # ~8/3 of the hidden size), ordered by size. The `hWlL` names are the sizes added between
    # the named ones so that scaling sweeps get a size per ~2.5x (studies/scaling_cpu).
    # ~2.9k non-embedding parameters: below h32l1 by 4x, so that a scaling family without the
    # slow large sizes still spans 2.5 decades (studies/scaling_code)
    "h16l1": PresetSpec(
        hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=44
    ),
    # ~11.6k
    "h32l1": PresetSpec(
        hidden_size=32, num_layers=1, num_heads=4, num_kv_heads=2, intermediate_size=88
    ),
    # ~51k: the test / demo model (a CPU step on 8 x 64 tokens is ms).
    "tiny": PresetSpec(
        hidden_size=48, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128
    ),
    # ~139k
    "h64l3": PresetSpec(
        hidden_size=64, num_layers=3, num_heads=4, num_kv_heads=2, intermediate_size=176
    ),
    # ~406k
    "xs": PresetSpec(
        hidden_size=96, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=256
    ),
    # ~923k
    "h128l5": PresetSpec(
        hidden_size=128, num_layers=5, num_heads=4, num_kv_heads=2, intermediate_size=352
    ),
    # ~2.4M
    "s": PresetSpec(
        hidden_size=192, num_layers=6, num_heads=6, num_kv_heads=2, intermediate_size=512
    ),
    # ~5.1M
    "h256l7": PresetSpec(
        hidden_size=256, num_layers=7, num_heads=8, num_kv_heads=4, intermediate_size=688
    ),
    # ~9.1M
    "m": PresetSpec(
        hidden_size=320, num_layers=8, num_heads=8, num_kv_heads=4, intermediate_size=864
    ),
    # ~29M
    "l": PresetSpec(
        hidden_size=512, num_layers=10, num_heads=8, num_kv_heads=4, intermediate_size=1376
    ),
}


def check_preset(preset: str) -> None:
    """ValueError naming `preset` and the presets there are, unless it is one of them."""
    if preset not in PRESETS:
        raise ValueError(f"unknown model preset {preset!r}; presets: {', '.join(PRESETS)}")


def llama_config(
    preset: str,
    vocab_size: int,
    *,
    pad_token_id: int | None,
    bos_token_id: int | None,
    eos_token_id: int | None,
) -> LlamaConfig:
    """The `LlamaConfig` of ``preset`` for a tokenizer with ``vocab_size`` tokens."""
    check_preset(preset)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
    for name, token_id in (
        ("pad_token_id", pad_token_id),
        ("bos_token_id", bos_token_id),
        ("eos_token_id", eos_token_id),
    ):
        if token_id is not None and not 0 <= token_id < vocab_size:
            raise ValueError(f"{name}={token_id} is outside the vocabulary [0, {vocab_size})")
    # Imported here: LlamaConfig pulls in transformers' activations and DTensor sharding code
    # (0.5 s of the driver's start-up), and the driver only reads the presets.
    from transformers import LlamaConfig

    spec = PRESETS[preset]
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=spec.tie_word_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
        attention_bias=False,
        mlp_bias=False,
        pad_token_id=pad_token_id,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
    )


def build_model(
    preset: str,
    vocab_size: int,
    seed: int,
    *,
    pad_token_id: int | None,
    bos_token_id: int | None,
    eos_token_id: int | None,
) -> LlamaForCausalLM:
    """A freshly initialised ``preset`` model; the same seed gives bit-identical weights. The
    caller's torch RNG state is left untouched."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    config = llama_config(
        preset,
        vocab_size,
        pad_token_id=pad_token_id,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
    )
    # Imported here for the same reason: transformers' modelling code (torch._dynamo) takes
    # 2-3 s to import.
    from transformers import LlamaForCausalLM

    # Initialisation draws from torch's global CPU generator: seed it inside a fork so the
    # caller's RNG stream continues as if nothing happened.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model


def count_parameters(model: torch.nn.Module) -> dict[str, int]:
    """``total``: every distinct parameter tensor's size (a tied embedding/head matrix counts once);
    ``non_embedding``: ``total`` minus the input embedding and, when it is not tied to it, the
    output head."""
    distinct = {id(parameter): parameter for parameter in model.parameters()}
    # A ZeRO-3 partitioned parameter is an empty placeholder; DeepSpeed keeps its size.
    sizes = {pid: getattr(p, "ds_numel", p.numel()) for pid, p in distinct.items()}
    total = sum(sizes.values())
    embedding_ids = {id(model.get_input_embeddings().weight)}
    head = model.get_output_embeddings()
    if head is not None:
        # Tied: the head's weight *is* the embedding's, already in the set.
        embedding_ids.add(id(head.weight))
    embedding = sum(sizes[pid] for pid in embedding_ids if pid in distinct)
    return {"total": total, "non_embedding": total - embedding}

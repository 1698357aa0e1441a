"""orchestrator.sweep.yaml_source and the sweep file's refusals of issue 60, through the real
command line (`numsweep sweep --dry-run`, no Ray started): a key written twice and a non-finite
number each exit 2 naming the key (and for a duplicate both lines), with nothing written.
Before, PyYAML kept a duplicate's last value silently and `lr: .inf` passed `gt=0`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator.cli import main
from orchestrator.sweep.yaml_source import DuplicateKeyError, load_yaml

FILES = Path(__file__).parent / "sweep_files"
ROOT = Path(__file__).parents[2]


def dry_run(tmp_path: Path, path: Path, *overrides: str) -> int:
    return main(["sweep", str(path), "--dry-run", "--results", str(tmp_path / "r"), *overrides])


@pytest.mark.parametrize(
    ("name", "key", "lines"),
    [("duplicate_resources.yaml", "resources", (3, 10)), ("duplicate_nested.yaml", "lr", (6, 8))],
)
def test_a_key_written_twice_exits_2_naming_it_and_both_lines(tmp_path, capsys, name, key, lines):
    assert dry_run(tmp_path, FILES / name) == 2
    err = capsys.readouterr().err
    assert f"{FILES / name}: key '{key}' is written twice" in err
    assert f"(line {lines[0]} and line {lines[1]})" in err
    assert not (tmp_path / "r").exists()


def test_plain_safe_load_keeps_the_last_value_silently():
    """The behaviour the loader replaces: the first `resources` vanished."""
    text = (FILES / "duplicate_resources.yaml").read_text()
    assert yaml.safe_load(text)["resources"] == {"workers_per_trial": 1, "cpus_per_worker": 2}
    with pytest.raises(DuplicateKeyError):
        load_yaml(text)


def test_merge_keys_may_be_overridden_and_equal_text_elsewhere_is_no_duplicate():
    text = "base: &b {lr: 1, steps: 2}\nrun:\n  <<: *b\n  lr: 3\nother: {lr: 1}\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml(text)["run"] == {"lr": 3, "steps": 2}


def test_a_duplicate_inside_a_list_item_is_found():
    with pytest.raises(DuplicateKeyError, match=r"'loss' .* \(line 2 and line 2\)"):
        load_yaml("enqueue:\n  - {loss: mle, loss: del}\n")


def test_every_committed_sweep_and_study_file_has_unique_keys():
    files = [
        p for folder in ("orchestrator/configs", "studies") for p in (ROOT / folder).rglob("*.yaml")
    ]
    assert len(files) > 10
    for path in files:
        load_yaml(path.read_text())  # raises on a duplicate


def test_non_finite_numbers_in_the_file_exit_2_naming_every_key(tmp_path, capsys):
    assert dry_run(tmp_path, FILES / "non_finite.yaml") == 2
    err = capsys.readouterr().err
    keys = "trial.train.lr, search.space.del.alpha.high, search.enqueue[0].alpha"
    assert f"{keys}: not a finite number" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("train.lr=.inf", "trial.train.lr"),
        ("resources.placement_timeout_s=.inf", "resources.placement_timeout_s"),
        ("early_stopping={reduction_factor: .nan}", "early_stopping.reduction_factor"),
        ("trial.train.weight_decay=-.inf", "trial.train.weight_decay"),
    ],
)
def test_non_finite_overrides_exit_2_naming_the_key(tmp_path, capsys, override, key):
    """Each of these fields has only a bound (gt=0, ge=0, gt=1), which .inf or .nan passed."""
    assert dry_run(tmp_path, ROOT / "orchestrator/configs/demo.yaml", override) == 2
    assert f"{key}: not a finite number" in capsys.readouterr().err


def test_the_schema_itself_refuses_non_finite_values():
    """Validation without the loader (a manifest's stored config, say) refuses them as well."""
    from pydantic import ValidationError

    from orchestrator.sweep.sweep_file import SweepConfig

    with pytest.raises(ValidationError, match="finite number"):
        SweepConfig.model_validate({"trial": {"train": {"lr": float("inf")}}})
    with pytest.raises(ValidationError, match="finite number"):
        SweepConfig.model_validate({"resources": {"cpus_per_worker": float("nan")}})

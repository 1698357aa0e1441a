"""The losses' parameter models are the one source of their parameters: what the model says
(defaults, allowed ranges, docs) is what validation, the Optuna space, the trials table, `numsweep
status` and the docs (README.md, docs/results-store.md) say. A loss defined here and registered
for one test shows that adding a loss needs its file and one registry line, and nothing else."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch
import yaml
from pydantic import Field
from ray.tune.experiment import Trial

from orchestrator.run.parquet_sink import ParquetSink
from orchestrator.status import experiment_status
from orchestrator.sweep.search_space import define_by_run, trial_config
from orchestrator.sweep.sweep_file import SweepConfig, SweepFileError, load_sweep
from records.writer import ResultsStore
from trainables.losses import LOSSES, LossParams, ParamError, build_loss, loss_params
from trainables.losses.contract import Batch, LossOutput, TokenLoss
from trainables.losses.cross_entropy import token_nll
from trainables.losses.docs import BLOCKS, loss_table, main, readme_blocks, render, trials_columns
from trainables.losses.params import check_range, param_specs

ROOT = Path(__file__).resolve().parents[3]


class FocalParams(LossParams):
    gamma: float = Field(2.0, ge=0, le=5)
    """focusing exponent"""
    smooth: float = Field(0.0, ge=0, lt=1)
    """label smoothing share"""


class FocalLoss(TokenLoss):
    """A loss that exists only in this test: (1 − q)^γ-weighted nll, plus a `focus` part."""

    name = "focal"
    Params = FocalParams
    parts = ("ce", "focus")
    definition = "mean (1 − q(y))^γ · nll (a test loss)"

    def forward(self, batch: Batch) -> LossOutput:
        nll, _ = token_nll(batch.logits, batch.flat_targets)  # (N,)
        weight = (1 - (-nll).exp()).pow(self.params.gamma)
        loss = (weight * nll).sum() / batch.token_denominator
        ce = nll.detach().sum() / batch.token_denominator
        focus = weight.detach().sum() / batch.token_denominator
        return LossOutput(loss, {"ce": ce, "focus": focus}, batch.n_tokens)


@pytest.fixture
def focal(monkeypatch):
    monkeypatch.setitem(LOSSES, "focal", FocalLoss)  # the one registry line
    return FocalLoss


def sweep_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"experiment": "new", **data}))
    return path


def test_a_new_loss_flows_to_validation_search_space_trials_status_and_docs(focal, tmp_path):
    # the loss itself, with validated parameters
    out = build_loss("focal", None, gamma=1.0)(torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5)))
    assert set(out.parts) == {"ce", "focus"}
    with pytest.raises(ParamError, match=r"focal.gamma allows \[0, 5\]; got 6"):
        build_loss("focal", None, gamma=6)

    # validation of the sweep file: grid values and search ranges against the model
    bad = sweep_file(
        tmp_path,
        {"mode": "grid", "grid": {"losses": ["focal"], "params": {"focal": {"smooth": 1}}}},
    )
    with pytest.raises(
        SweepFileError, match=r"grid.params.focal.smooth: focal.smooth allows \[0, 1\)"
    ):
        load_sweep(bad)
    bad = sweep_file(
        tmp_path, {"search": {"losses": ["focal"], "space": {"gamma": {"low": 1, "high": 9}}}}
    )
    with pytest.raises(SweepFileError, match=r"search.space.gamma: focal.gamma allows \[0, 5\]"):
        load_sweep(bad)
    # ... and its part is a metric an objective may name
    good = sweep_file(
        tmp_path,
        {
            "search": {
                "losses": ["mle", "focal"],
                "space": {"gamma": {"low": 0.5, "high": 3}},
                "objectives": [{"metric": "train/focus", "mode": "min"}],
            }
        },
    )
    search = load_sweep(good)

    # the Optuna space: its own qualified parameter, only in its trials
    space = define_by_run(search)
    assert [p.name for p in space.params] == ["focal.gamma"]

    # the trials table: a column of its own, written and read back by the sink
    grid = SweepConfig.model_validate(
        {"experiment": "new", "mode": "grid", "grid": {"losses": ["focal", "del"]}}
    )
    sink = ParquetSink(
        ResultsStore(str(tmp_path / "results"), "new"),
        lambda t: trial_config(grid, t.config, t.trial_id),
    )
    assert {"gamma", "smooth"} <= set(sink.trials_schema.names)
    sink.setup()
    trial = Trial("run_trial", config={"loss": "focal", "gamma": 1.5}, trial_id="f1", stub=True)
    sink.on_trial_start(0, [trial], trial)
    sink.on_trial_result(0, [trial], trial, {"step": 0, "train/focus": 0.3})
    sink.on_trial_complete(0, [trial], trial)
    stored = pl.read_parquet(tmp_path / "results" / "trials" / "experiment=new" / "*.parquet")
    assert stored["gamma"].to_list() == [1.5, 1.5]

    # numsweep status shows the column
    status = experiment_status(str(tmp_path / "results"), grid)
    header = next(line for line in status.splitlines() if "trial_id" in line)
    assert "gamma" in header

    # the README's tables, generated from the model
    table = loss_table()
    assert "| `focal` | `gamma` 2, `smooth` 0 | mean (1 − q(y))^γ · nll (a test loss) |" in table
    assert "| `focal.smooth` | 0 | [0, 1) | label smoothing share |" in table
    assert "`gamma: double`" in trials_columns()


# Where each generated block lives (`make docs` writes these files).
GENERATED = {"README.md": {"loss-table"}, "docs/results-store.md": {"trials-columns"}}


def test_the_docs_tables_are_the_generated_ones():
    assert set().union(*GENERATED.values()) == set(BLOCKS)
    for name, expected in GENERATED.items():
        text = (ROOT / name).read_text()
        assert set(readme_blocks(text)) == expected, name
        assert render(text) == text, f"{name}: stale, run `make docs`"
    makefile = (ROOT / "Makefile").read_text()
    assert "trainables.losses.docs --write " + " ".join(GENERATED) in makefile


def test_make_docs_rewrites_stale_blocks_and_refuses_a_missing_one(tmp_path, capsys):
    readme, store = tmp_path / "README.md", tmp_path / "store.md"
    readme.write_text("intro\n<!-- generated: loss-table -->\nold\n<!-- end: loss-table -->\nend\n")
    store.write_text("<!-- generated: trials-columns -->\n<!-- end: trials-columns -->\n")
    assert main(["--write", str(readme), str(store)]) == 0
    assert (
        readme.read_text()
        == f"intro\n<!-- generated: loss-table -->\n{loss_table()}\n<!-- end: loss-table -->\nend\n"
    )
    assert trials_columns() in store.read_text()
    with pytest.raises(SystemExit) as exit_:
        main(["--write", str(readme)])  # no file holds trials-columns
    assert exit_.value.code == 2 and "trials-columns" in capsys.readouterr().err


def test_specs_are_read_from_the_model():
    specs = param_specs("focal", FocalParams)
    assert list(specs) == ["gamma", "smooth"]
    gamma, smooth = specs["gamma"], specs["smooth"]
    assert (gamma.default, gamma.low, gamma.high, gamma.low_open, gamma.high_open) == (
        2.0,
        0.0,
        5.0,
        False,
        False,
    )
    assert gamma.allowed == "[0, 5]" and smooth.allowed == "[0, 1)"
    assert gamma.doc == "focusing exponent" and gamma.qualified == "focal.gamma"
    assert loss_params("del")["distance"].allowed == "true or false"
    assert loss_params("compensated")["lam"].allowed == "(0, 1)"


@pytest.mark.parametrize(
    ("low", "high", "ok"),
    [(0.0, 5.0, True), (0.0, 0.0, True), (-0.1, 1.0, False), (1.0, 5.5, False)],
)
def test_a_range_is_allowed_when_both_ends_are(low, high, ok):
    if ok:
        check_range("focal", FocalParams, "gamma", low, high)
    else:
        with pytest.raises(ParamError, match=r"focal.gamma allows \[0, 5\]; the range"):
            check_range("focal", FocalParams, "gamma", low, high)
    with pytest.raises(ParamError, match=r"focal.smooth allows \[0, 1\)"):
        check_range("focal", FocalParams, "smooth", 0.5, 1.0)  # 1 itself is not allowed

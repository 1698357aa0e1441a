"""`numsweep study report` and `status` on a registered study whose main stage is in the store:
study 5's committed store, registered here with study 5's study file (a pilot summary written by
hand: the report reads the registered design, not the pilot). The report's decision is the
replay's; its secondaries are paired t-tests on the 6 pairs the decision used (seeds 0–5, which
ran first in both arms) with Holm's adjustment, checked against scipy's `ttest_rel` and
statsmodels' Holm; the report is refused while the study has not stopped. The HTML page is read
back with the standard library's parser: its tables are the JSON's. Fast: no Ray."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from orchestrator.cli import main
from orchestrator.study.pilot import PilotArm, PilotSummary
from orchestrator.study.registration import register
from orchestrator.study.sizing import size_design
from orchestrator.study.study_file import load_study
from records.reader import load_trials, open_store, read_latest
from tests.analysis.trend_fixtures import DIFFS, SIZES, SLOPES, write_trend_store
from tests.orchestrator.study.test_study_file import _write, trend_study
from tests.sweep_runs import ROOT

STUDY = ROOT / "studies" / "del_pretrained" / "study.yaml"
STORE = ROOT / "studies" / "del_pretrained" / "results"
PILOT = PilotSummary("p", 3, (PilotArm("del", "mle", 3, -0.001, 0.0035),), 1.2, 0.4)


@pytest.fixture
def registered(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(STORE, results)
    study = load_study(STUDY)
    register(str(results), study, PILOT, size_design(study, PILOT))
    return results


def _finals(results, metric: str, seeds: range) -> np.ndarray:
    """del − mle of `metric`'s final value on each seed of `seeds` (independently of the
    replay: the store's rows, the trials' loss and seed)."""
    store = open_store(results, ["del-pretrained-main"])
    latest, _ = read_latest(store, [metric])
    last = latest.sort("step").group_by("trial_id").agg(pl.col("value").last())
    rows = last.join(load_trials(store).select("trial_id", "loss", "seed"), on="trial_id")
    value = {(r["loss"], r["seed"]): r["value"] for r in rows.iter_rows(named=True)}
    return np.array([value[("del", s)] - value[("mle", s)] for s in seeds])


def test_the_report_of_a_stopped_study(registered, capsys):
    assert (
        main(["study", "report", str(STUDY), "--results", str(registered), "--format", "json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert (doc["decision"], doc["look"], doc["seeds"]) == ("equivalent", 2, 6)
    assert doc["hours"] == pytest.approx(2.705, abs=1e-3)  # the 12 trials of seeds 0-5
    assert doc["fixed_hours"] == pytest.approx(PILOT.hours_per_seed * doc["fixed_seeds"])
    assert doc["registration"]["pilot"]["sd"] == 0.0035
    ps = []
    for row in doc["secondaries"]:
        d = _finals(registered, row["metric"], range(6))
        assert row["mean_diff"] == pytest.approx(d.mean())
        if np.ptp(d) == 0:
            assert row["p"] is None
            continue
        p = stats.ttest_1samp(d, 0.0).pvalue  # = ttest_rel(del, mle)
        assert row["p"] == pytest.approx(p)
        ps.append((row, p))
    holm = multipletests([p for _, p in ps], method="holm")[1]
    assert [r["p_holm"] for r, _ in ps] == pytest.approx(list(holm))
    assert main(["study", "report", str(STUDY), "--results", str(registered)]) == 0
    md = capsys.readouterr().out
    assert "decision: equivalent at look 2 of 3" in md and "## secondary" in md


def test_status_shows_no_value_and_the_report_waits_for_a_stop(registered, capsys, tmp_path):
    assert main(["study", "status", str(STUDY), "--results", str(registered)]) == 0
    text = capsys.readouterr().out
    assert "looks at 3, 6, 9 paired seeds" in text and "9 of 9 paired seeds complete" in text
    store = open_store(registered, ["del-pretrained-main"])
    latest, _ = read_latest(store, ["gen/mathgen/exact_match"])
    values = latest.filter(pl.col("step") == 200)["value"]
    assert values.len() == 18  # each arm's, each seed's
    for value in values:
        assert f"{value:.3g}" not in text and f"{value:.4f}" not in text
    # the same registration over a store of the first 2 seeds only: not stopped, no report
    few = tmp_path / "few"
    shutil.copytree(registered, few)
    trials = load_trials(open_store(few, ["del-pretrained-main"]))
    kept = trials.filter(pl.col("seed") < 2)["trial_id"].to_list()
    for table in ("metrics", "trials"):
        for part in (few / table).rglob("*.parquet"):
            pl.read_parquet(part).filter(pl.col("trial_id").is_in(kept)).write_parquet(part)
    assert main(["study", "report", str(STUDY), "--results", str(few)]) == 2
    assert "has not stopped" in capsys.readouterr().err
    page = ["--format", "html", "-o", str(tmp_path / "page")]
    assert main(["study", "report", str(STUDY), "--results", str(few), *page]) == 2
    assert "has not stopped" in capsys.readouterr().err and not (tmp_path / "page").exists()


class _Tables(HTMLParser):
    """The page's tables by the id of the heading before each (stdlib parser: the test reads
    the page as a browser would, not as the writer built it)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._id: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "h3":
            self._id = dict(attrs).get("id")
        elif tag == "tr" and self._id is not None:
            self.tables.setdefault(self._id, []).append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._id is not None:
            self.tables[self._id][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_the_html_report(registered, capsys, tmp_path):
    args = ["study", "report", str(STUDY), "--results", str(registered)]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # html needs -o, and -o is html's only: refused before anything is written
    assert main([*args, "--format", "html"]) == 2
    assert "give -o DIR" in capsys.readouterr().err
    assert main([*args, "-o", str(tmp_path / "md")]) == 2
    assert not (tmp_path / "md").exists()
    out = tmp_path / "page"
    assert main([*args, "--format", "html", "-o", str(out)]) == 0
    index = out / "index.html"
    assert capsys.readouterr().out.strip() == str(index)
    text = index.read_text()
    assert "decision: equivalent at look 2 of 3" in text and "<script" not in text
    assert doc["registration"]["content_hash"] in text
    parser = _Tables()
    parser.feed(text)
    tables = parser.tables
    (head, row) = tables["primary"]
    ci = row[head.index("90% repeated CI")]
    low, high = (float(x.replace("−", "-")) for x in ci.strip("[]").split(", "))
    (arm,) = doc["arms"]
    assert (row[0], row[1]) == ("del", "equivalent")
    assert low == pytest.approx(arm["ci_low"], rel=1e-3)
    assert high == pytest.approx(arm["ci_high"], rel=1e-3)
    # every look's table and the secondaries (with Holm) as the JSON has them
    for name in ("looks", "secondary"):
        (table,) = [t for t in doc["tables"] if t["name"] == name]
        assert tables[name] == [table["columns"], *table["rows"]]
    cost = {r[0]: r[1:] for r in tables["cost"][1:]}
    assert cost["the fixed design (one look, same α and power)"] == [
        str(doc["fixed_seeds"]),
        f"{doc['fixed_hours']:.3g}",
    ]
    assert float(cost["used (the pairs the decision used)"][1]) == pytest.approx(
        doc["hours"], rel=1e-2
    )
    fields = dict(tables["registration"][1:])
    assert fields["study file hash (sha256)"] == doc["registration"]["content_hash"]
    assert fields["looks at (paired seeds)"] == "3, 6, 9"
    assert (
        json.loads((out / "tables" / "study-report.json").read_text())["decision"] == "equivalent"
    )


def test_the_report_of_a_trend_study(tmp_path, capsys):
    """Study 7's form, registered on the store of tests/analysis/trend_fixtures.py: the primary is
    the seeds' slope per decade (hand-derived there), stopped at the first look (3 seeds); a
    secondary without the trend compares each size's arms on the same 3 seeds (Holm over them)."""
    doc = trend_study()
    doc["design"] = {"seeds": [3, 6], "spending": "pocock"}
    doc["secondaries"] = [{"metric": "eval/test/ce"}]
    path = _write(tmp_path, doc)
    write_trend_store(tmp_path / "results", "s")
    study = load_study(path)
    register(str(tmp_path / "results"), study, PILOT, size_design(study, PILOT))
    args = ["study", "report", str(path), "--results", str(tmp_path / "results")]
    assert main([*args, "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["decision"], got["look"], got["seeds"]) == ("superior", 1, 3)
    (arm,) = got["arms"]
    assert arm["estimate"] == pytest.approx(np.mean(SLOPES[:3])) and arm["ci_high"] < 0
    by_size = {r["arm"]: r["mean_diff"] for r in got["secondaries"]}
    assert by_size == pytest.approx(
        {
            f"del (lr={lr:g}, model={preset})": np.mean([DIFFS[s][i] for s in range(3)])
            for i, (preset, _, lr) in enumerate(SIZES)
        }
    )
    assert main(args) == 0
    assert "primary: treatment − reference, slope per decade of N" in capsys.readouterr().out

"""The HTML report: its files (figures, tables in three formats, relative links only), the static
page and the interactive one (plotly, its JavaScript beside the page) on a multi-size store and
on demo-shaped stores at one seed and at three (tests/analysis/demo_stores.py), what the summary
and each section say, the cost panel against the store's own numbers; and, in a slow test, how
the pages render in a real headless Chromium (Debian's `chromium` package, installed with
apt-get when missing): plots drawn, no console error, no request leaving the machine, the
smoothing and the tokens axis working."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from analysis.__main__ import main
from analysis.report import ReportSettings, write_report
from bench.synthetic_store import (
    generate_store,
    trial_config,
    write_metric_rows,
    write_trial_states,
)
from orchestrator.cli import stored_sweep
from orchestrator.status import experiment_status
from records.layout import trial_row
from records.reader import open_store
from tests.analysis.demo_stores import CPU_PER_WALL, STARTUP_S, write_demo_store
from tests.analysis_fixtures import at, write_golden_store
from tests.chromium import CHROMIUM_FLAGS, ensure_chromium

SIZES = {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000, "xl": 64_000_000}
FIGURES = {
    "learning_curves",
    "entropy_test",
    "entropy_extra",
    "scaling_test",
    "scaling_extra",
    "ee_share",
    "pareto",
}
SECTIONS = [
    "Summary",
    "Learning curves",
    "Ablation",
    "Digit entropy and digit accuracy over training",
    "Scaling",
    "Search",
    "Cost",
]


def make_report(tmp_path: Path, *extra: str) -> Path:
    generate_store(tmp_path / "results", sizes=SIZES, seeds=(0, 1), running_fraction=0.1, seed=1)
    argv = ["report", str(tmp_path / "results"), "-o", str(tmp_path / "report"), *extra]
    argv += ["--objective", "gen/macc", "--objective", "eval/test/ce", "--bootstrap", "300"]
    assert main(argv) == 0
    return tmp_path / "report" / "index.html"


def make_demo_report(tmp_path: Path, seeds: tuple[int, ...], *extra: str) -> Path:
    root = write_demo_store(tmp_path / "results", seeds)
    assert main(["report", str(root), "-o", str(tmp_path / "report"), *extra]) == 0
    return tmp_path / "report" / "index.html"


def plot_specs(html: str) -> dict[str, list[dict]]:
    """Each plotly figure's traces, by its div id (the JSON handed to Plotly.newPlot)."""
    specs = {}
    for div, data in re.findall(r'Plotly\.newPlot\(\s*"([^"]+)",\s*(\[.*?\]),\s*\{', html, re.S):
        specs[div] = json.loads(data)
    return specs


def test_static_report_is_complete_and_self_contained(tmp_path: Path) -> None:
    page = make_report(tmp_path, "--static")
    html = page.read_text(encoding="utf-8")
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert {Path(s).stem for s in sources} == FIGURES
    for src in sources:
        assert not src.startswith(("/", "http:", "https:", "file:"))
        assert (page.parent / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Offline: nothing fetched from elsewhere; a static page runs no script.
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html and "<link" not in html
    assert not (page.parent / "plotly.min.js").exists()
    assert re.findall(r"<h2[^>]*>([^<]+)</h2>", html) == SECTIONS
    # The summary leads with the headline tables, key figures and the verdict.
    summary = html.split('<h2 id="learning-curves">')[0]
    assert "split test (interpolation)" in summary and "verdict: which follows" in summary
    assert 'src="figures/entropy_test.png"' in summary and 'src="figures/ee_share.png"' in summary
    assert "Pareto front" in html and "saturating power law" in html
    tables = {p.name for p in (page.parent / "tables").iterdir()}
    for name in (
        "ablation_test",
        "entropy_test",
        "scaling_power",
        "scaling_saturating",
        "scaling_verdict",
        "scaling_ee_share",
        "search_pareto",
        "cost",
    ):
        assert {f"{name}.md", f"{name}.csv", f"{name}.tex"} <= tables
        assert f'href="tables/{name}.csv"' in html
    assert {"ablation.json", "scaling.json", "scaling_points.csv", "cost.json"} <= tables


def test_each_table_and_figure_appears_once(tmp_path: Path) -> None:
    html = make_report(tmp_path, "--static").read_text(encoding="utf-8")
    tables = re.findall(r'<h3 id="([^"]+)">', html)
    assert len(tables) == len(set(tables))
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert len(sources) == len(set(sources))
    # The ablation's means per split are in the summary; the ablation section links there.
    summary, rest = html.split('<h2 id="learning-curves">')
    assert 'id="ablation_test"' in summary and 'id="ablation_test"' not in rest
    ablation = rest.split('<h2 id="ablation">')[1].split("<h2")[0]
    assert 'means per split, in the summary: <a href="#ablation_test">' in ablation
    assert 'id="ablation_test_vs_baseline"' in ablation
    # The cost is a panel, not a sentence in every section's header.
    assert html.count("cost of ") == 0
    assert html.count("core-hours") <= 1


def test_report_on_data_that_support_little(tmp_path: Path) -> None:
    root = write_golden_store(tmp_path / "results")
    page = write_report(open_store(root), ReportSettings(out=tmp_path / "report", static=True))
    html = page.read_text(encoding="utf-8")
    # One model size: the scaling section is one line instead of plots; no Pareto plot.
    assert "fewer than 3 sizes (1): no fit" in html
    assert "scaling_test.png" not in html and "pareto.png" not in html
    assert "one objective: no Pareto front" in html
    assert "learning_curves.png" in html  # no train/ce here, but eval CE over steps
    assert 'src="figures/entropy_test.png"' in html


def make_one_size_report(tmp_path: Path, *extra: str) -> Path:
    root = write_golden_store(tmp_path / "results")
    assert main(["report", str(root), "-o", str(tmp_path / "report"), *extra]) == 0
    return tmp_path / "report" / "index.html"


def test_one_size_report_says_so_in_one_line_and_draws_each_figure_once(tmp_path: Path) -> None:
    page = make_one_size_report(tmp_path, "--static")
    html = page.read_text(encoding="utf-8")
    scaling = html.split('<h2 id="scaling">Scaling</h2>')[1].split("<h2")[0]
    assert scaling.strip().count("<p>") == 1 and "fewer than 3 sizes (1): no fit" in scaling
    assert "scaling_verdict" not in html and "ee_share" not in html and "nan" not in scaling
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert sources and len(sources) == len(set(sources))


def test_interactive_report_at_one_seed_tells_the_truth(tmp_path: Path) -> None:
    page = make_demo_report(tmp_path, (0,))
    html = page.read_text(encoding="utf-8")
    # plotly's JavaScript beside the page, loaded by relative path; nothing from elsewhere.
    js = page.parent / "plotly.min.js"
    assert js.stat().st_size > 1_000_000 and '<script src="plotly.min.js"' in html
    assert (
        "http://" not in html and "https://" not in html and not (page.parent / "figures").exists()
    )
    specs = plot_specs(html)
    assert {"fig-learning_curves", "fig-entropy_test", "fig-search_history", "fig-cost"} <= set(
        specs
    )
    curves = specs["fig-learning_curves"]
    # Comparable metrics only: train/ce and held-out CE, never train/loss; one seed: no band.
    hovers = " ".join(t.get("hovertemplate", "") for t in curves)
    assert "train/ce" in hovers and "eval/test/ce" in hovers and "train/loss" not in hovers
    assert not any(t.get("fill") == "tonexty" for t in curves)
    assert "one seed per arm, each line one trial (no band)" in html
    # Arm labels name the parameters Optuna sampled; every curve has tokens for its x-axis.
    names = {t["name"] for t in curves if t.get("name")}
    assert names == {
        "mle",
        "ntl_was (alpha=0.0432)",
        "dist2 (alpha=0.523)",
        "del (alpha=0.161, decay_base=1.31)",
    }
    assert all(t["meta"]["tokens"] is not None for t in curves)
    assert 'value="tokens"' in html and 'type="range"' in html
    # The summary ranks by the sweep's objective, as numsweep status does: del first.
    summary = html.split('<h2 id="learning-curves">')[0]
    assert "best trial by eval/test/digit_acc (max) (the sweep&#x27;s objective)" in summary
    assert "<b>demo_00003</b> (del (alpha=0.161, decay_base=1.31)), 0.35" in summary


def test_interactive_report_at_three_seeds_draws_bands_and_says_what_they_are(
    tmp_path: Path,
) -> None:
    html = make_demo_report(tmp_path, (0, 1, 2)).read_text(encoding="utf-8")
    curves = plot_specs(html)["fig-learning_curves"]
    bands = [t for t in curves if t.get("fill") == "tonexty"]
    assert len(bands) == 4 * 3  # every arm, in each of train/ce, eval/test/ce, eval/extra/ce
    assert "mean over 3 seeds per arm; band: 95% t-interval of the mean" in html
    # A grid: no sampled parameter, so the labels are the losses alone.
    assert {t["name"] for t in curves if t.get("showlegend")} == {"mle", "ntl_was", "dist2", "del"}


def test_cost_panel_agrees_with_the_stores_own_numbers(tmp_path: Path) -> None:
    page = make_demo_report(tmp_path, (0, 1, 2))
    records = json.loads((page.parent / "tables" / "cost.json").read_text())["tables"][0]["records"]
    every = next(r for r in records if r["arm"] == "all")
    # Read with pyarrow alone: each trial's last perf/* value, summed.
    rows = pq.read_table(tmp_path / "results" / "metrics").to_pylist()
    last = {(r["trial_id"], r["metric"]): r["value"] for r in sorted(rows, key=lambda r: r["step"])}
    wall = sum(v for (_, m), v in last.items() if m == "perf/wall_s")
    cpu = sum(v for (_, m), v in last.items() if m == "perf/cpu_s")
    assert every["trials"] == 12
    assert every["core_h"] == pytest.approx(cpu / 3600, rel=1e-12)
    assert every["core_h"] == pytest.approx(CPU_PER_WALL * wall / 3600, rel=1e-12)
    assert every["startup_share"] == pytest.approx(12 * STARTUP_S / wall, rel=1e-12)
    assert every["gpu_h"] == 0
    mle = next(r for r in records if r["arm"] == "mle")
    assert mle["peak_mem_mb"] == pytest.approx(610.0)
    html = page.read_text(encoding="utf-8")
    assert {"fig-cost"} <= set(plot_specs(html))


def page_text(html: str) -> str:
    """What a reader sees: the page without its scripts and tags, entities decoded, each run of
    white space one space."""
    import html as html_module

    text = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    text = html_module.unescape(re.sub(r"<[^>]+>", " ", text))
    return re.sub(r"\s+", " ", text)


ROOT = Path(__file__).resolve().parents[2]
DEL_CPU = ROOT / "studies" / "del_cpu" / "results"
"""A real store: the del_cpu study's Optuna search (24 trials of del over del.alpha and
del.decay_base, objective eval/test/digit_acc max) beside its grids."""


def test_the_report_names_the_best_trial_numsweep_status_names(tmp_path: Path) -> None:
    # A copy: numsweep status opens the search's Optuna storage beside the manifest.
    root = shutil.copytree(DEL_CPU, tmp_path / "results")
    out = tmp_path / "report"
    argv = ["report", str(root), "--experiment", "del-cpu-search", "-o", str(out)]
    assert main(argv) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    summary = html.split('<h2 id="learning-curves">')[0]
    said = re.search(
        r"best trial by ([^ ]+) \(max\) \(the sweep&#x27;s objective\): <b>([^<]+)</b> "
        r"\(([^)]+(?:\))?)\), ([0-9.]+)",
        summary,
    )
    assert said, summary[-3000:]
    metric, trial, value = said.group(1), said.group(2), float(said.group(4))
    status = experiment_status(str(root), stored_sweep(str(root), "del-cpu-search"))
    best = re.search(r"best max (\S+): ([0-9.]+) \(trial (\S+), loss (\S+)\)", status)
    assert best, status
    assert metric == best.group(1) == "eval/test/digit_acc"
    assert trial == best.group(3)
    assert value == pytest.approx(float(best.group(2)), abs=5e-5)  # 4 significant digits
    # The search's own tables rank by the same: its first row is that trial.
    records = json.loads((out / "tables" / "search.json").read_text())["tables"]
    ranked = next(t for t in records if t["name"] == "search_best")["records"]
    assert ranked[0]["trial_id"] == trial
    # del's parameters by their namespaced names, judged over its 24 trials (24! orderings:
    # random permutations, not the exact test).
    importance = next(t for t in records if t["name"] == "search_importance")["records"]
    judged = {r["parameter"]: r for r in importance}
    assert {"del.alpha", "del.decay_base"} <= set(judged) and "alpha" not in judged
    assert judged["del.alpha"]["trials"] == 24
    assert judged["del.alpha"]["p_method"] == "permutation"
    # 24 arms of one seed each: one line per trial, no band, and the title says so.
    assert "learning curves: 24 arms, one seed each, coloured by loss (no bands)" in html
    assert "mean over seeds" not in page_text(html)


def _two_losses_four_trials(root: Path) -> Path:
    """Four del and four ntl_was trials, each loss's `alpha` in its own column: the objective
    rises with del's α (0.01 … 0.04 → 0.1 … 0.4) and falls with ntl_was's (0.3 … 0.6 → 0.4 …
    0.1), a perfect rank correlation each (ρ = +1 and −1)."""
    rows, states = [], []
    for k in range(4):
        for j, loss in enumerate(("del", "ntl_was")):
            trial = f"{loss}_{k}"
            alpha = 0.01 * (k + 1) if loss == "del" else 0.3 + 0.1 * k
            objective = 0.1 * (k + 1) if loss == "del" else 0.4 - 0.1 * k
            for step, value in ((0, 0.05), (100, objective)):
                rows.append((trial, 0, step, "eval/test/digit_acc", value, at(10 * k + j + step)))
                rows.append((trial, 0, step, "eval/test/ce", 2.0 - value, at(10 * k + j + step)))
            config = trial_config(loss=loss, params={"alpha": alpha}, seed=k)
            states.append(trial_row(trial, "TERMINATED", config, start=at(10 * k + j), ts=at(999)))
    write_metric_rows(root, "two", rows)
    write_trial_states(root, "two", states)
    return root


def test_the_reports_importance_is_per_loss_with_exact_p(tmp_path: Path) -> None:
    root = _two_losses_four_trials(tmp_path / "results")
    out = tmp_path / "report"
    argv = ["report", str(root), "-o", str(out), "--objective", "eval/test/digit_acc:max"]
    assert main(argv) == 0
    text = page_text((out / "index.html").read_text(encoding="utf-8"))
    # By hand: 4 trials have 4! = 24 orderings; only the identity gives ρ = +1 and only its
    # reverse ρ = −1, so the two-sided exact p of |ρ| = 1 is 2/24 = 1/12 = 0.0833, for each
    # loss's α over its own 4 trials. Pooled into one `alpha` column the 8 trials would give
    # neither ρ.
    rows = re.findall(r"(\S+\.alpha) 4 \S+ 4 1 (-?1) p=([0-9.]+) \(exact permutation\)", text)
    assert sorted(rows) == [("del.alpha", "1", "0.0833"), ("ntl_was.alpha", "-1", "0.0833")]
    records = json.loads((out / "tables" / "search.json").read_text())["tables"]
    importance = next(t for t in records if t["name"] == "search_importance")["records"]
    by_name = {r["parameter"]: r for r in importance}
    assert "alpha" not in by_name
    for name in ("del.alpha", "ntl_was.alpha"):
        assert by_name[name]["p"] == pytest.approx(1 / 12, rel=1e-12)
        assert by_name[name]["p_method"] == "exact permutation"
    # Labels name the sampled parameter of each trial's arm.
    assert "del (alpha=0.01)" in text and "ntl_was (alpha=0.6)" in text


def test_the_one_seed_report_promises_no_interval(tmp_path: Path) -> None:
    html = make_demo_report(tmp_path, (0,)).read_text(encoding="utf-8")
    text = page_text(html)
    # No title or header claims a mean ± CI over seeds that a single seed cannot give.
    assert "CI over seeds" not in text and "band: 95%" not in text
    summary = page_text(html.split('<h2 id="learning-curves">')[0])
    assert summary.count("the value of one seed (one seed: no interval)") == 2  # test, extra
    assert "one seed: no interval for mle, del (alpha=0.161, decay_base=1.31)" in text
    assert " ± " not in text  # no cell has an interval
    # The table files say the same as the page.
    first = (tmp_path / "report" / "tables" / "ablation_test.md").read_text().splitlines()[0]
    assert first.endswith("the value of one seed (one seed: no interval); bold: best in column")
    # Nothing judges a loss's parameter on its one trial: only `loss` (4 trials, 4 levels,
    # η² 1 at chance 1, which the table shows beside it) is in the importance table.
    search = json.loads((tmp_path / "report" / "tables" / "search.json").read_text())["tables"]
    importance = next(t for t in search if t["name"] == "search_importance")["records"]
    assert [(r["parameter"], r["trials"], r["chance"]) for r in importance] == [("loss", 4, 1.0)]
    # Each table and each plot once.
    tables = re.findall(r'<h3 id="([^"]+)">', html)
    assert len(tables) == len(set(tables))
    divs = re.findall(r'<div id="(fig-[^"]+)"', html)
    assert divs and len(divs) == len(set(divs)) == len(plot_specs(html))


def test_the_three_seed_report_keeps_its_intervals(tmp_path: Path) -> None:
    text = page_text(make_demo_report(tmp_path, (0, 1, 2)).read_text(encoding="utf-8"))
    assert "mean ± 95% CI over seeds (t distribution)" in text
    assert "one seed" not in text and " ± " in text


def test_plotly_stays_out_of_the_gpu_kit() -> None:
    # The GPU check's kit packs pyproject's run-time dependencies as the committed lock pins
    # them (bench/gpu_kit.py), beside a 9 MiB tree in one 64 MiB device call with ~4.5 MiB to
    # spare: plotly (the interactive report's extra: 64 MiB installed, 4.6 MiB of JS per page)
    # must be neither.
    from packaging.requirements import Requirement

    from bench import gpu_kit

    required = {Requirement(r).name for r in gpu_kit.runtime_requirements(ROOT / "pyproject.toml")}
    locked = {p["name"] for p in json.loads(gpu_kit.LOCK.read_text())["install"]}
    assert "plotly" not in required and not {"plotly", "narwhals"} & locked
    # A report written where the sweeps write (results/) is git-ignored: its plotly.min.js
    # never travels with the working tree.
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "results/demo/report/plotly.min.js"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0


def test_a_missing_plotly_is_exit_2_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A package set to None in sys.modules cannot be imported: what an absent one does.
    monkeypatch.setitem(sys.modules, "plotly", None)
    root = write_golden_store(tmp_path / "results")
    assert main(["report", str(root), "-o", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert "numsweep[report]" in err and "--static" in err
    assert main(["report", str(root), "-o", str(tmp_path / "static"), "--static"]) == 0


# Written first into a copy of the page's <head> (next to it, so relative paths resolve the same
# way): records console errors and uncaught ones (failed loads too); after load, counts the
# images that decoded and the plotly figures that drew their traces (parallel coordinates: their
# axes), then moves the first curves figure's smoothing slider to 0.9 and its x-axis to
# tokens, and records the first line's values before and after.
PROBE = """<script>
window.__errors = [];
var __error = console.error;
console.error = function () {
  window.__errors.push(Array.prototype.join.call(arguments, ' '));
  __error.apply(console, arguments);
};
window.addEventListener('error', function (e) {
  window.__errors.push('error: ' + (e.message || (e.target && (e.target.src || e.target.href))));
}, true);
window.addEventListener('load', function () {
  setTimeout(function () {
    var out = {errors: window.__errors};
    var imgs = Array.prototype.slice.call(document.images);
    out.images = imgs.length;
    out.decoded = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
    var plots = Array.prototype.slice.call(document.querySelectorAll('.plotly-graph-div'));
    out.plots = plots.length;
    out.drawn = plots.filter(function (p) {
      // a parallel-coordinates figure draws its lines on a canvas and its axes in SVG
      var parcoords = p.querySelectorAll('.parcoords .y-axis').length >= 2;
      return p.querySelector('.main-svg') && (p.querySelectorAll('.trace').length > 0 || parcoords);
    }).length;
    var box = document.querySelector('.curve-controls');
    if (box) {
      var gd = document.getElementById(box.getAttribute('data-plot'));
      var k = gd.data.findIndex(function (t) { return !!t.name; });
      var y = gd.data[k].y;  // plotly.py's base64 typed array, decoded here independently
      out.raw = y.bdata === undefined ? Array.from(y) : Array.from(new Float64Array(
        Uint8Array.from(atob(y.bdata), function (c) { return c.charCodeAt(0); }).buffer));
      var slider = box.querySelector('input[type=range]');
      slider.value = '0.9';
      slider.dispatchEvent(new Event('input'));
      out.smoothed = Array.from(gd.data[k].y);
      var tokens = box.querySelector('input[value=tokens]');
      if (tokens) {
        tokens.checked = true;
        tokens.dispatchEvent(new Event('change'));
        out.x = Array.from(gd.data[k].x);
        out.tokens = gd.data[k].meta.tokens;
        out.xtitle = gd.layout.xaxis.title.text;
      }
    }
    document.body.setAttribute('data-probe', JSON.stringify(out));
  }, 500);
});
</script>"""


def ema(values: list[float], weight: float) -> list[float]:
    """TensorBoard's debiased exponential moving average, written out independently."""
    out, last, norm = [], 0.0, 0.0
    for v in values:
        last = weight * last + (1 - weight) * v
        norm = weight * norm + (1 - weight)
        out.append(last / norm)
    return out


def browse(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
    profile.mkdir()
    return subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def page_requests(net_log: Path) -> set[str]:
    """The URLs the page asked Chromium's network stack for (its --log-net-log JSON): requests
    whose initiator is the page (a file:// page's opaque origin, "null"), not those Chromium's
    own services start (initiator "not an origin": its network clock, account and check-in
    pings, which CHROMIUM_FLAGS do not silence). Files the page reads from disk never go
    through the network stack."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return {
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start
        and "url" in e.get("params", {})
        and e["params"].get("initiator") != "not an origin"
    }


def open_offline(chromium: str, tmp_path: Path, page: Path) -> tuple[str, set[str]]:
    """Open `page` from file:// (20 s of virtual time): its DOM then, and what it requested."""
    net_log = tmp_path / f"net{len(list(tmp_path.glob('net*.json')))}.json"
    dom = browse(
        chromium,
        tmp_path,
        f"--log-net-log={net_log}",
        "--virtual-time-budget=20000",
        "--dump-dom",
        page.as_uri(),
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout, page_requests(net_log)


@pytest.mark.slow
def test_the_request_check_sees_what_a_page_fetches(tmp_path: Path) -> None:
    # The check below would pass vacuously if the net log missed a page's requests: a page that
    # loads a script, an image and a fetch from the network must show all three.
    remote = {
        "https://cdn.example.org/plotly.min.js",
        "http://example.com/a.png",
        "https://example.org/x.json",
    }
    page = tmp_path / "remote.html"
    page.write_text(
        '<!DOCTYPE html><html><head><script src="https://cdn.example.org/plotly.min.js">'
        '</script></head><body><img src="http://example.com/a.png"><script>'
        "fetch('https://example.org/x.json').catch(function () {});</script></body></html>",
        encoding="utf-8",
    )
    _, requested = open_offline(ensure_chromium(), tmp_path, page)
    assert requested == remote


def make_search_report(tmp_path: Path) -> Path:
    """The del_cpu study's real Optuna search (24 trials): history, slices, parallel
    coordinates of del.alpha and del.decay_base."""
    out = tmp_path / "report"
    argv = ["report", str(DEL_CPU), "--experiment", "del-cpu-search", "-o", str(out)]
    assert main(argv) == 0
    return out / "index.html"


PAGES = {
    "static, four sizes": lambda tmp: make_report(tmp, "--static"),
    "interactive, four sizes": lambda tmp: make_report(tmp),
    "interactive, demo at one seed": lambda tmp: make_demo_report(tmp, (0,)),
    "interactive, demo at three seeds": lambda tmp: make_demo_report(tmp, (0, 1, 2)),
    "interactive, del_cpu search": make_search_report,
}


@pytest.mark.slow
@pytest.mark.parametrize("which", list(PAGES))
def test_report_renders_in_headless_chromium(tmp_path: Path, which: str) -> None:
    chromium = ensure_chromium()
    page = PAGES[which](tmp_path)
    probe = page.with_name("probe.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("<head>", "<head>" + PROBE, 1), encoding="utf-8"
    )
    dom, requested = open_offline(chromium, tmp_path, probe)
    match = re.search(r"data-probe=\"([^\"]+)\"", dom)
    assert match, dom[-2000:]
    seen = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert seen["errors"] == []
    # The page read its own files from disk and asked the network for nothing.
    assert requested == set()
    html = page.read_text(encoding="utf-8")
    assert seen["decoded"] == seen["images"] == len(re.findall(r"<img ", html))
    assert seen["drawn"] == seen["plots"] == len(plot_specs(html))
    if which.startswith("static"):
        assert seen["plots"] == 0 and seen["images"] == len(FIGURES)
    else:
        assert seen["plots"] >= 4
        if which.endswith("search"):  # Optuna-dashboard-like panels, each drawn
            panels = {"fig-search_history", "fig-search_slices", "fig-search_parallel_0"}
            assert panels <= set(plot_specs(html))
        raw = [v for v in seen["raw"] if v is not None]
        assert seen["smoothed"] == pytest.approx(ema(raw, 0.9), rel=1e-9)
        assert seen["smoothed"] != pytest.approx(raw)
        assert seen["x"] == pytest.approx(seen["tokens"]) and seen["xtitle"] == "tokens seen"

    shot = tmp_path / "screenshot.png"
    taken = browse(
        chromium,
        tmp_path,
        "--window-size=1400,2400",
        "--virtual-time-budget=20000",
        f"--screenshot={shot}",
        page.as_uri(),
    )
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]  # (H, W, 3) floats in [0, 1]
    assert pixels.shape[:2] == (2400, 1400)
    assert pixels.std() > 0.05  # not a blank page
    # Tables and text are grey; the figures' lines and markers are the only saturated colour.
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert np.mean(saturation > 0.3) > 0.002


def test_the_cost_table_does_not_depend_on_the_stores_row_order(tmp_path: Path) -> None:
    # The del_cpu study's store, and a copy with every metrics part's rows reversed and the
    # parts' names in reverse order: each mean then meets its floats in another order unless the
    # panel fixes one (a clean clone's report once differed from the committed one in the last
    # digits of its cost table).
    import pyarrow as pa

    reversed_store = tmp_path / "reversed"
    shutil.copytree(DEL_CPU, reversed_store)
    for experiment in (reversed_store / "metrics").iterdir():  # a part stays in its experiment
        parts = sorted(experiment.glob("*.parquet"))
        tables = [pq.read_table(p) for p in parts]
        for path, table in zip(reversed(parts), tables, strict=True):
            pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), path)
    costs = []
    for store in (DEL_CPU, reversed_store):
        out = tmp_path / f"report-{store.name}"
        assert main(["report", str(store), "-o", str(out), "--static"]) == 0
        costs.append((out / "tables" / "cost.csv").read_bytes())
    assert costs[0] == costs[1]

"""The HTML report: its files (figures, tables in three formats, relative links only) and, in a
slow test, how it renders in a real headless Chromium (Debian's `chromium` package, installed with
apt-get when missing)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from analysis.__main__ import main
from analysis.report import ReportSettings, write_report
from bench.synthetic_store import generate_store
from records.reader import open_store
from tests.analysis_fixtures import write_golden_store
from tests.chromium import CHROMIUM_FLAGS, ensure_chromium

SIZES = {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000, "xl": 64_000_000}
FIGURES = {
    "learning_curves.png",
    "entropy_test.png",
    "entropy_extra.png",
    "scaling_test.png",
    "scaling_extra.png",
    "ee_share.png",
    "pareto.png",
}


def make_report(tmp_path: Path) -> Path:
    generate_store(tmp_path / "results", sizes=SIZES, seeds=(0, 1), running_fraction=0.1, seed=1)
    assert (
        main(
            [
                "report",
                str(tmp_path / "results"),
                "-o",
                str(tmp_path / "report"),
                "--objective",
                "gen/macc",
                "--objective",
                "eval/test/ce",
                "--bootstrap",
                "300",
            ]
        )
        == 0
    )
    return tmp_path / "report" / "index.html"


def test_report_is_complete_and_self_contained(tmp_path: Path) -> None:
    page = make_report(tmp_path)
    html = page.read_text(encoding="utf-8")
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert {Path(s).name for s in sources} == FIGURES
    for src in sources:
        assert not src.startswith(("/", "http:", "https:", "file:"))
        assert (page.parent / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Offline: nothing fetched from elsewhere, no scripts.
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html and "<link" not in html
    titles = re.findall(r"<h2[^>]*>([^<]+)</h2>", html)
    assert titles == [
        "Summary",
        "Ablation",
        "Digit entropy and digit accuracy over training",
        "Scaling",
        "Search",
    ]
    # The summary leads with the headline tables, key figures and the verdict.
    summary = html.split("<h2>Ablation</h2>")[0]
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
    ):
        assert {f"{name}.md", f"{name}.csv", f"{name}.tex"} <= tables
        assert f'href="tables/{name}.csv"' in html
    assert {"ablation.json", "scaling.json", "scaling_points.csv"} <= tables
    assert 'href="tables/scaling_points.csv"' in html


def test_report_on_data_that_support_little(tmp_path: Path) -> None:
    root = write_golden_store(tmp_path / "results")
    page = write_report(open_store(root), ReportSettings(out=tmp_path / "report"))
    html = page.read_text(encoding="utf-8")
    # One model size: the scaling section is one line instead of plots; no Pareto plot.
    assert "fewer than 3 sizes (1): no fit" in html
    assert "scaling_test.png" not in html and "pareto.png" not in html
    assert "one objective: no Pareto front" in html
    assert "learning_curves.png" in html  # no train/loss here, but eval CE over steps
    assert 'src="figures/entropy_test.png"' in html


IMAGE_PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-images', imgs.length + '/' + ok);
});
</script>
"""


def make_one_size_report(tmp_path: Path) -> Path:
    root = write_golden_store(tmp_path / "results")
    assert main(["report", str(root), "-o", str(tmp_path / "report")]) == 0
    return tmp_path / "report" / "index.html"


def test_one_size_report_says_so_in_one_line_and_draws_each_figure_once(tmp_path: Path) -> None:
    page = make_one_size_report(tmp_path)
    html = page.read_text(encoding="utf-8")
    scaling = html.split("<h2>Scaling</h2>")[1].split("<h2>")[0]
    assert scaling.strip().count("<p>") == 1 and "fewer than 3 sizes (1): no fit" in scaling
    assert "scaling_verdict" not in html and "ee_share" not in html and "nan" not in scaling
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert sources and len(sources) == len(set(sources))


@pytest.mark.slow
@pytest.mark.parametrize("store", ["multi-size", "one-size"])
def test_report_renders_in_headless_chromium(tmp_path: Path, store: str) -> None:
    chromium = ensure_chromium()
    page = make_report(tmp_path) if store == "multi-size" else make_one_size_report(tmp_path)
    probe = page.with_name("probe.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", IMAGE_PROBE + "</body>"),
        encoding="utf-8",
    )

    def browse(*args: str) -> subprocess.CompletedProcess[str]:
        profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
        profile.mkdir()
        return subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=180,
        )

    dom = browse("--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'data-images="(\d+)/(\d+)"', dom.stdout)
    assert match, dom.stdout[-2000:]
    # Every <img> decoded, each figure drawn once (the summary's are linked from their sections).
    sources = re.findall(r'<img src="([^"]+)"', page.read_text(encoding="utf-8"))
    assert len(sources) == len(set(sources))
    if store == "multi-size":
        assert {Path(s).name for s in sources} == FIGURES
    else:
        assert not any("scaling" in s or "ee_share" in s for s in sources)
        assert "fewer than 3 sizes (1): no fit, no verdict and no figure" in dom.stdout
    assert match.group(1) == match.group(2) == str(len(sources))

    shot = tmp_path / "screenshot.png"
    taken = browse("--window-size=1400,2400", f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]  # (H, W, 3) floats in [0, 1]
    assert pixels.shape[:2] == (2400, 1400)
    assert pixels.std() > 0.05  # not a blank page
    # Tables and text are grey; the figures' lines and markers are the only saturated colour.
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert np.mean(saturation > 0.3) > 0.002

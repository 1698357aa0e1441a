"""bench.generation on a tiny preset model: both sides decode the same prompts, and at batch
size 1 (no padding) numsweep's generation gives exactly the plain loop's answers."""

from __future__ import annotations

import json
from pathlib import Path

from bench.generation import main


def test_both_sides_decode_the_same_prompts(tmp_path: Path) -> None:
    out = tmp_path / "generation.json"
    argv = ["--preset", "tiny", "--examples", "6", "--batch-sizes", "1", "3"]
    assert main([*argv, "--max-new-tokens", "4", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["examples"] == 6 and set(report["numsweep"]) == {"1", "3"}
    one = report["numsweep"]["1"]
    assert one["same_text"] == 6 and one["exact_match"] == report["plain"]["exact_match"]
    assert all(r["seconds"] > 0 and r["speedup"] > 0 for r in report["numsweep"].values())

"""Study 4's learning-rate rule (README, stage 1) as `numsweep sweep` overrides:

    python studies/scaling_code/lr_choice.py extend RESULTS
    -> experiment=scaling-code-lr-ext-1f2e3d4c grid.presets=["s"] grid.lrs={"s":[0.0003]}
       (nothing when every size's rate is inside)
    python studies/scaling_code/lr_choice.py chosen RESULTS
    -> grid.presets=["h32l1",...] grid.lrs={"h32l1":[0.01],...}   (each size's chosen rate)
    python studies/scaling_code/lr_choice.py family
    -> h16l1,h32l1,tiny,h64l3,xs,h128l5   (the study's sizes, for `analysis scaling --models`)

The choice per size is `python -m analysis scaling RESULTS --gate --pool-experiments` on the
grid's experiments: the rate with the lowest final held-out CE of seed 0 (the gate's seed-1
trials never move it, so a resumed gate stage gets the same rates); a diverged rate is tried and
worst. A size whose chosen rate is the lowest or highest it tried gets the next rate of the
half-decade ladder beyond it, at most MAX_EXTENSIONS times per size; `extend` exits 1 when a
size is still at an edge after them (the gate fails: the study is redesigned). Each extension
is an experiment of its own named by its rates (`scaling-code-lr-ext-<digest>`): run again after
an interruption, `extend` prints the same one and the sweep resumes it; after it, the next one.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from analysis.scaling import scaling
from analysis.scaling.settings import ScalingSettings
from records.reader import open_store

GRID_PREFIX = "scaling-code-lr"
"""The grid's experiments: `scaling-code-lr` (lr_grid.yaml), `scaling-code-lr-h16l1` (the size
added after stage 1) and the extensions."""
EXTENSION_PREFIX = "scaling-code-lr-ext-"
FAMILY = ("h16l1", "h32l1", "tiny", "h64l3", "xs", "h128l5")
"""The sizes of the study (README, "After stage 1": `s` left out, `h16l1` added)."""
BASE_GRID = (1e-3, 3e-3, 1e-2)
"""Stage 1's rates at every size (lr_grid.yaml)."""
MAX_EXTENSIONS = 2
"""Rates a size may get beyond BASE_GRID on one side."""


def ladder_step(rate: float, up: bool) -> float:
    """The next rate of the half-decade ladder (1, 3 per decade) above or below `rate`."""
    exponent = math.floor(math.log10(rate) + 1e-9)
    mantissa = rate / 10**exponent
    if up:
        nxt = (3, exponent) if mantissa < 2 else (1, exponent + 1)
    else:
        nxt = (1, exponent) if mantissa > 2 else (3, exponent - 1)
    return float(f"{nxt[0]}e{nxt[1]}")


def choices(results: str) -> list[dict[str, Any]]:
    """Per size (MLE, eval/test/ce): model, chosen lr, the rates tried and the lr's position."""
    found = Path(results, "experiments")
    experiments = sorted(p.name for p in found.glob(GRID_PREFIX + "*") if p.is_dir())
    gate = ScalingSettings(metrics=("eval/test/ce",), pool_experiments=True, gate_only=True)
    result = scaling(open_store(results, experiments), gate)
    table = next(t for t in result.tables if t.name == "scaling_gate_lr")
    rows = table.data.iter_rows(named=True)
    # FAMILY filters here, not by --models: before a size's grid has run it has no trial
    return [r for r in rows if r["loss"] == "mle" and r["model"] in FAMILY]


def extension(rows: list[dict[str, Any]]) -> tuple[dict[str, list[float]], list[str]]:
    """(the next rate of each size at an edge, the sizes at an edge with no extension left)."""
    more: dict[str, list[float]] = {}
    exhausted = []
    for r in rows:
        side = r["lr_position"]
        if side not in ("lowest", "highest"):
            continue
        up = side == "highest"
        beyond = [x for x in r["lrs_tried"] if (x > max(BASE_GRID) if up else x < min(BASE_GRID))]
        if len(beyond) >= MAX_EXTENSIONS:
            exhausted.append(f"{r['model']} ({side} of {r['lrs_tried']})")
        else:
            more[r["model"]] = [ladder_step(r["lr"], up)]
    return more, exhausted


def overrides(lrs: dict[str, list[float]], extension: bool) -> str:
    """`grid.lrs=…` as a shell word (JSON, which the sweep file's YAML reads); for an extension
    also its experiment's name and `grid.presets=…`."""
    rates = json.dumps(lrs, separators=(",", ":"), sort_keys=True)
    words = []
    if extension:
        digest = hashlib.sha256(rates.encode()).hexdigest()[:8]
        words.append(f"experiment={EXTENSION_PREFIX}{digest}")
        words.append(f"grid.presets={json.dumps(sorted(lrs), separators=(',', ':'))}")
    words.append(f"grid.lrs={rates}")
    return " ".join(words)


def main(argv: list[str]) -> int:
    if argv == ["family"]:
        print(",".join(FAMILY))
        return 0
    if len(argv) != 2 or argv[0] not in ("extend", "chosen"):
        sys.exit(__doc__)
    rows = choices(argv[1])
    if argv[0] == "chosen":
        # largest first: the longest trials start first
        ordered = sorted(rows, key=lambda r: -r["N"])
        presets = json.dumps([r["model"] for r in ordered], separators=(",", ":"))
        print(f"grid.presets={presets} " + overrides({r["model"]: [r["lr"]] for r in rows}, False))
        return 0
    more, exhausted = extension(rows)
    if more:
        print(overrides(more, extension=True))
    if exhausted:
        print(f"still at an edge after {MAX_EXTENSIONS} extensions: {exhausted}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

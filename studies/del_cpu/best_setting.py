"""Study 1's confirmation runs take DEL's (alpha, decay_base) from the search's best trial:
prints them as `numsweep sweep` overrides for `studies/del_cpu/confirm.yaml`.

    python studies/del_cpu/best_setting.py RESULTS
    -> grid.params.del.alpha=… grid.params.del.decay_base=…

The best trial is what `python -m analysis search RESULTS --experiment del-cpu-search
--objective eval/test/digit_acc:max` ranks first (the objective the search optimised).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tables import best_setting  # the study's own module, beside this file

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    alpha, beta = best_setting(sys.argv[1])
    print(f"grid.params.del.alpha={alpha!r} grid.params.del.decay_base={beta!r}")

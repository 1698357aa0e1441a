"""numsweep's orchestrator: the sweep file, the search space, the Tune driver, the Parquet sink
and the command line."""

import os

from compat.ray_private import LOOPBACK_ENV

# Ray reads the loopback switch (`compat.ray_private.LOOPBACK_ENV`) when first imported, so it is
# set here, before any orchestrator module imports ray; Ray's processes inherit it. Not set when
# joining an existing cluster.
if "RAY_ADDRESS" not in os.environ:
    for _key, _value in LOOPBACK_ENV.items():
        os.environ.setdefault(_key, _value)

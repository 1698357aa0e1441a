"""numsweep's orchestrator: the sweep file, the search space, the Tune driver, the Parquet sink
and the command line."""

import os

# Ray replaces a loopback node address with the host's routable one unless this (misleadingly
# named) switch turns its cluster mode off; with it, every port of an embedded Ray instance binds
# 127.0.0.1. Ray reads it when first imported, so it is set here, before any orchestrator module
# imports ray; Ray's processes inherit it. Not set when joining an existing cluster.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
if "RAY_ADDRESS" not in os.environ:
    for _key, _value in LOOPBACK_ENV.items():
        os.environ.setdefault(_key, _value)

"""`ray start` for a worker node of a cluster that lives on 127.0.0.1 only (cluster/local.sh).

Ray 2.60 cannot start a loopback-only multi-node cluster with its plain CLI:

- Without RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, Ray rewrites 127.0.0.1 (as a node address and as
  the head's address) to the host's routable address, so the nodes would listen on the network.
- With it, every address stays 127.0.0.1, but `ray start --address=…` refuses to start a worker
  node ("Multi-node Ray clusters are not supported on Windows and OSX").

The refusal and the address rewriting read the same flag (`ray_constants.ENABLE_RAY_CLUSTER`),
in different modules. So this runs Ray's own `ray` command with the environment variable at 0
(every address stays loopback, in this process and in every Ray process it starts) and shows
only the CLI module, `ray.scripts.scripts`, the flag as on, which lifts nothing but the refusal.
Real multi-host clusters never need this: their nodes have routable addresses.

    python cluster/loopback_ray.py start --address=127.0.0.1:PORT --node-ip-address=127.0.0.1 …
"""

from __future__ import annotations

import os
import sys
import types

FLAG = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def main() -> int:
    if os.environ.get(FLAG) != "0":
        sys.exit(f"loopback_ray.py: run with {FLAG}=0 (cluster/local.sh sets it)")
    import ray._private.ray_constants as ray_constants
    import ray.scripts.scripts as ray_cli

    class _CliConstants(types.ModuleType):
        """Ray's constants as the CLI module sees them: the real ones, but clusters allowed."""

        ENABLE_RAY_CLUSTER = True

        def __getattr__(self, name: str) -> object:
            return getattr(ray_constants, name)

    ray_cli.ray_constants = _CliConstants(ray_constants.__name__)
    sys.argv[0] = "ray"
    return ray_cli.main()


if __name__ == "__main__":
    sys.exit(main())

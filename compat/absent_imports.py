"""Importing a module while some others are marked absent, so that its optional
`try: import X` takes its fallback: for libraries that import a heavy client numsweep's process
never calls (DeepSpeed's autotuner and MLflow in a trial's worker,
`compat.deepspeed_private.import_deepspeed`; Ray Tune's usage tagging and the tracking clients in
the driver, `compat.ray_private.integrations_kept_out`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from types import ModuleType


def import_with_absent(module: str, absent: Sequence[str]) -> ModuleType:
    """`importlib.import_module(module)` with each name of `absent` not yet imported marked absent
    while it runs (`import name` raises ImportError); a name imported already stays as it is,
    and afterwards every one imports as usual."""
    hidden = [name for name in absent if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # `import name` raises ImportError while this holds
    try:
        return importlib.import_module(module)
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]

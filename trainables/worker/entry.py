"""The worker loop as Ray Train receives it: a function importable without torch, transformers or
DeepSpeed.

Ray pickles the train function by reference, so whichever process names it imports its module.
The trial's Tune driver only builds the Train run (`orchestrator.run.driver`); importing
`trainables.worker.loop` there (5 s of CPU for DeepSpeed, transformers and torch._dynamo) would be
paid again by every trial on top of the worker's own import. Only the Ray Train workers import
the loop itself. The names both sides of a report agree on live in
`trainables.worker.report_protocol`.
"""

from __future__ import annotations

from typing import Any


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """Run `trainables.worker.train_loop_per_worker` (see there) with the trial's config."""
    from trainables.worker.loop import train_loop_per_worker as loop

    loop(config)

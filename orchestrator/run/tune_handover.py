"""The hand-over of a trial's results from its Ray Train run to Ray Tune, without a deadlock.

In Ray 2.60 a Train run inside a Tune function trainable passes each report through a one-slot
queue between actors (`TuneReportCallback` in Train's controller puts it; the Tune trainable's
main thread takes it and puts it on the session's one-slot `result_queue`, which it then reads
itself). When the trainable function returns, Tune's wrapper puts a last `RESULT_DUPLICATE`
item on that same `result_queue`. If Tune's controller is slow to ask for the next result (slow
tracking callbacks: MLflow over HTTP, W&B starting a run), the Train run can finish while its
last report still waits in the inter-actor queue; the duplicate marker then fills
`result_queue`, and the main thread, moving the last report across, blocks forever on a full
queue that only it empties. (Reproduced with a Tune callback that takes 8 s per result: the
stock callback hangs, these two waits finish; tests/orchestrator/test_tune_handover.py.)

So the trainable, after `fit()`, returns only once Tune's main thread has taken every report:
both queues empty, and still so a moment later (the main thread moves a report from one queue to
the other in-process, in well under that moment). Waiting in the controller's callback instead
(until each report is taken) works too but stalls training on every slow Tune callback: the
tracking tests' sweep took 171 s instead of 91 s.
"""

from __future__ import annotations

import time

from compat.ray_private import tune_session_queues

# How often the wait looks again: each look at the inter-actor queue is one actor call.
POLL_S = 0.05
# How long both queues must stay empty: longer than the main thread's move of one report.
SETTLE_S = 0.25


def wait_for_tune() -> None:
    """In the trainable, after `fit()`: wait until Tune's main thread has taken every report,
    unless Tune is stopping the trial."""
    queues = tune_session_queues()
    empty_since = None
    while not queues.stopping():
        if not queues.empty():
            empty_since = None
        elif empty_since is None:
            empty_since = time.monotonic()
        elif time.monotonic() - empty_since >= SETTLE_S:
            return
        time.sleep(POLL_S)

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

So the controller's callback waits until Tune has taken each report off the queue, and the
trainable waits, after `fit()`, until nothing is left on either queue before it returns.
"""

from __future__ import annotations

import time
from typing import Any

from ray.train._internal.session import get_session
from ray.tune.integration.ray_train import TuneReportCallback

# How often the waits look again: each look at the inter-actor queue is one actor call.
POLL_S = 0.05


class TuneReportAndWait(TuneReportCallback):
    """`TuneReportCallback` that returns only once Tune's trainable has taken the report.

    Train's controller then cannot finish its run (and let `fit()` return) while its last
    report is still in the queue; the seconds its shutdown takes leave the trainable's main
    thread ample time to move that report on before the duplicate marker comes."""

    def after_report(
        self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any
    ) -> None:
        super().after_report(run_context, metrics, checkpoint)
        while not self._training_actor_item_queue.empty():
            time.sleep(POLL_S)


def wait_for_tune() -> None:
    """In the trainable, after `fit()`: wait until Tune's main thread has taken every report
    (neither queue holds one), unless Tune is stopping the trial."""
    session = get_session()
    inter_actor = session._inter_actor_queue
    while not session.stop_event.is_set():
        if (inter_actor is None or inter_actor.empty()) and session.result_queue.empty():
            return
        time.sleep(POLL_S)

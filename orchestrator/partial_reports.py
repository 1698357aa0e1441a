"""Ray Tune's Optuna searcher and ASHA scheduler, made to accept reports without their metric.

Not every report of a numsweep trial carries every metric: generation metrics come at chosen
steps, and a trial stopped for a non-finite loss reports only why. Tune's own OptunaSearch and
ASHAScheduler index each result by their metric and fail the whole sweep on such a report; these
judge the reports that carry it and let the others pass. Neither judges a report a resumed
trial sends again for a step it trained before (`REPLAYED_KEY`): it was judged then.
"""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import ASHAScheduler
from ray.tune.search.optuna import OptunaSearch

from trainables.report_protocol import REPLAYED_KEY


class ReportedOnlyOptunaSearch(OptunaSearch):
    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if result.get(REPLAYED_KEY) or (isinstance(self.metric, str) and self.metric not in result):
            return
        super().on_trial_result(trial_id, result)


class ReportedOnlyASHA(ASHAScheduler):
    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        if result.get(REPLAYED_KEY) or self.metric not in result:
            return self.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)

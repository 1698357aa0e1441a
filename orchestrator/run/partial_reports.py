"""Ray Tune's Optuna searcher and ASHA scheduler, made to accept reports without their metric.

Not every report of a numsweep trial carries every metric: generation metrics come at chosen
steps, and a trial stopped for a non-finite loss reports only why. Tune's own OptunaSearch and
ASHAScheduler index each result by their metric and fail the whole sweep on such a report; these
judge the reports that carry it and let the others pass. Neither judges a report a resumed
trial sends again for a step it trained before (`REPLAYED_KEY`): it was judged then.

The searcher also labels each Optuna trial it asks for with numsweep's trial id, its loss and
the experiment (Optuna user attributes, shown by optuna-dashboard), so a study's trials join the
Parquet rows.
"""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import ASHAScheduler
from ray.tune.search.optuna import OptunaSearch

from compat.ray_private import searcher_optuna_trial
from trainables.worker.report_protocol import REPLAYED_KEY


class ReportedOnlyOptunaSearch(OptunaSearch):
    def __init__(self, *args: Any, experiment: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.experiment = experiment

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        config = super().suggest(trial_id)
        ot_trial = searcher_optuna_trial(self, trial_id) if isinstance(config, dict) else None
        if ot_trial is not None:
            ot_trial.set_user_attr("trial_id", trial_id)
            ot_trial.set_user_attr("experiment", self.experiment)
            if "loss" in config:
                ot_trial.set_user_attr("loss", config["loss"])
        return config

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if result.get(REPLAYED_KEY) or (isinstance(self.metric, str) and self.metric not in result):
            return
        super().on_trial_result(trial_id, result)


class ReportedOnlyASHA(ASHAScheduler):
    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        if result.get(REPLAYED_KEY) or self.metric not in result:
            return self.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)

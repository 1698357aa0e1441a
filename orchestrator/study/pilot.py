"""The pilot's summary: the spread of each treatment's paired differences from the reference
on the primary metric (what sizes the main stage), and what a seed costs.

The pilot's store is read through the sequential replay (analysis.sequential.replay) with one
look at every pilot pair: the same arms, pairing, orientation and costs as the main stage's
looks, so the spread and the hours that size the design are those it will be judged and billed
by. Hours are trial-hours: the summed wall time of the trials (their own reports)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from analysis.sequential import DesignChoice, Question, replay
from orchestrator.study.errors import StudyError
from orchestrator.study.stages import arms_per_seed
from orchestrator.study.study_file import Study
from records.errors import ResultsError
from records.reader import open_store


@dataclass(frozen=True)
class PilotArm:
    arm: str
    reference: str
    pairs: int
    mean: float
    """Mean paired difference arm − reference, the metric's units."""
    sd: float
    """Standard deviation of the paired differences."""


@dataclass(frozen=True)
class PilotSummary:
    """What the pilot says for the design (recorded in the registration)."""

    experiment: str
    seeds: int
    arms: tuple[PilotArm, ...]
    trial_hours: float
    """Trial-hours of the pilot's paired trials."""
    hours_per_seed: float
    """Trial-hours of one seed of every arm of the main stage: the pilot's mean trial-hours a
    trial times the main stage's trials a seed (a pilot may run fewer arms than the main stage:
    `pilot.arms`, `pilot.params`)."""

    @property
    def sd(self) -> float:
        """The largest spread among the treatments: the design is sized for the hardest one."""
        return max(a.sd for a in self.arms)

    def as_json(self) -> dict[str, object]:
        doc = asdict(self)
        doc["sd"] = self.sd
        return doc


def question(study: Study, metric=None) -> Question:
    """The study's question of a store: the primary metric (or `metric`, a secondary)."""
    spec = study.spec
    m = metric or spec.primary
    return Question(
        m.metric, spec.sesoi, m.value, spec.reference, (), spec.hypotheses, m.direction,
        trend=m.trend,
    )  # fmt: skip


def summarise_pilot(root: str, study: Study) -> PilotSummary:
    """The pilot's spread and cost; StudyError when it cannot size a design."""
    n = len(study.spec.pilot.seeds)
    choice = DesignChoice(seeds=(n,), looks=1, spending="none", futility=False)
    try:
        r = replay(open_store(root, [study.pilot_experiment]), question(study), choice)
    except (ResultsError, ValueError) as err:
        raise StudyError(f"the pilot ({study.pilot_experiment} under {root}): {err}") from err
    arms = []
    for a in r.arms:
        look = a.looks[-1]
        if not look.sd > 0:
            raise StudyError(
                f"the pilot's {a.arm} − {a.reference} differences have no spread ({a.pairs} "
                "pairs): nothing to size a design from; give design.max_seeds"
            )
        arms.append(PilotArm(a.arm, a.reference, a.pairs, a.estimate, look.sd))
    if r.fixed_hours is None:
        raise StudyError(f"the pilot's trials reported no cost: {'; '.join(r.notes)}")
    per_trial = r.fixed_hours / r.fixed_trials  # a trend's seed is a trial at every size
    return PilotSummary(
        study.pilot_experiment, min(a.pairs for a in arms), tuple(arms), r.fixed_hours,
        per_trial * arms_per_seed(study),
    )  # fmt: skip

"""The main stage's design, sized from the pilot and priced in hours, and the budget check.

The maximum seeds come from analysis.sequential.plan (the fewest at which the study's own
t-scale sequential procedure reaches the power at the pilot's spread, by simulation) unless the
study file gives them; the fixed design's seeds (one look, same level, power and hypotheses)
from analysis.paired_power, as `python -m analysis power` computes them. With several treatments
both are sized at α over their number (`sizing_alpha`), the registered boundaries stay at α (the
replay applies Holm). A seed costs what the pilot's trials cost, a trial for every main-stage
arm. A design whose maximum costs more than `budget_hours` is refused with its numbers: to be
redesigned (a larger SESOI, a lower power, a bigger budget), never run underpowered."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from scipy.stats import chi2

from analysis.sequential import fixed_seeds, operating, plan, sequential_test
from analysis.sequential.design import SequentialTest
from orchestrator.study.errors import StudyError
from orchestrator.study.pilot import PilotSummary
from orchestrator.study.stages import treatments
from orchestrator.study.study_file import Study


@dataclass(frozen=True)
class MainDesign:
    """The registered design of the main stage (its boundaries and what it is expected to cost)."""

    seeds: tuple[int, ...]
    """Paired seeds at each look; the last is the maximum."""
    spending: str
    alpha: float
    power: float
    hypotheses: str
    futility: bool
    sesoi: float
    efficacy_z: tuple[float, ...]
    """Each look's efficacy boundary on the z scale."""
    efficacy_t: tuple[float, ...]
    """Carried to the t scale at the look's seeds (calibrated: analysis/sequential/small_n.py)."""
    futility_t: tuple[float, ...] | None
    alpha_spent: tuple[float, ...]
    sd: float
    """The paired differences' sd it was sized at (the pilot's, or its upper confidence limit
    with `design.sd_bound`)."""
    power_reached: float
    """Power at that sd, by simulation of the procedure at the sizing level (`sizing_alpha`)."""
    expected_seeds_at_zero: float
    expected_seeds_at_sesoi: float
    fixed_seeds: int | None
    """Seeds of the fixed design of the same sizing level, power and hypotheses."""
    hours_per_seed: float
    max_hours: float
    fixed_hours: float | None

    def as_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> MainDesign:
        tuples = ("seeds", "efficacy_z", "efficacy_t", "futility_t", "alpha_spent")
        return cls(**{k: tuple(v) if k in tuples and v is not None else v for k, v in doc.items()})

    def test(self) -> SequentialTest:
        return sequential_test(
            self.seeds,
            sesoi=self.sesoi,
            hypotheses=self.hypotheses,
            alpha=self.alpha,  # type: ignore[arg-type]
            spending=self.spending,
            power=self.power,
            futility=self.futility,
        )

    def look_hours(self, look: int) -> float:
        """What look `look` (1-based) adds, in trial-hours."""
        before = 0 if look == 1 else self.seeds[look - 2]
        return (self.seeds[look - 1] - before) * self.hours_per_seed


def design_sd(study: Study, pilot: PilotSummary) -> float:
    """The sd the design is sized at: the pilot's, or its upper confidence limit at
    `design.sd_bound` (s·√((n−1)/χ²_{1−level, n−1}) over the pilot's n pairs)."""
    level = study.spec.design.sd_bound
    if level is None:
        return pilot.sd
    df = pilot.seeds - 1
    return pilot.sd * math.sqrt(df / chi2.ppf(1 - level, df))


def sizing_alpha(study: Study) -> float:
    """The level the design is sized at: α over the treatments (Bonferroni: the first step of
    the Holm family the replay judges superiority in, so the seeds suffice whatever the other
    treatments do; conservative for equivalence, which each treatment is judged at α)."""
    return study.spec.alpha / max(1, treatments(study))


def _test(study: Study, pilot: PilotSummary) -> tuple[SequentialTest, float, float, float]:
    """The registered test (boundaries at α), its power at the sizing level, and its expected
    seeds at 0 and at SESOI."""
    spec, d = study.spec, study.spec.design
    sd = design_sd(study, pilot)
    kwargs = {
        "sesoi": spec.sesoi, "alpha": spec.alpha, "spending": d.spending, "power": spec.power,
        "hypotheses": spec.hypotheses, "futility": d.futility and d.spending != "none",
    }  # fmt: skip
    sizing = {**kwargs, "alpha": sizing_alpha(study)}
    looks = 1 if d.spending == "none" else d.looks
    try:
        seeds = d.look_seeds
        if seeds is None:
            seeds = plan(sd, looks=looks, seeds_per_look=d.seeds_per_look, **sizing).test.seeds  # type: ignore[arg-type]
        test = sequential_test(seeds, **kwargs)  # type: ignore[arg-type]
        sized = sequential_test(seeds, **sizing)  # type: ignore[arg-type]
    except ValueError as err:
        raise StudyError(f"{study.path}: design: {err}") from err
    zero, at = operating(sized, 0.0, sd), operating(sized, spec.sesoi, sd)
    reached = {
        "superiority": at.probability["superior"],
        "equivalence": zero.probability["equivalent"],
        "both": min(at.probability["superior"], zero.probability["equivalent"]),
    }[spec.hypotheses]
    zero, at = operating(test, 0.0, sd), operating(test, spec.sesoi, sd)
    return test, reached, zero.expected_seeds, at.expected_seeds


def size_design(study: Study, pilot: PilotSummary) -> MainDesign:
    """The main stage's design at the pilot's spread and cost."""
    spec = study.spec
    test, reached, e0, e1 = _test(study, pilot)
    sd = design_sd(study, pilot)
    fixed = fixed_seeds(sd, spec.sesoi, sizing_alpha(study), spec.power, spec.hypotheses)
    per_seed = pilot.hours_per_seed
    return MainDesign(
        test.seeds, test.design.spending, spec.alpha, spec.power, spec.hypotheses,
        test.futility_t is not None, spec.sesoi, test.design.upper, test.efficacy_t,
        test.futility_t, test.design.alpha_spent, sd, reached, e0, e1, fixed, per_seed,
        test.max_seeds * per_seed, None if fixed is None else fixed * per_seed,
    )  # fmt: skip


def check_budget(study: Study, design: MainDesign) -> None:
    """StudyError with the numbers when the design's maximum costs more than the budget."""
    budget = study.spec.budget_hours
    if design.max_hours <= budget:
        return
    fixed = (
        f"; the fixed design: {design.fixed_seeds} seeds, {design.fixed_hours:.3g} h"
        if design.fixed_hours is not None
        else ""
    )
    raise StudyError(
        f"{study.path}: budget_hours: the design needs up to {design.seeds[-1]} paired seeds "
        f"× {design.hours_per_seed:.3g} trial-hours a seed = {design.max_hours:.3g} h, over the "
        f"budget of {budget:g} h (expected {design.expected_seeds_at_zero:.1f} seeds at a true "
        f"difference of 0, {design.expected_seeds_at_sesoi:.1f} at the SESOI; sized at sd "
        f"{design.sd:.3g}, SESOI {design.sesoi:g}{fixed}). Redesign: a larger sesoi, a lower "
        "power, fewer design.max_seeds, or a larger budget_hours; nothing was registered"
    )

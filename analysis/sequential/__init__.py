"""Group-sequential studies of paired seeds: a study looks at its paired differences a few
planned times and stops at the first look that decides (docs/sequential.md).

Modules, bottom up:

- spending: Lan–DeMets α- (and β-) spending functions, O'Brien–Fleming-type and Pocock-type;
- boundaries: the z-scale design by recursive numerical integration: efficacy bounds, non-binding
  β-spending futility bounds, crossing probabilities, inflation factor (`group_sequential`);
- small_n: the bounds carried to paired t statistics at 2–20 seeds, calibrated so that the t tests
  spend the design's α exactly (`calibrated_bounds`);
- design: a study's `SequentialTest` (seeds per look, t bounds, hypotheses, SESOI);
- decision: what a look decides and its repeated confidence interval (`evaluate_look`);
- simulate: operating characteristics by simulation (`operating`);
- plan: seeds per look from a pilot's spread, against the fixed design (`plan`);
- replay: a design applied to a store already run, with its cost (`replay`);
- trend: a unit that is a seed across model sizes, its value the slope per decade of N;
- command: `python -m analysis sequential` and `sequential-replay`.

What a study runner calls (the orchestrator's `numsweep study`):

    test = sequential_test((3, 6, 9), sesoi=0.02, hypotheses="both", alpha=0.05)
    look = evaluate_look(test, 2, oriented_diffs_of_the_first_6_seeds)   # .decision, .stop, .ci
    p = plan(sd=0.0141, sesoi=0.02, looks=3, alpha=0.05, power=0.8)      # p.test.seeds, ...
    r = replay(store, Question(metric, sesoi, value), DesignChoice(seeds=(3, 6, 9)))
"""

from analysis.sequential.boundaries import Design, group_sequential
from analysis.sequential.decision import DECISIONS, Decision, LookResult, evaluate_look
from analysis.sequential.design import SequentialTest, looks_at, sequential_test
from analysis.sequential.plan import Plan, fixed_seeds, plan
from analysis.sequential.replay import DesignChoice, Question, Replay, replay
from analysis.sequential.simulate import Operating, operating

__all__ = [
    "DECISIONS",
    "Decision",
    "Design",
    "DesignChoice",
    "LookResult",
    "Operating",
    "Plan",
    "Question",
    "Replay",
    "SequentialTest",
    "evaluate_look",
    "fixed_seeds",
    "group_sequential",
    "looks_at",
    "operating",
    "plan",
    "replay",
    "sequential_test",
]

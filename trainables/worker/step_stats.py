"""What one training step measured, and the running means reported every `eval.every` steps."""

from __future__ import annotations

from dataclasses import dataclass, field

from records import metric_names as names


@dataclass(frozen=True)
class StepResult:
    """One optimizer step, summed over its micro-batches and all ranks."""

    loss: float
    """The step's loss: the token mean over the global batch."""
    parts: dict[str, float]
    """The loss's parts (`LossOutput.parts`), each the global batch's value."""
    n_tokens: float
    """Target tokens of the global batch."""
    n_inputs: float
    """Non-padding input tokens of the global batch."""
    grad_norm: float
    """Global gradient norm before clipping (NaN where DeepSpeed does not compute it)."""
    seconds: float
    """Wall time of the step: building its batches to the optimizer's update."""


@dataclass
class StepStats:
    """Sums over the steps since the last report (`add`), read as means (`metrics`)."""

    parts: tuple[str, ...]
    """The loss's part names: each is reported as `train/<part>`."""
    steps: int = 0
    loss: float = 0.0
    tokens: float = 0.0
    seconds: float = 0.0
    grad_norm: float = 0.0
    part_sums: dict[str, float] = field(default_factory=dict)

    def add(self, step: StepResult) -> None:
        self.steps += 1
        self.loss += step.loss
        self.tokens += step.n_tokens
        self.seconds += step.seconds
        self.grad_norm += step.grad_norm
        for part in self.parts:
            self.part_sums[part] = self.part_sums.get(part, 0.0) + step.parts[part]

    def metrics(self) -> dict[str, float]:
        """Mean loss, parts, gradient norm and step time since the last report, and tokens/s."""
        n = self.steps
        return {
            names.TRAIN_LOSS: self.loss / n,
            **{names.train_metric(p): self.part_sums[p] / n for p in self.parts},
            names.TRAIN_GRAD_NORM: self.grad_norm / n,
            names.TOKENS_PER_S: self.tokens / self.seconds,
            names.STEP_TIME_S: self.seconds / n,
        }

    def reset(self) -> None:
        self.steps, self.loss, self.tokens, self.seconds, self.grad_norm = 0, 0.0, 0.0, 0.0, 0.0
        self.part_sums = {}

"""The one record type every data source produces: a prompt, its reference answer, and the
numeric value of that answer when it has one."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Record:
    """One problem. Attribute access (`r.prompt`) and key access (`r["prompt"]`) both work, so
    records read like the dicts the `datasets` library yields."""

    prompt: str
    """The question as shown to the model (no answer)."""
    answer: str
    """The reference answer as a string (a number, a choice letter, a LaTeX expression)."""
    answer_value: float | None
    """The answer as a float when it is numeric, else None (choice letters, symbolic answers)."""
    source: str = ""
    """Where it came from, e.g. "gsm8k" or "mathgen/arithmetic__mul"."""
    target: str | None = None
    """The training target text when it differs from `answer` (a worked solution); None = answer."""

    def __getitem__(self, key: str) -> Any:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def completion(self) -> str:
        """The text a model is trained to produce after the prompt."""
        return self.answer if self.target is None else self.target

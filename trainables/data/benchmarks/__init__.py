"""Built-in benchmark sources (GSM8K, SVAMP, AQuA, MATH, MMLU math) as lists of `Record`s, plus
answer extraction from generated text and correctness per benchmark.

One module per benchmark defines a `Benchmark` (see `source.py`); `BENCHMARKS` maps the name to
it, so a new benchmark is one module and one line here.
"""

from __future__ import annotations

from pathlib import Path

from trainables.data.benchmarks import aqua, gsm8k, math500, mmlu, svamp
from trainables.data.benchmarks.source import (
    Benchmark,
    HubSplit,
    read_rows,
    records_from_rows,
    resolve_file,
)
from trainables.data.records import Record

BENCHMARKS: dict[str, Benchmark] = {
    module.BENCHMARK.name: module.BENCHMARK for module in (gsm8k, svamp, aqua, math500, mmlu)
}


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called `name`; ValueError naming it and the known ones."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS))}")
    return BENCHMARKS[name]


def load_benchmark(name: str, path: str | Path | None) -> list[Record]:
    """All records of benchmark `name` from `path` (its file, or a folder holding the usual file
    name). With `path=None` the Hugging Face hub copy is loaded through `datasets` when that
    package is installed; otherwise the error says to pass a local path."""
    benchmark = get_benchmark(name)
    if path is None:
        return _load_from_hub(benchmark)
    file = resolve_file(benchmark, path)
    return records_from_rows(benchmark, read_rows(file), str(file))


def _load_from_hub(benchmark: Benchmark) -> list[Record]:
    try:
        import datasets  # optional: not a numsweep dependency
    except ImportError as err:
        raise ValueError(
            f"benchmark {benchmark.name!r}: no path given and the `datasets` package is not "
            f"installed to fetch {benchmark.hub[0].path!r} from the Hugging Face hub; pass a "
            f"local path to {benchmark.file_names[0]} (or a folder holding it)"
        ) from err
    rows = []
    for split in benchmark.hub:
        data = datasets.load_dataset(split.path, split.config, split=split.split)
        origin = f"hub:{split.path}/{split.config or ''}/{split.split}"
        rows.extend((dict(row), f"{origin}[{i}]") for i, row in enumerate(data))
    return records_from_rows(benchmark, rows, f"the hub copy {benchmark.hub[0].path!r}")


def extract_answer(name: str, text: str) -> str | None:
    """The answer generated `text` gives for benchmark `name`, as a string comparable with
    `Record.answer` (a number as written, a choice letter, or a LaTeX expression); None when
    the text gives none."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return get_benchmark(name).extract_answer(text)


def is_correct(name: str, text: str, record: Record) -> bool:
    """Whether generated `text` answers `record` of benchmark `name` correctly: numeric
    comparison for GSM8K and SVAMP, the letter for AQuA and MMLU, and for MATH a normalised
    string comparison of the boxed answer (numeric when both sides are numbers)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return get_benchmark(name).is_correct(text, record)


__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "HubSplit",
    "extract_answer",
    "get_benchmark",
    "is_correct",
    "load_benchmark",
]

"""Generated problems cached on disk, so the trials of a sweep generate each split once.

`mathgen.generate` is a pure function of its arguments, but slow (sympy: about 1.5 ms a problem,
so 2–3 s of a small trial's start for 2,000 training problems), and every trial of a search
asks for the same splits. The first trial to need a split writes it to
``cache_dir/mathgen/<split>-<n>-<key>.jsonl``; ``key`` hashes everything the problems depend on
(the arguments, the source of `trainables.data.mathgen` and of its shims
`compat.mathgen_private`, the versions of the generator, sympy and numpy), so a change to any of
them makes a new entry instead of reusing a stale one. A writer fills a temporary file and renames
it into place, so concurrent trials never read a half-written file: the last rename wins, and every
writer's file holds the same lines.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from compat import mathgen_private
from trainables.data import mathgen
from trainables.data.records import Record

_FORMAT_VERSION = 1


@functools.cache
def _generator_fingerprint() -> dict[str, str]:
    # Both sources: the shims decide what the generator draws as much as mathgen does.
    source = b"".join(Path(m.__file__).read_bytes() for m in (mathgen, mathgen_private))
    versions = {
        name: importlib.metadata.version(name) for name in ("mathematics_dataset", "sympy", "numpy")
    }
    return {"mathgen_source": hashlib.sha256(source).hexdigest(), **versions}


def cache_path(
    cache_dir: str | Path,
    modules: Sequence[str],
    n: int,
    split: str,
    seed: int,
    difficulty: str = "full",
) -> Path:
    """Where `generate(modules, n, split, seed, difficulty)` is cached under `cache_dir`."""
    spec = {
        "format": _FORMAT_VERSION,
        "modules": list(modules),
        "n": n,
        "split": split,
        "seed": seed,
        **_generator_fingerprint(),
    }
    if difficulty != "full":  # "full" keeps the keys written before difficulties existed
        spec["difficulty"] = difficulty
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir) / "mathgen" / f"{split}-{n}-{key}.jsonl"


def generate(
    modules: Sequence[str],
    n: int,
    split: mathgen.Split,
    seed: int,
    cache_dir: str | Path | None,
    difficulty: mathgen.Difficulty = "full",
) -> list[Record]:
    """`mathgen.generate(modules, n, split, seed, difficulty)`, read from the cache under
    `cache_dir` when it is there (written there when not); `cache_dir=None` generates without a
    cache."""
    if cache_dir is None:
        return mathgen.generate(modules, n, split, seed, difficulty)
    path = cache_path(cache_dir, modules, n, split, seed, difficulty)
    if path.is_file():
        return [Record(**json.loads(line)) for line in path.read_text().splitlines()]
    records = mathgen.generate(modules, n, split, seed, difficulty)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.writelines(json.dumps(r.to_dict()) + "\n" for r in records)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return records

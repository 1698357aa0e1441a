"""A text/code corpus from local files (`data.source: text_files`), for language-model training.

    data: {source: text_files, paths: ["{stdlib}/**/*.py"], exclude: ["*/test/*"], n_test: 40}

- Files: every file matching a glob of `data.paths` (`**` recursive) and none of the fnmatch
  patterns of `data.exclude`, sorted by path, each once. `{stdlib}` in a glob is the running
  interpreter's standard library directory (`sysconfig.get_paths()["stdlib"]`), present on every
  machine with Python, so such a corpus needs no download; the file list with each file's
  sha256 goes into the experiment manifest (`corpus_manifest`).
- Documents: one per file (bytes decoded as UTF-8, undecodable bytes replaced).
- Split by document: a permutation of the documents seeded by the trial's data seed; the first
  `n_test` are held out, the next (at most `n_train`) are trained on. No file is in both.
- Packing: each side's documents, in that order, become one token stream (bos, the document's
  tokens, eos, the next document, …) cut into sequences of exactly `max_length` tokens (the
  last partial one is dropped). Every token is scored (labels = input ids: no prompt masking;
  the model predicts each token from the ones before it in the sequence).

Nothing here trains a tokenizer (`trainables.models.text_tokenizer` does, on the training
documents) or knows about models.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import random
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainables.config import DataConfig

STDLIB = "{stdlib}"
"""Placeholder in `data.paths`: the running interpreter's standard library directory."""


@dataclass(frozen=True)
class Document:
    """One file of the corpus."""

    path: str
    sha256: str
    text: str


def stdlib_dir() -> str:
    """The standard library directory of the running interpreter."""
    return sysconfig.get_paths()["stdlib"]


def expand_glob(pattern: str) -> str:
    """A `data.paths` glob with its placeholder filled in (and `~` expanded)."""
    return str(Path(pattern.replace(STDLIB, stdlib_dir())).expanduser())


def corpus_files(data: DataConfig) -> list[Path]:
    """The corpus's files, sorted; ValueError naming `data.paths` when a glob matches nothing
    (after `data.exclude`)."""
    found: set[str] = set()
    for pattern in data.paths:
        matched = [p for p in glob.glob(expand_glob(pattern), recursive=True) if Path(p).is_file()]
        kept = [p for p in matched if not any(fnmatch.fnmatch(p, x) for x in data.exclude)]
        if not kept:
            raise ValueError(
                f"data.paths: {pattern!r} ({expand_glob(pattern)}) matches no file"
                + (" outside data.exclude" if matched else "")
            )
        found.update(str(Path(p).resolve()) for p in kept)
    return [Path(p) for p in sorted(found)]


def read_documents(data: DataConfig) -> list[Document]:
    """Every corpus file as a document, in path order."""
    documents = []
    for path in corpus_files(data):
        raw = path.read_bytes()
        text = raw.decode("utf-8", errors="replace")
        documents.append(Document(str(path), hashlib.sha256(raw).hexdigest(), text))
    return documents


def split_documents(
    documents: Sequence[Document], data: DataConfig, seed: int
) -> tuple[list[Document], list[Document]]:
    """(training documents, held-out documents): a permutation seeded by `seed` (the data seed),
    the first `n_test` held out, the next `n_train` at most trained on."""
    if len(documents) <= data.n_test:
        raise ValueError(
            f"data.paths: {len(documents)} files, not more than data.n_test={data.n_test} "
            "(n_test documents are held out for evaluation)"
        )
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    held_out = [documents[i] for i in order[: data.n_test]]
    train = [documents[i] for i in order[data.n_test :][: data.n_train]]
    return train, held_out


def pack(tokenizer: Any, documents: Sequence[Document], max_length: int) -> list[dict]:
    """Sequences of exactly `max_length` tokens from the documents' token stream (bos, tokens,
    eos per document), every token scored: `{"input_ids": ids, "labels": ids}`."""
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    if bos is None or eos is None:
        raise ValueError("packing needs a tokenizer with bos and eos tokens")
    encoded = tokenizer([d.text for d in documents], add_special_tokens=False)["input_ids"]
    stream: list[int] = []
    for ids in encoded:
        stream.extend([bos, *ids, eos])
    sequences = []
    for start in range(0, len(stream) - max_length + 1, max_length):
        chunk = stream[start : start + max_length]
        sequences.append({"input_ids": chunk, "labels": list(chunk)})
    return sequences


def corpus_manifest(data: DataConfig) -> dict[str, Any]:
    """What the experiment manifest records about a text corpus: the globs as given and as
    expanded, the standard library directory, and every file with its size and sha256."""
    files = [
        {"path": str(path), "bytes": path.stat().st_size, "sha256": _sha256(path)}
        for path in corpus_files(data)
    ]
    listing = "\n".join(f"{f['sha256']}  {f['path']}" for f in files)
    return {
        "paths": list(data.paths),
        "expanded": [expand_glob(p) for p in data.paths],
        "exclude": list(data.exclude),
        "stdlib": stdlib_dir(),
        "n_files": len(files),
        "sha256": hashlib.sha256(listing.encode()).hexdigest(),
        "files": files,
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

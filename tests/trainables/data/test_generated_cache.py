"""The on-disk cache of generated problems: the same records as the generator, read back instead
of generated again, a new entry for any other argument, and no half-written file."""

from __future__ import annotations

import pytest

from trainables.config import TrialConfig
from trainables.data import generated_cache, mathgen
from trainables.worker.trial_inputs import held_out_split

MODULES = ["arithmetic__add_or_sub", "numbers__round_number"]


def test_a_cached_split_is_the_generated_split(tmp_path, monkeypatch):
    first = generated_cache.generate(MODULES, 12, "train", 3, tmp_path)
    assert first == mathgen.generate(MODULES, 12, "train", 3)
    path = generated_cache.cache_path(tmp_path, MODULES, 12, "train", 3)
    assert path.is_file() and len(path.read_text().splitlines()) == 12

    def no_generation(*args, **kwargs):
        raise AssertionError("generated again instead of read from the cache")

    monkeypatch.setattr(mathgen, "generate", no_generation)
    assert generated_cache.generate(MODULES, 12, "train", 3, tmp_path) == first
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no staging file


@pytest.mark.parametrize(
    "other",
    [
        (MODULES[:1], 12, "train", 3),
        (MODULES, 13, "train", 3),
        (MODULES, 12, "test", 3),
        (MODULES, 12, "train", 4),
    ],
)
def test_every_argument_is_part_of_the_key(tmp_path, other):
    assert generated_cache.cache_path(tmp_path, *other) != generated_cache.cache_path(
        tmp_path, MODULES, 12, "train", 3
    )


def test_the_generators_source_is_part_of_the_key(tmp_path, monkeypatch):
    before = generated_cache.cache_path(tmp_path, MODULES, 12, "train", 3)
    fingerprint = {**generated_cache._generator_fingerprint(), "mathgen_source": "edited"}
    monkeypatch.setattr(generated_cache, "_generator_fingerprint", lambda: fingerprint)
    assert generated_cache.cache_path(tmp_path, MODULES, 12, "train", 3) != before


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def failed_rename(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(generated_cache.os, "replace", failed_rename)
    with pytest.raises(OSError, match="disk full"):
        generated_cache.generate(MODULES, 4, "train", 0, tmp_path)
    assert list((tmp_path / "mathgen").iterdir()) == []  # the staging file went too


def test_trials_read_their_splits_through_the_cache(tmp_path):
    config = TrialConfig.model_validate(
        {"cache_dir": str(tmp_path), "data": {"modules": MODULES, "n_train": 10, "n_test": 4}}
    )
    train, test = held_out_split(config.data, config.seed, config.cache_dir)
    assert (train, test) == held_out_split(config.data, config.seed)  # uncached: the same
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "mathgen").iterdir()) == [
        "test",
        "train",
    ]

"""all_reduce of the metric accumulators over two real gloo processes: the reduced metrics on every
rank equal the single-process metrics of the union of the ranks' data."""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from trainables.losses.vocab import NumberVocab
from trainables.metrics import CEDecomposition, DigitMetrics, PlaceAccuracy

WORLD = 2
VOCAB = NumberVocab(digit_ids=list(range(10)), dot_id=10)
V = 12


def _rank_data(rank: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Two batches per rank, of different shapes on each rank; rank 1 also has a batch with
    every label ignored."""
    gen = torch.Generator().manual_seed(100 + rank)
    batches = []
    for b, t in [(2, 7 + rank), (3, 5)]:
        labels = torch.randint(0, V, (b, t), generator=gen)
        batches.append((torch.randn(b, t, V, generator=gen) * 2, labels))
    if rank == 1:
        batches.append((torch.randn(1, 4, V, generator=gen), torch.full((1, 4), -100)))
    return batches


_PAIRS = [
    [("The answer is 12.5", 12.5), ("7", "17")],
    [("nothing", 3), ("1,234", 1234), ("0.25", "0.5")],
]


def _same(a: dict[str, float], b: dict[str, float]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if math.isnan(b[key]):
            assert math.isnan(a[key]), key
        else:
            assert abs(a[key] - b[key]) <= 1e-9 * max(1.0, abs(b[key])), (key, a[key], b[key])


def _worker(rank: int, init_file: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        # Reference: one process sees every rank's data.
        ref_dec, ref_dm, ref_pa = CEDecomposition(), DigitMetrics(VOCAB), PlaceAccuracy()
        for r in range(WORLD):
            for logits, labels in _rank_data(r):
                ref_dec.update(logits, labels)
                ref_dm.update(logits, labels)
            for pred, ref in _PAIRS[r]:
                ref_pa.update(pred, ref)

        dec, dm, pa = CEDecomposition(), DigitMetrics(VOCAB), PlaceAccuracy()
        for logits, labels in _rank_data(rank):
            dec.update(logits, labels)
            dm.update(logits, labels)
        for pred, ref in _PAIRS[rank]:
            pa.update(pred, ref)
        local_tokens = dec.compute()["n_tokens"]
        dec.all_reduce()
        dm.all_reduce()
        pa.all_reduce()
        _same(dec.compute(), ref_dec.compute())
        _same(dm.compute(), ref_dm.compute())
        _same(pa.compute(), ref_pa.compute())
        assert dec.compute()["n_tokens"] > local_tokens

        # A rank that saw nothing still takes part and learns the vocabulary size.
        empty_or_not = CEDecomposition()
        if rank == 0:
            empty_or_not.update(*_rank_data(0)[0])
        empty_or_not.all_reduce()
        want = CEDecomposition()
        want.update(*_rank_data(0)[0])
        _same(empty_or_not.compute(), want.compute())

        # Ranks that disagree on the vocabulary size all raise (none hangs).
        mismatch = CEDecomposition()
        mismatch.update(torch.randn(1, 3, V + rank), torch.tensor([[0, 1, 2]]))
        try:
            mismatch.all_reduce()
        except ValueError as err:
            assert "disagree on the vocabulary size" in str(err)
        else:
            raise AssertionError("all_reduce accepted different vocabulary sizes")
    finally:
        dist.destroy_process_group()


def test_all_reduce_over_two_gloo_ranks(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(str(tmp_path / "init"),), nprocs=WORLD, join=True)


def test_one_rank_reduces_without_a_collective(tmp_path: Path) -> None:
    """A trial with one worker still has a (gloo) process group; its sums are the values
    themselves, so no collective runs (gloo's round trip is pure per-step overhead there)."""
    from trainables.metrics.distributed import sum_across_ranks

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        values = torch.tensor([1.5, 2.0], dtype=torch.float64)
        assert sum_across_ranks(values) is values  # the same tensor: nothing was sent
        assert sum_across_ranks([3.0, 4.0]) == [3.0, 4.0]
    finally:
        dist.destroy_process_group()

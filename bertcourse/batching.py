"""Batches for training: trimmed padding, similar lengths, one share per process.

* :func:`trim_batch` drops the padding columns that no pair of a batch uses;
* :class:`LengthBucketSampler` / :func:`bucketed_loader` batch examples of similar length, so
  that trimming removes most of the padding (and, with ``world_size > 1``, give every
  process of a data-parallel run its own share of the batches: chapter 14);
* :func:`shard_batches`: that share.

None of them changes a number the model computes (``tests/test_batching.py``).
"""
from __future__ import annotations

import math

import torch

from ._checks import check_bool, check_int_list, check_positive_int, shape_str
from .data import check_batch

__all__ = ["trim_batch", "shard_batches", "LengthBucketSampler", "bucketed_loader", "length_loader"]


def trim_batch(batch: dict) -> dict:
    """Cut the padding columns that no sequence of the batch uses.

    The dataset pads every pair to ``max_len``; the corpus' pairs are much shorter, so a
    batch whose longest pair has 30 tokens can drop the other 34 columns: padded keys get
    attention weight 0 and padded positions are never predicted, so every real position
    computes exactly the same thing — only faster. ``tokens``/``segments`` become
    ``(batch, longest)``; the other entries are unchanged.
    """
    check_batch(batch)
    longest = int(batch["valid_lens"].max()) if batch["valid_lens"].numel() else 1
    longest = max(longest, 1)
    if longest >= batch["tokens"].shape[1]:
        return batch
    out = dict(batch)
    out["tokens"] = batch["tokens"][:, :longest]
    out["segments"] = batch["segments"][:, :longest]
    return out


# ---------------------------------------------------------------------------------------
# Batches of similar length, for one process or for each process of a data-parallel run
# ---------------------------------------------------------------------------------------

def shard_batches(batches: list, world_size: int, rank: int) -> list:
    """Process ``rank``'s share of one epoch's ``batches`` in a data-parallel run of
    ``world_size`` processes: batches ``rank, rank + world_size, rank + 2 * world_size, ...``,
    after leaving out the last ``len(batches) % world_size``. Every process gets the same
    number of batches, and no batch goes to two processes."""
    check_positive_int("world_size", world_size)
    check_positive_int("rank", rank, allow_zero=True)
    if rank >= world_size:
        raise ValueError(f"rank must be in 0..world_size-1 = 0..{world_size - 1}, got {rank}")
    usable = len(batches) // world_size * world_size
    return list(batches[:usable][rank::world_size])


class LengthBucketSampler(torch.utils.data.Sampler):
    """Batches of indices in which the pairs have similar lengths.

    Each epoch: shuffle all indices, cut them into pools of ``pool_batches * batch_size``,
    sort each pool by length, cut it into batches, and shuffle the batches. Every pair is
    still seen once per epoch in a random batch, but a batch of short pairs no longer pays
    for the padding of one long pair (see :func:`trim_batch`). ``lengths[i]`` is the
    length of example ``i``; ``generator`` makes the order repeatable.

    Data parallelism (chapter 14): with ``world_size`` processes, each builds the same
    sampler with the same seed, so all draw the same epoch order; process ``rank`` then
    takes its share (:func:`shard_batches`: batches ``rank, rank + world_size, ...``). The
    last ``len % world_size`` batches of an epoch are left out (other ones each epoch), so
    every process has the same number of batches: a process that ran out early would leave
    the others waiting for it forever.
    """

    def __init__(self, lengths, batch_size: int, pool_batches: int = 50, generator=None,
                 world_size: int = 1, rank: int = 0):
        check_positive_int("batch_size", batch_size)
        check_positive_int("pool_batches", pool_batches)
        check_positive_int("world_size", world_size)
        check_positive_int("rank", rank, allow_zero=True)
        if rank >= world_size:
            raise ValueError(f"rank must be in 0..world_size-1 = 0..{world_size - 1}, got {rank}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        if isinstance(lengths, torch.Tensor) and lengths.is_floating_point() and torch.equal(lengths, lengths.round()):
            lengths = lengths.long()      # torch.ones(n): whole numbers in a float tensor are lengths too
        self.lengths = torch.tensor(check_int_list("lengths", lengths, low=0), dtype=torch.long)
        if self.lengths.dim() != 1 or len(self.lengths) == 0:
            raise ValueError(f"lengths must be a non-empty 1-D sequence, got shape {shape_str(self.lengths)}")
        self.batch_size, self.pool_batches = batch_size, pool_batches
        self.world_size, self.rank = world_size, rank
        if self._all_batches() < world_size:
            raise ValueError(f"{len(self.lengths)} examples make {self._all_batches()} batches of "
                             f"{batch_size}: too few for world_size={world_size} processes")
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)

    def _all_batches(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __len__(self) -> int:
        return self._all_batches() // self.world_size

    def __iter__(self):
        n, pool = len(self.lengths), self.batch_size * self.pool_batches
        order = torch.randperm(n, generator=self.generator)
        batches = []
        for s in range(0, n, pool):
            idx = order[s:s + pool]
            idx = idx[torch.argsort(self.lengths[idx], stable=True)]
            batches += [idx[i:i + self.batch_size].tolist() for i in range(0, len(idx), self.batch_size)]
        shuffled = [batches[b] for b in torch.randperm(len(batches), generator=self.generator).tolist()]
        yield from shard_batches(shuffled, self.world_size, self.rank)             # this process' share


def bucketed_loader(dataset, batch_size: int, seed: int = 0, pool_batches: int = 50,
                    world_size: int = 1, rank: int = 0):
    """A training DataLoader over a :class:`~bertcourse.data.PretrainDataset` whose batches
    hold pairs of similar length (:class:`LengthBucketSampler`), seeded by ``seed``. With
    ``world_size`` processes, process ``rank`` gets its share (every process must pass the
    same ``seed``)."""
    check_positive_int("seed", seed, allow_zero=True)
    lengths = getattr(dataset, "lengths", None)   # a PretrainDataset knows them; others are read
    if lengths is None:
        lengths = [int(dataset[i]["valid_lens"]) for i in range(len(dataset))]
    sampler = LengthBucketSampler(lengths, batch_size, pool_batches, torch.Generator().manual_seed(seed),
                                  world_size=world_size, rank=rank)
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler)


def length_loader(dataset, collate, batch_size: int, shuffle: bool = False, seed: int = 0,
                  by_length: bool = False) -> torch.utils.data.DataLoader:
    """The fine-tuning chapters' DataLoader over a labelled ``dataset`` that knows its examples'
    ``lengths``, with ``collate`` padding each batch to its longest example.

    ``shuffle=True`` (training): every epoch visits each example once, in batches of similar
    length (:class:`LengthBucketSampler`, 20 batches to a pool, seeded by ``seed``).
    ``shuffle=False`` (evaluation): the dataset's order or, with ``by_length=True``, shortest
    first (equal lengths in their order): an accuracy does not depend on the order, and
    similar lengths pad little."""
    check_bool("shuffle", shuffle)
    check_bool("by_length", by_length)
    if shuffle and by_length:
        raise ValueError("by_length=True orders the batches of an evaluation (shuffle=False); with "
                         "shuffle=True the training batches are already of similar lengths")
    check_positive_int("seed", seed, allow_zero=True)
    check_positive_int("batch_size", batch_size)
    if shuffle:
        sampler = LengthBucketSampler(dataset.lengths, batch_size, pool_batches=20,
                                      generator=torch.Generator().manual_seed(seed))
        return torch.utils.data.DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)
    order = torch.argsort(torch.as_tensor(dataset.lengths), stable=True).tolist() if by_length else None
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=order, collate_fn=collate)

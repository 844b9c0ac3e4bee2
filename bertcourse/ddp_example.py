"""Chapter 14: the standard DDP training script, in plain PyTorch, on a toy problem.

    torchrun --standalone --nproc-per-node=2 -m bertcourse.ddp_example --out runs/ddp-toy

This is the shape most data-parallel PyTorch scripts have (PyTorch's own DDP tutorial series,
*Multi GPU training with DDP*, teaches it): join the process group that ``torchrun``
prepared, give every rank its own shard of the data with ``DistributedSampler``, wrap the
model in ``DistributedDataParallel``, call ``sampler.set_epoch(epoch)`` every epoch, print and
save on rank 0 only, leave the group in a ``finally``. The course's own trainer
(:class:`~bertcourse.training.Trainer`) does the same jobs for BERT, with its own sampler;
here they are in one function, :func:`train`, small enough to read at once.

The task is tiny on purpose (a two-layer classifier on generated points, a few seconds on
two CPU cores, no dropout): the subject is the idiom, and the tests
(``tests/test_ddp_example.py``) check it against one process that trains on the same
examples with twice the batch. ``--trace`` makes rank 0 also save what every rank saw (the
examples of each batch, the final weights) in ``trace.pt``, for those tests and chapter 14.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from ._checks import check_positive_int
from .cli import Parser, UsageError, add_device_option, check_writable, nonnegative_int, positive_float, \
    positive_int, run_cli
from .distributed import backend_for, launched_by_torchrun, resolve_device

__all__ = ["toy_data", "toy_model", "train", "main"]

FEATURES, CLASSES = 8, 2


def toy_data(num_examples: int, seed: int = 0) -> TensorDataset:
    """``num_examples`` points of ``FEATURES`` numbers, labelled by the side of a fixed random
    plane they fall on: ``(x, y, index)`` per example, shapes ``(FEATURES,)``, ``()``, ``()``.
    The index rides along so that a rank can report which examples it trained on. The same
    ``seed`` gives the same data in every process."""
    check_positive_int("num_examples", num_examples)
    check_positive_int("seed", seed, allow_zero=True)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(num_examples, FEATURES, generator=g)
    y = (x @ torch.randn(FEATURES, generator=g) > 0).long()
    return TensorDataset(x, y, torch.arange(num_examples))


def toy_model(seed: int = 0) -> nn.Module:
    """A two-layer classifier ``(batch, FEATURES) -> (batch, CLASSES)``, initialised from
    ``seed`` (no dropout: two runs on the same examples compute the same numbers)."""
    check_positive_int("seed", seed, allow_zero=True)
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, CLASSES))


def train(args) -> None:
    """One rank of ``torchrun --nproc-per-node=N -m bertcourse.ddp_example``: ``args`` are the
    parsed options (``out``, ``examples``, ``batch_size``, ``epochs``, ``lr``, ``seed``,
    ``device``, ``trace``)."""
    # torchrun started N copies of this program and set, in each one, RANK (0..N-1),
    # LOCAL_RANK (its number on this machine), WORLD_SIZE (N) and MASTER_ADDR/MASTER_PORT
    # (where rank 0 waits for the others). init_process_group reads them (init_method="env://").
    device = resolve_device(args.device)       # "cuda" -> cuda:LOCAL_RANK: one GPU per process
    if device.type == "cuda":
        torch.cuda.set_device(device)          # NCCL talks through the current GPU
    dist.init_process_group(backend=backend_for(device))     # gloo on CPUs, NCCL on GPUs
    try:
        rank, world_size = dist.get_rank(), dist.get_world_size()
        dataset = toy_data(args.examples, args.seed)           # the same data in every process
        # each rank its own part of every epoch: the same shuffle (same seed) on every rank,
        # then every N-th example; padded with repeats so that all ranks get as many
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
        loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)   # no shuffle=: sampler does it
        model = toy_model(args.seed).to(device)
        # DDP copies rank 0's weights to every rank now, and averages the gradients in backward()
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
        if rank == 0:       # rank 0 alone prints: N ranks would print every line N times
            print(f"{world_size} process{'es' if world_size > 1 else ''} ({dist.get_backend()}): {len(sampler)} "
                  f"examples per rank and epoch, {len(loader)} batches of up to {args.batch_size}; "
                  f"global batch {world_size * args.batch_size}", flush=True)
        seen = []                              # [epoch][batch] -> example indices (for --trace)
        for epoch in range(args.epochs):
            sampler.set_epoch(epoch)           # a new shuffle each epoch; without it every epoch repeats epoch 0
            seen.append([])
            total = torch.zeros(2, device=device)          # loss sum and examples, for the log
            for x, y, index in loader:
                x, y = x.to(device), y.to(device)
                loss = F.cross_entropy(model(x), y)        # the mean over this rank's batch
                optimizer.zero_grad()
                loss.backward()                # DDP all-reduces the gradients here: their mean over the ranks
                optimizer.step()               # the same step on every rank: the copies stay equal
                total += torch.stack([loss.detach() * len(y), torch.tensor(float(len(y)), device=device)])
                seen[-1].append(index.tolist())
            dist.all_reduce(total)             # sums over the ranks, so that rank 0 logs every rank's loss
            if rank == 0:
                print(f"epoch {epoch}: mean loss {total[0].item() / total[1].item():.4f} "
                      f"over {int(total[1].item())} examples", flush=True)
        if args.trace:                         # every rank's record, gathered to rank 0
            record = {"rank": rank, "batches": seen,
                      "weights": {k: v.cpu() for k, v in model.module.state_dict().items()}}
            records = [None] * world_size
            dist.all_gather_object(records, record)
            if rank == 0:
                torch.save(records, os.path.join(args.out, "trace.pt"))
        if rank == 0:       # one writer: N ranks would write the same file at the same time
            # model.module: the model inside the wrapper, so the names have no "module." prefix
            torch.save(model.module.state_dict(), os.path.join(args.out, "model.pt"))
            print(f"saved model.module's weights to {os.path.join(args.out, 'model.pt')}", flush=True)
    finally:
        dist.destroy_process_group()           # also after an error: free the backend's resources


def _parser() -> Parser:
    p = Parser(prog="torchrun --nproc-per-node=N -m bertcourse.ddp_example",
               description="The standard DistributedDataParallel training script (chapter 14), on a toy "
                           "classifier: DistributedSampler, set_epoch, rank-0-only printing and saving.")
    p.add_argument("--out", required=True, help="folder for model.pt (and trace.pt); created if needed")
    p.add_argument("--examples", type=positive_int("--examples"), default=96,
                   help="examples in the generated dataset (default: 96)")
    p.add_argument("--batch-size", type=positive_int("--batch-size"), default=8,
                   help="examples per batch and process (default: 8; the global batch is N times this)")
    p.add_argument("--epochs", type=positive_int("--epochs"), default=3, help="epochs (default: 3)")
    p.add_argument("--lr", type=positive_float("--lr"), default=0.5, help="SGD learning rate (default: 0.5)")
    p.add_argument("--seed", type=nonnegative_int("--seed"), default=0,
                   help="seed of the data, the model and the shuffle (default: 0)")
    add_device_option(p)
    p.add_argument("--trace", action="store_true",
                   help="rank 0 also saves trace.pt: every rank's batches (example indices) and final weights")
    return p


def _parse(argv):
    args = _parser().parse_args(argv)
    if not launched_by_torchrun():
        raise UsageError("start it with torchrun, which tells every process its rank: torchrun --standalone "
                         "--nproc-per-node=2 -m bertcourse.ddp_example --out DIR")
    check_writable(args.out)
    return args


def _run(args) -> int:
    train(args)
    return 0


def main(argv=None) -> int:
    """The command line; returns the exit code (0 done, 2 a wrong option or not under torchrun)."""
    return run_cli(_parse, _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())

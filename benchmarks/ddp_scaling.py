"""Data-parallel scaling: pretraining pairs per second with 1 and 2 processes (chapter 14).

    python benchmarks/ddp_scaling.py                       # tiny BERT, 1 and 2 processes, one thread each
    python benchmarks/ddp_scaling.py --config d2l-small --batch-size 64 --steps 30
    python benchmarks/ddp_scaling.py --procs 1 2 4         # more processes than cores: see the slowdown

For each process count N the script starts ``torchrun --nproc-per-node=N`` on itself (one
thread per process, the gloo backend) and trains the course's BERT on the course corpus
with the length-bucketed, sharded loader, exactly as ``torchrun ... -m bertcourse.pretrain``
does, for ``--warmup`` + ``--steps`` optimizer steps of ``--batch-size`` pairs per process.
It reports, from the timed steps:

* pairs per second over all processes (``N x batch x steps / seconds``) and the *scaling
  efficiency*, pairs/s with N processes divided by N times the pairs/s of one process;
* where a step's time goes: the step as usual (median), the step without the gradient
  all-reduce (``DistributedDataParallel.no_sync()``; the ranks' weights then drift apart,
  which does not matter for timing) on rank 0 and on the slower of the ranks (a synchronised
  step waits for the slowest rank: batches of other lengths, or a core busy with something
  else), and one all-reduce of all gradients alone.

A script, not a test: the numbers depend on the machine and on what else runs on it. On a
2-core machine, 2 processes use both cores, so anything else running slows them down.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import torch


def worker(args) -> None:
    """One rank, started by torchrun."""
    from bertcourse.bert import BERTModel, get_config
    from bertcourse.data import load_pretrain_data
    from bertcourse.distributed import init_distributed, shutdown_distributed
    from bertcourse.pretrain import init_bert_weights, pretraining_step
    from bertcourse.batching import bucketed_loader
    from bertcourse.training import TrainConfig, Trainer
    torch.set_num_threads(1)
    device = torch.device("cpu")
    rank, world_size = init_distributed(device)
    loader, tok = load_pretrain_data(args.batch_size, 64, "train", seed=0)
    loader = bucketed_loader(loader.dataset, args.batch_size, seed=0, world_size=world_size, rank=rank)
    torch.manual_seed(0)
    model = init_bert_weights(BERTModel(get_config(args.config, vocab_size=len(tok.vocab))))
    amp = {"on": True, "off": False, "auto": "auto"}[args.amp]
    cfg = TrainConfig(steps=args.warmup + args.steps, eval_every=None, warmup_steps=10, amp=amp)
    trainer = Trainer(model, loader, pretraining_step(), cfg)
    h = trainer.fit(progress=False, plot=False)
    seconds = h.time[-1] - h.time[args.warmup - 1]
    step_s = [b - a for a, b in zip(h.time[args.warmup - 1:], h.time[args.warmup:])]
    result = {"world_size": world_size, "batch_size": args.batch_size, "steps": args.steps, "seconds": seconds,
              "pairs_per_s": args.steps * world_size * args.batch_size / seconds,
              "step_ms": 1000 * statistics.median(step_s), "amp": trainer.amp,
              "params": sum(p.numel() for p in model.parameters())}
    if world_size > 1:
        # the same steps without the all-reduce, and the all-reduce alone
        batches = iter(loader)
        times, slowest = [], []
        for _ in range(min(args.steps, 20)):
            batch = next(batches)
            torch.distributed.barrier()
            start = time.perf_counter()
            with trainer.ddp.no_sync():
                trainer.train_step(batch)
            t = torch.tensor([time.perf_counter() - start])
            times.append(float(t))
            torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)    # the slower rank's time
            slowest.append(float(t))
        result["step_ms_no_sync"] = 1000 * statistics.median(times)
        result["step_ms_no_sync_slowest"] = 1000 * statistics.median(slowest)
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])
        times = []
        for _ in range(20):
            torch.distributed.barrier()
            start = time.perf_counter()
            torch.distributed.all_reduce(flat)
            times.append(time.perf_counter() - start)
        result["allreduce_ms"] = 1000 * statistics.median(times)
        result["allreduce_mb"] = flat.numel() * flat.element_size() / 1e6
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)
    shutdown_distributed()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n: int, args) -> dict:
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={n}", f"--master-port={free_port()}",
           __file__, "--worker", "--config", args.config, "--batch-size", str(args.batch_size),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--amp", args.amp]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"torchrun with {n} processes failed (exit code {r.returncode}):\n{r.stderr[-3000:]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="tiny", help="model size (default: tiny)")
    p.add_argument("--batch-size", type=int, default=128, help="pairs per step and process (default 128)")
    p.add_argument("--steps", type=int, default=60, help="timed steps (default 60)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    p.add_argument("--amp", choices=("auto", "on", "off"), default="off", help="bf16 autocast (default off)")
    p.add_argument("--procs", type=int, nargs="+", default=[1, 2], help="process counts (default: 1 2)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "unknown CPU") if os.path.exists("/proc/cpuinfo") else "unknown CPU"
    print(f"CPU: {cpu} ({os.cpu_count()} logical CPUs), torch {torch.__version__}; {args.config} BERT, "
          f"{args.batch_size} pairs per process and step, one thread per process, gloo")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    results = [launch(n, args) for n in args.procs]
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    base = results[0]["pairs_per_s"] / results[0]["world_size"]
    print(f"\n{'processes':>9s} {'global batch':>12s} {'pairs/s':>9s} {'step ms':>8s} {'efficiency':>10s} "
          f"{'no all-reduce ms':>16s} {'slower rank ms':>14s} {'all-reduce alone ms':>19s}")
    for r in results:
        n = r["world_size"]
        extra = (f"{r['step_ms_no_sync']:16.1f} {r['step_ms_no_sync_slowest']:14.1f} {r['allreduce_ms']:19.2f}"
                 if n > 1 else f"{'-':>16s} {'-':>14s} {'-':>19s}")
        print(f"{n:9d} {n * r['batch_size']:12d} {r['pairs_per_s']:9.0f} {r['step_ms']:8.1f} "
              f"{r['pairs_per_s'] / (n * base):10.2f} {extra}")
    if len(results) > 1 and "allreduce_mb" in results[1]:
        print(f"\nall-reduce of {results[1]['params']:,} gradients ({results[1]['allreduce_mb']:.1f} MB of float32)")


if __name__ == "__main__":
    main()

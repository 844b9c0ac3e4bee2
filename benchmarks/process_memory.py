"""What several PyTorch processes cost in memory (chapter 14 and issue 23's 900 MB budget).

    python benchmarks/process_memory.py             # every experiment below
    python benchmarks/process_memory.py toy forked  # some of them

Chapter 14 runs ``torchrun`` from its kernel: an agent process and two ranks, next to the
kernel, which holds PyTorch too. ``benchmarks/notebooks.py`` measures the whole notebook; this
script takes the processes apart. Each experiment runs as a process tree, sampled every 30 ms;
it prints the tree's peak (PSS summed over its processes: a page that several processes share
counts once in all, as a memory limit charges it) and every process's own peak PSS. Linux only
(``/proc``). The experiments:

* ``import``: ``python -c "import torch"``, with its memory split into private anonymous pages
  (written by the process itself: every process pays them again) and file pages (the libraries,
  which processes that map the same file share);
* ``toy``: ``torchrun --standalone --nproc-per-node=2 -m bertcourse.ddp_example`` (chapter 14,
  section 5: a two-layer classifier on 96 points), the least a torchrun run can cost;
* ``small``: ``torchrun ... -m bertcourse.pretrain`` with almost no work (the tiny BERT, 100
  paragraphs, batches of 32, 20 steps);
* ``chapter``: chapter 14's two-process run itself (250 steps of 128 pairs per process);
* ``forked``: no new interpreter: one process imports PyTorch and builds chapter 14's training
  data (as the kernel has by section 6), hands freed memory back (``release_memory``), freezes its
  objects for the garbage collector (``gc.freeze``), then forks two children that train the tiny
  BERT on that shared data, one thread each, 30 steps of 128 pairs (no process group: the
  memory of a rank's training alone). The children print how much of their memory became their
  own (``Private_Dirty``): the pages they wrote, copied from the parent or new.

A script, not a test: the figures depend on the machine, the libraries and the allocator.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
import time

from process_tree import descendants, memory_mb     # benchmarks/process_tree.py

EXPERIMENTS = ("import", "toy", "small", "chapter", "forked")
PRETRAIN = ["-m", "bertcourse.pretrain", "--config", "tiny", "--eval-every", "100000", "--quiet", "--amp", "off",
            "--device", "cpu", "--threads", "1"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]

FORKED = r"""
import gc, os, sys
import torch
from bertcourse.batching import bucketed_loader
from bertcourse.bert import BERTModel, get_config
from bertcourse.data import load_pretrain_data
from bertcourse.memory import release_memory
from bertcourse.pretrain import init_bert_weights, pretraining_step
from bertcourse.training import make_optimizer


def private_mb():
    text = open("/proc/self/smaps_rollup").read()
    return int(text.split("Private_Dirty:")[1].split()[0]) // 1024


loader, tokenizer = load_pretrain_data(batch_size=16, max_len=64, split="train", seed=0, shuffle=False)
release_memory()
gc.freeze()
children = []
for rank in range(2):
    pid = os.fork()
    if pid == 0:
        torch.set_num_threads(1)      # first: OpenMP's threads do not survive a fork
        start = private_mb()
        model = init_bert_weights(BERTModel(get_config("tiny", vocab_size=len(tokenizer.vocab), max_len=64)))
        optimizer, step = make_optimizer(model, lr=5e-3), pretraining_step()
        batches = iter(bucketed_loader(loader.dataset, 128, seed=0, world_size=2, rank=rank))
        for _ in range(30):
            step(model, next(batches))["loss"].backward()
            optimizer.step()
            optimizer.zero_grad()
        print(f"forked rank {rank}: private memory {start} MB after the fork, {private_mb()} MB after 30 steps",
              flush=True)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""


def run_tree(command: list[str], cwd: str) -> tuple[float, dict, str]:
    """Run ``command``; return the tree's peak PSS (MB), each process's peak PSS and the output."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, per = 0.0, {}
    while proc.poll() is None:
        members = [(proc.pid, pathlib.Path(command[0]).name)] + descendants(proc.pid)
        total = 0.0
        for pid, name in members:
            mb = memory_mb(pid)[1]
            total += mb
            per[(pid, name)] = max(per.get((pid, name), 0.0), mb)
        peak = max(peak, total)
        time.sleep(0.03)
    output = proc.stdout.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])} ... failed (exit code {proc.returncode}):\n{output[-2000:]}")
    return peak, per, output


def command_of(name: str) -> list[str]:
    return {"import": [sys.executable, "-c", "import torch; print(open('/proc/self/smaps_rollup').read())"],
            "toy": TORCHRUN + ["-m", "bertcourse.ddp_example", "--out", "."],
            "small": TORCHRUN + PRETRAIN + ["--batch-size", "32", "--num-paragraphs", "100", "--steps", "20",
                                            "--out", "run"],
            "chapter": TORCHRUN + PRETRAIN + ["--batch-size", "128", "--steps", "250", "--out", "run"],
            "forked": [sys.executable, "-c", FORKED]}[name]


def main(args: list[str]) -> int:
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0
    unknown = [a for a in args if a not in EXPERIMENTS]
    if unknown:
        print(f"unknown experiment(s) {', '.join(unknown)}; choose from {', '.join(EXPERIMENTS)}", file=sys.stderr)
        return 2
    for name in args or EXPERIMENTS:
        with tempfile.TemporaryDirectory(prefix="process-memory-") as folder:
            peak, per, output = run_tree(command_of(name), folder)
        print(f"{name:8s} tree peak {peak:6.0f} MB (PSS summed); per process: "
              + ", ".join(f"{n} {mb:.0f}" for (_, n), mb in per.items()), flush=True)
        if name == "import":
            fields = {line.split(":")[0]: int(line.split()[1]) // 1024 for line in output.splitlines()
                      if line.split(":")[0] in ("Rss", "Pss_Anon", "Pss_File")}
            print(f"         import torch: RSS {fields['Rss']} MB = {fields['Pss_Anon']} MB anonymous "
                  f"+ {fields['Pss_File']} MB of files", flush=True)
        if name == "forked":
            print("         " + "\n         ".join(line for line in output.splitlines() if line.startswith("forked")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

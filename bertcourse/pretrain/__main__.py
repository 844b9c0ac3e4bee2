"""``python -m bertcourse.pretrain``: pretraining's command line (chapters 7 and 10).

    python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny
    python -m bertcourse.pretrain --out runs/tiny --resume          # continue after Ctrl-C
    torchrun --nproc-per-node=2 -m bertcourse.pretrain ...         # data-parallel (chapter 14)

The options are read here; the run itself is :func:`bertcourse.pretrain.pretrain`, as in
chapter 7. What every command shares (one-line errors, exit codes 0 / 2 / 130, ``--device``,
printing on rank 0 only) comes from :mod:`bertcourse.cli`.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

import torch

from ..batching import bucketed_loader
from ..bert import CONFIGS, BERTModel, get_config
from ..checkpoints import CONFIG_FILE, MODEL_FILE, STATE_FILE, STATE_INFO_FILE, load_checkpoint
from ..cli import (Parser, UsageError, add_device_option, check_writable, nonnegative_float, nonnegative_int,
                   positive_float, positive_int, run_cli, say)
from ..data import load_pretrain_data
from ..distributed import init_distributed, resolve_device, shutdown_distributed
from ..i18n import gettext as _
from ..training import TrainConfig
from ..utils import set_seed
from . import init_bert_weights, pretrain

# The default peak learning rate per model size: chapter 7's 5e-3 trains the small models in
# minutes; BERT's paper used 1e-4 for base and large. Measured on an H200 (bf16, 2026-11-26): base
# at 5e-3 stayed at the most frequent token's held-out MLM accuracy (0.143) and chance NSP (0.503)
# after 667 steps (60 s); at 1e-4 it reached 0.568 and 0.769 after 810 steps (50 s).
PRETRAIN_LR = {"tiny": 5e-3, "d2l-small": 5e-3, "base": 1e-4, "large": 1e-4}


def parser() -> Parser:
    p = Parser(prog="python -m bertcourse.pretrain",
               description="Pretrain a BERT (MLM + NSP) on the course's generated corpus and save a "
                           "checkpoint (safetensors weights, config.json, tokenizer.json).",
               epilog="Example: python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny. "
                      "Ctrl-C stops after the current step and saves a checkpoint; run again with "
                      "--resume to continue. Data-parallel on N processes: torchrun --nproc-per-node=N "
                      "-m bertcourse.pretrain ... (each process reads its own shard; the global batch is "
                      "N x --batch-size).")
    p.add_argument("--config", default="tiny",
                   help=f"model size, one of {', '.join(CONFIGS)} (default: tiny); the vocabulary size "
                        "is set to the tokenizer's")
    p.add_argument("--seconds", type=positive_float("--seconds"), default=None,
                   help="time budget in seconds (default: 90 when --steps is not given)")
    p.add_argument("--steps", type=positive_int("--steps"), default=None,
                   help="number of optimizer steps (if given with --seconds, whichever ends first)")
    p.add_argument("--out", required=True, help="output folder for the checkpoint (created if needed)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run saved in --out (same budget: it trains what is left)")
    p.add_argument("--batch-size", type=positive_int("--batch-size"), default=128,
                   help="sentence pairs per batch and process (default: 128; under torchrun the global "
                        "batch is N times this)")
    p.add_argument("--max-len", type=positive_int("--max-len"), default=64,
                   help="maximal tokens per pair, at least 5 (default: 64)")
    p.add_argument("--lr", type=positive_float("--lr"), default=None,
                   help="peak learning rate (default: 5e-3 for tiny and d2l-small, chapter 7's; 1e-4 for base "
                        "and large, BERT's: at 5e-3 a base model learned nothing, the MLM accuracy stayed at "
                        "the most frequent token's)")
    p.add_argument("--warmup-steps", type=nonnegative_int("--warmup-steps"), default=50,
                   help="linear warm-up steps (default: 50)")
    p.add_argument("--weight-decay", type=nonnegative_float("--weight-decay"), default=0.01,
                   help="AdamW weight decay (default: 0.01)")
    p.add_argument("--clip", type=positive_float("--clip"), default=1.0, help="gradient-norm clip (default: 1.0)")
    p.add_argument("--eval-every", type=positive_int("--eval-every"), default=200,
                   help="evaluate on the held-out split every N steps (default: 200)")
    p.add_argument("--seed", type=nonnegative_int("--seed"), default=0,
                   help="seed of the corpus, tokenizer, masks and model (default: 0)")
    p.add_argument("--num-paragraphs", type=positive_int("--num-paragraphs"), default=None,
                   help="use only the first N training paragraphs, at least 2 (smaller, faster; default: all)")
    p.add_argument("--amp", choices=("auto", "on", "off"), default="auto",
                   help="bf16 autocast for the matrix products (default: auto = when the CPU has fast bf16, or "
                        "the GPU supports bf16)")
    p.add_argument("--threads", type=positive_int("--threads"), default=None,
                   help="torch threads per process (default: torch's choice; torchrun sets 1; 1 is best on "
                        "a busy machine)")
    add_device_option(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def parse_args(argv) -> argparse.Namespace:
    args = parser().parse_args(argv)
    if args.config not in CONFIGS:
        raise UsageError(f"--config must be one of {', '.join(CONFIGS)}, got {args.config!r}")
    if args.lr is None:
        args.lr = PRETRAIN_LR[args.config]
    if args.max_len < 5:
        raise UsageError(f"--max-len must be >= 5, got {args.max_len}")
    if args.num_paragraphs is not None and args.num_paragraphs < 2:
        raise UsageError(f"--num-paragraphs must be >= 2 (a random second sentence comes from another "
                         f"paragraph), got {args.num_paragraphs}")
    if args.seconds is None and args.steps is None:
        args.seconds = 90.0
    check_writable(args.out)
    if args.resume:
        missing = [f for f in (CONFIG_FILE, MODEL_FILE, STATE_FILE, STATE_INFO_FILE)
                   if not os.path.isfile(os.path.join(args.out, f))]
        if missing:
            raise UsageError(f"--resume: no complete saved run in {args.out!r} (missing {', '.join(missing)})")
    return args


def run(args) -> int:
    device = resolve_device(args.device)
    rank, world_size = init_distributed(device)       # (0, 1) without torchrun
    try:
        code = run_process(args, device, rank, world_size)
    except BaseException:
        shutdown_distributed(barrier=False)
        raise
    shutdown_distributed()
    return code


def run_process(args, device, rank: int, world_size: int) -> int:
    """One process' share of the run: its shard of the data, the model, :func:`pretrain`."""
    set_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    say(_("loading the corpus and the tokenizer (seed {seed}) ...").format(seed=args.seed))
    train_loader, tokenizer = load_pretrain_data(args.batch_size, args.max_len, "train", seed=args.seed,
                                                 num_paragraphs=args.num_paragraphs)
    # every process draws the same epoch order (same seed) and takes its own share of the batches
    train_loader = bucketed_loader(train_loader.dataset, args.batch_size, seed=args.seed,
                                   world_size=world_size, rank=rank)
    eval_loader = load_pretrain_data(128, args.max_len, "held_out", seed=args.seed)[0] if rank == 0 else None
    cfg = TrainConfig(steps=args.steps, seconds=args.seconds, lr=args.lr, warmup_steps=args.warmup_steps,
                      weight_decay=args.weight_decay, clip=args.clip, eval_every=args.eval_every,
                      amp={"auto": "auto", "on": True, "off": False}[args.amp], seed=args.seed,
                      device=str(device))
    state = None
    if args.resume:
        model, _config, state = load_checkpoint(args.out)
        info = state["info"]
        say(_("resuming from step {step} ({seconds:.1f} s trained)").format(step=info["step"],
                                                                             seconds=float(info["elapsed"])))
    else:
        torch.manual_seed(args.seed)
        model = init_bert_weights(BERTModel(get_config(args.config, vocab_size=len(tokenizer.vocab),
                                                       max_len=args.max_len)))
    n_params = sum(p.numel() for p in model.parameters())
    # The first AdamW a process builds imports torch._dynamo: several seconds on a fresh install
    # (compiling its bytecode). Imported here, so that "training ..." below is said when the first
    # step is about to run, and a Ctrl-C after it interrupts the training, not this import.
    importlib.import_module("torch._dynamo")
    model_name = _("the saved BERT") if args.resume else _("a {config} BERT").format(config=args.config)
    say(_("training {model} ({parameters:,} parameters) on {pairs:,} pairs; budget: {steps} steps / {seconds} s; "
          "device: {device}; bf16 autocast: {amp}").format(
        model=model_name, parameters=n_params, pairs=len(train_loader.dataset), steps=args.steps or "-",
        seconds=args.seconds or "-", device=device, amp=cfg.use_amp(device)))
    if world_size > 1:
        backend = torch.distributed.get_backend()
        say(_("data-parallel: {n} processes ({backend}), each {batch} pairs per step from its own shard "
              "({batches} batches per epoch): a global batch of {global_batch} pairs per optimizer step; "
              "--lr {lr:g} applies to the global batch as given").format(
            n=world_size, backend=backend, batch=args.batch_size, batches=len(train_loader),
            global_batch=world_size * args.batch_size, lr=args.lr))
    extra = {"config_name": args.config, "seed": args.seed, "max_len": args.max_len,
             "world_size": world_size, "batch_size": args.batch_size}
    history = pretrain(model, train_loader, eval_loader, cfg, progress=not args.quiet, plot=True,
                       state=state, save_to=args.out, tokenizer=tokenizer, extra=extra)
    ev = history.final_eval
    summary = _(" held-out MLM accuracy {mlm:.3f}, NSP accuracy {nsp:.3f};").format(
        mlm=ev["mlm_acc"], nsp=ev["nsp_acc"]) if ev else ""
    steps, seconds = (history.step[-1], history.time[-1]) if history.step else (0, 0.0)
    if history.interrupted:
        say(_("interrupted at step {steps};{summary} checkpoint saved to {out} (continue with --resume)").format(
            steps=steps, summary=summary, out=args.out))
        return 130
    rate = steps * world_size * args.batch_size / max(seconds, 1e-9)
    over = (_("over {n} processes") if world_size > 1 else _("over {n} process")).format(n=world_size)
    say(_("done: {steps} steps in {seconds:.1f} s (about {rate:,.0f} pairs/s {over}, evaluations included);"
          "{summary} checkpoint saved to {out}").format(steps=steps, seconds=seconds, rate=rate, over=over,
                                                        summary=summary, out=args.out))
    return 0


def main(argv=None) -> int:
    """The command; returns the exit code (0 done, 2 bad options or input, 130 interrupted)."""
    return run_cli(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())

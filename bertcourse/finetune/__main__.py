"""``python -m bertcourse.finetune``: fine-tuning's command line (chapter 9).

    python -m bertcourse.finetune --model minilm --epochs 1 --out runs/sentiment

The options are read here; the training is chapter 9's: :func:`bertcourse.finetune.probe_then_finetune`
(or :func:`~bertcourse.finetune.finetune` with a random head). What every command shares
(one-line errors, exit codes 0 / 2 / 130, ``--device``) comes from :mod:`bertcourse.cli`.
"""
from __future__ import annotations

import argparse
import math
import sys

import torch

from ..cli import (Parser, UsageError, add_device_option, check_writable, nonnegative_float, nonnegative_int,
                   positive_float, positive_int, run_cli)
from ..inspection import POOLINGS
from ..precision import cpu_has_fast_bf16
from ..reviews import SPLIT_SIZES, load_sentiment, review_loader, stratified_subset
from . import RECIPE, build_classifier, evaluate_classifier, finetune, fit_probe, probe_then_finetune, save_classifier


def parser() -> Parser:
    p = Parser(prog="python -m bertcourse.finetune",
               description="Fine-tune a BERT sentence classifier on the 2,400 training sentences of the UCI "
                           "Sentiment Labelled Sentences data (shipped with the package; offline), report "
                           "the validation accuracy after every epoch, save a checkpoint and evaluate once "
                           "on the 300 test sentences. The last line printed is 'test accuracy: 0.xxx'.",
               epilog="Example: python -m bertcourse.finetune --model minilm --epochs 1 --out runs/sentiment. "
                      "Ctrl-C stops after the current step; the checkpoint is then saved and evaluated.")
    p.add_argument("--model", default="minilm",
                   help="minilm: start from the pretrained all-MiniLM-L6-v2 (chapter 8); scratch: the same "
                        "architecture and tokenizer with random weights (default: minilm)")
    p.add_argument("--out", required=True, help="output folder for the checkpoint (created if needed)")
    p.add_argument("--epochs", type=positive_int("--epochs"), default=RECIPE["epochs"],
                   help=f"passes over the training sentences (default: {RECIPE['epochs']})")
    p.add_argument("--lr", type=positive_float("--lr"), default=None,
                   help="peak learning rate of AdamW (default: 5e-5 for minilm, 3e-4 for scratch)")
    p.add_argument("--batch-size", type=positive_int("--batch-size"), default=RECIPE["batch_size"],
                   help=f"sentences per batch (default: {RECIPE['batch_size']})")
    p.add_argument("--warmup-ratio", type=nonnegative_float("--warmup-ratio"), default=RECIPE["warmup_ratio"],
                   help="fraction of the steps with a linear warm-up, at most 1 (default: 0.1)")
    p.add_argument("--weight-decay", type=nonnegative_float("--weight-decay"), default=RECIPE["weight_decay"],
                   help="AdamW weight decay on weight matrices (default: 0.01)")
    p.add_argument("--pooling", default="mean",
                   help="mean: average of the real tokens' states (what MiniLM was trained for); cls: the "
                        "[CLS] state through the pooler (default: mean)")
    p.add_argument("--head", default=None,
                   help="how the new classification layer starts: probe (fit a logistic regression on the "
                        "frozen pooled features first, then fine-tune everything: LP-FT) or random "
                        "(default: probe for minilm, random for scratch)")
    p.add_argument("--train-size", type=positive_int("--train-size"), default=None,
                   help="use only this many training sentences, stratified by site and label "
                        "(default: all 2,400)")
    p.add_argument("--seed", type=nonnegative_int("--seed"), default=0,
                   help="seed of the new weights, dropout and batch order (the split is fixed; default: 0)")
    p.add_argument("--amp", default="auto",
                   help="bf16 autocast: auto (when the CPU has fast bf16), on or off (default: auto)")
    p.add_argument("--threads", type=positive_int("--threads"), default=None,
                   help="torch threads (default: torch's choice)")
    p.add_argument("--checkpointing", action="store_true",
                   help="recompute each encoder block's activations in the backward pass instead of keeping "
                        "them: the same training, a fraction of the activation memory, about 30%% more time")
    p.add_argument("--freeze-word-embeddings", action="store_true",
                   help="keep the word-embedding table as it is (no gradient, no AdamW moments: for MiniLM "
                        "3 x 47 MB less memory); with --checkpointing, chapter 9's setting within 1 GB")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_device_option(p)
    return p


def parse_args(argv) -> argparse.Namespace:
    args = parser().parse_args(argv)
    for option, value, choices in (("--model", args.model, ("minilm", "scratch")),
                                   ("--pooling", args.pooling, POOLINGS),
                                   ("--amp", args.amp, ("auto", "on", "off")),
                                   ("--head", args.head or "probe", ("probe", "random"))):
        if value not in choices:
            raise UsageError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    if args.warmup_ratio > 1:
        raise UsageError(f"--warmup-ratio must be <= 1, got {args.warmup_ratio}")
    if args.train_size is not None and args.train_size > SPLIT_SIZES["train"]:
        raise UsageError(f"--train-size must be <= {SPLIT_SIZES['train']} (the training split), got {args.train_size}")
    if args.lr is None:
        args.lr = 5e-5 if args.model == "minilm" else 3e-4
    if args.head is None:
        args.head = "probe" if args.model == "minilm" else "random"
    check_writable(args.out)
    return args


def run(args) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    amp = {"auto": cpu_has_fast_bf16(), "on": True, "off": False}[args.amp]
    splits = load_sentiment()
    train = splits.train if args.train_size is None else stratified_subset(splits.train, args.train_size, args.seed)
    print(f"loading {args.model} ...", flush=True)
    model, tokenizer = build_classifier(args.model, pooling=args.pooling, seed=args.seed)
    options = dict(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, warmup_ratio=args.warmup_ratio,
                   weight_decay=args.weight_decay, seed=args.seed, amp=amp, checkpointing=args.checkpointing,
                   train_word_embeddings=not args.freeze_word_embeddings, progress=not args.quiet, plot=False,
                   device=args.device)
    probe = None
    if args.head == "probe":
        probe, wd, accs = fit_probe(model, tokenizer, train, splits.validation, amp=amp)
        print(f"head started from a linear probe on the frozen features (weight decay {wd:g}, validation "
              f"accuracy {accs[wd]:.3f})", flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"fine-tuning {'pretrained all-MiniLM-L6-v2' if args.model == 'minilm' else 'a randomly initialised MiniLM'}"
          f" ({n_params:,} parameters, {args.pooling} pooling) on {len(train):,} sentences for {args.epochs} "
          f"epoch(s): lr {args.lr:g}, batch {args.batch_size}, bf16 autocast: {amp}", flush=True)
    if probe is not None:
        trainer = probe_then_finetune(model, tokenizer, train, splits.validation, probe=probe, **options)
    else:
        trainer = finetune(model, tokenizer, train, splits.validation, **options)
    history = trainer.history
    per_epoch = max(1, math.ceil(len(train) / args.batch_size))
    for ev in history.evals:
        print(f"epoch {ev['step'] / per_epoch:.2f} (step {ev['step']}): validation accuracy {ev['acc']:.3f}",
              flush=True)
    test = evaluate_classifier(model, review_loader(splits.test, tokenizer, args.batch_size, by_length=True), amp=amp)
    extra = {"model": args.model, "head": args.head, "pooling": args.pooling, "epochs": args.epochs,
             "lr": args.lr, "batch_size": args.batch_size, "train_size": len(train), "seed": args.seed,
             "test_acc": test["acc"], "validation_acc": history.evals[-1]["acc"] if history.evals else None,
             "train_seconds": trainer.elapsed, "stopped_by": history.stopped_by}
    save_classifier(args.out, model, tokenizer, trainer, extra=extra)
    state = "interrupted" if history.interrupted else "done"
    print(f"{state}: {trainer.step} steps in {trainer.elapsed:.1f} s; checkpoint saved to {args.out}", flush=True)
    print(f"test accuracy: {test['acc']:.3f}", flush=True)
    return 130 if history.interrupted else 0


def main(argv=None) -> int:
    """The command; returns the exit code (0 done, 2 bad options, 130 interrupted)."""
    return run_cli(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())

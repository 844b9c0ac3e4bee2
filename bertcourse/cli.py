"""The command lines, and what they share: a bad option or a bad input is one line on stderr
and exit code 2, Ctrl-C is exit code 130, and no command ever prints a traceback.

    python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny
    python -m bertcourse.finetune --model minilm --epochs 1 --out runs/sentiment
    python -m bertcourse.pretrain --device cuda ...                      # on a GPU
    torchrun --nproc-per-node=2 -m bertcourse.pretrain ...               # data-parallel (chapter 10)

Shared by every command: :class:`Parser`, :func:`run_cli`, the argparse types
(:func:`positive_int`, ...), :func:`add_device_option` (``--device auto|cpu|cuda``) and
:func:`say` (prints on rank 0 only, under torchrun).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import Callable

import torch

from .batching import bucketed_loader
from ._checks import check_path
from .bert import CONFIGS, BERTModel, get_config
from .checkpoints import CONFIG_FILE, MODEL_FILE, STATE_FILE, STATE_INFO_FILE, load_checkpoint, save_checkpoint
from .data import load_pretrain_data
from .distributed import init_distributed, resolve_device, shutdown_distributed
from .finetune import RECIPE, build_classifier, evaluate_classifier, finetune, init_head_from_probe, save_classifier
from .pretrain import evaluate, init_bert_weights, pretraining_step
from .probing import POOLINGS, WEIGHT_DECAYS, select_weight_decay, sentence_features
from .reviews import SPLIT_SIZES, load_sentiment, review_loader, stratified_subset
from .precision import cpu_has_fast_bf16
from .training import TrainConfig, Trainer
from .utils import set_seed

__all__ = ["UsageError", "Parser", "positive_int", "positive_float", "nonnegative_float",
           "check_writable", "add_device_option", "say", "run_cli", "pretrain_main", "finetune_main"]


class UsageError(Exception):
    """A wrong option or input: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr and exit code 2 (no usage dump), and
    every number is read as a value, negative ones included."""

    # argparse takes an argument that starts with "-" for an option unless it matches
    # `_negative_number_matcher`, which (before Python 3.13) knows only "-5" and "-.5": so
    # `--lr -1e-3` gave "expected one argument" instead of the range check's "--lr must be
    # > 0". Widened to every float spelling; valid because no option of ours looks like a number.
    _NUMBER = re.compile(r"^-(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$",
                         re.IGNORECASE)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = self._NUMBER

    def error(self, message):
        # "argument --seconds: --seconds must be > 0" -> "--seconds must be > 0"
        raise UsageError(re.sub(r"^argument (--[\w-]+): \1 ", r"\1 ", message))


def _number(name: str, convert, text: str, low: float, inclusive: bool):
    try:
        value = convert(text)
    except ValueError:
        kind = "a whole number" if convert is int else "a number"
        raise argparse.ArgumentTypeError(f"{name} must be {kind}, got {text!r}") from None
    if not math.isfinite(value) or value < low or (value == low and not inclusive):
        raise argparse.ArgumentTypeError(f"{name} must be {'>=' if inclusive else '>'} {low}, got {text}")
    return value


def positive_int(name: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers > 0 (the message names the option)."""
    return lambda text: _number(name, int, text, 0, False)


def positive_float(name: str) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers > 0 (NaN and infinity are refused)."""
    return lambda text: _number(name, float, text, 0, False)


def nonnegative_float(name: str) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers >= 0."""
    return lambda text: _number(name, float, text, 0, True)


def nonnegative_int(name: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers >= 0."""
    return lambda text: _number(name, int, text, 0, True)


def check_writable(folder: str, option: str = "--out") -> None:
    """Create ``folder`` if needed and make sure a file can be written into it."""
    try:
        check_path(option, folder, kind="folder", what="output folder")   # "" or an existing file
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".write-test-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"{option} {folder!r} is not a writable folder ({e.strerror or e})") from None


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device auto|cpu|cuda|cuda:N`` (default ``auto``: a GPU when there is one). The
    value is checked by :func:`bertcourse.distributed.resolve_device` when the command runs,
    and passed on as ``TrainConfig(device=args.device)``."""
    parser.add_argument("--device", default="auto", type=_device_name,
                        help="where to train: auto (a GPU when there is one; default), cpu, cuda or cuda:N; "
                             "under torchrun, cuda means one GPU per process (cuda:LOCAL_RANK)")


def _device_name(text: str) -> str:
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"--device must be auto, cpu, cuda or cuda:N, got {text!r}")
    return text


def _rank() -> int:
    """This process' rank under torchrun (from the environment: valid before the group is joined)."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def say(*args, **kwargs) -> None:
    """``print`` (flushed) on rank 0 only: under torchrun, N processes would say everything N times."""
    if _rank() == 0:
        print(*args, **kwargs, flush=True)


def run_cli(parse: Callable, run: Callable, argv=None) -> int:
    """``run(parse(argv))`` with the course's rules: ``UsageError`` and errors in the input
    (``ValueError``, ``TypeError``, ``FileNotFoundError``) are one line on stderr and exit
    code 2; Ctrl-C while loading is exit code 130 (training itself stops cleanly and saves);
    anything else is one line and exit code 1. Under torchrun, every process has the same
    input errors and only rank 0 reports them; other errors are reported by the rank that
    had them, named ``[rank N]``."""
    argv = sys.argv[1:] if argv is None else argv
    rank = _rank()
    where = f"[rank {rank}] " if rank else ""
    try:
        return run(parse(argv))
    except (UsageError, ValueError, TypeError, FileNotFoundError) as e:
        if rank == 0:
            print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if rank == 0:
            print("interrupted before training started; nothing was saved", file=sys.stderr)
        return 130
    except Exception as e:          # a bug: still no traceback, but say what it was
        print(f"{where}error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


# ---------------------------------------------------------------------------------------
# python -m bertcourse.pretrain
# ---------------------------------------------------------------------------------------

# The default peak learning rate per model size: chapter 7's 5e-3 trains the small models in
# minutes; BERT's paper used 1e-4 for base and large. Measured on an H200 (bf16, 2026-11-26): base
# at 5e-3 stayed at the most frequent token's held-out MLM accuracy (0.143) and chance NSP (0.503)
# after 667 steps (60 s); at 1e-4 it reached 0.568 and 0.769 after 810 steps (50 s).
PRETRAIN_LR = {"tiny": 5e-3, "d2l-small": 5e-3, "base": 1e-4, "large": 1e-4}


def _pretrain_parser() -> Parser:
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


def _parse_pretrain_args(argv) -> argparse.Namespace:
    args = _pretrain_parser().parse_args(argv)
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


def _run_pretrain(args) -> int:
    device = resolve_device(args.device)
    rank, world_size = init_distributed(device)       # (0, 1) without torchrun
    try:
        code = _pretrain_process(args, device, rank, world_size)
    except BaseException:
        shutdown_distributed(barrier=False)
        raise
    shutdown_distributed()
    return code


def _pretrain_process(args, device, rank: int, world_size: int) -> int:
    set_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    say(f"loading the corpus and the tokenizer (seed {args.seed}) ...")
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
    if args.resume:
        model, _, state = load_checkpoint(args.out)
    else:
        torch.manual_seed(args.seed)
        model = init_bert_weights(BERTModel(get_config(args.config, vocab_size=len(tokenizer.vocab),
                                                       max_len=args.max_len)))
    trainer = Trainer(model, train_loader, pretraining_step(), cfg, eval_loader=eval_loader,
                      eval_fn=evaluate if eval_loader is not None else None, desc="pretraining")
    if args.resume:
        trainer.load_state_dict(state)
        say(f"resuming from step {trainer.step} ({trainer.elapsed:.1f} s trained)")
    n_params = sum(p.numel() for p in model.parameters())
    name = "the saved" if args.resume else f"a {args.config}"
    say(f"training {name} BERT ({n_params:,} parameters) on {len(train_loader.dataset):,} pairs; "
        f"budget: {args.steps or '-'} steps / {args.seconds or '-'} s; device: {device}; "
        f"bf16 autocast: {trainer.amp}")
    if world_size > 1:
        backend = torch.distributed.get_backend()
        say(f"data-parallel: {world_size} processes ({backend}), each {args.batch_size} pairs per step from its "
            f"own shard ({len(train_loader)} batches per epoch): a global batch of {world_size * args.batch_size} "
            f"pairs per optimizer step; --lr {args.lr:g} applies to the global batch as given")
    history = trainer.fit(progress=not args.quiet, plot=True)
    if rank == 0:
        extra = {"config_name": args.config, "seed": args.seed, "max_len": args.max_len,
                 "world_size": world_size, "batch_size": args.batch_size}
        save_checkpoint(args.out, model, tokenizer, trainer, extra=extra)
    ev = history.final_eval
    summary = f" held-out MLM accuracy {ev['mlm_acc']:.3f}, NSP accuracy {ev['nsp_acc']:.3f};" if ev else ""
    if history.interrupted:
        say(f"interrupted at step {trainer.step};{summary} checkpoint saved to {args.out} "
            f"(continue with --resume)")
        return 130
    rate = trainer.step * world_size * args.batch_size / max(trainer.elapsed, 1e-9)
    say(f"done: {trainer.step} steps in {trainer.elapsed:.1f} s (about {rate:,.0f} pairs/s over {world_size} "
        f"process{'es' if world_size > 1 else ''}, evaluations included);{summary} checkpoint saved to {args.out}")
    return 0


def pretrain_main(argv=None) -> int:
    """``python -m bertcourse.pretrain``; returns the exit code (0 done, 2 bad options or input,
    130 interrupted)."""
    return run_cli(_parse_pretrain_args, _run_pretrain, argv)


# ----------------------------------------------------------------------------------------
# python -m bertcourse.finetune
# ----------------------------------------------------------------------------------------

def _finetune_parser() -> Parser:
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


def _parse_finetune_args(argv) -> argparse.Namespace:
    args = _finetune_parser().parse_args(argv)
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


def _run_finetune(args) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    amp = {"auto": cpu_has_fast_bf16(), "on": True, "off": False}[args.amp]
    splits = load_sentiment()
    train = splits.train if args.train_size is None else stratified_subset(splits.train, args.train_size, args.seed)
    print(f"loading {args.model} ...", flush=True)
    model, tokenizer = build_classifier(args.model, pooling=args.pooling, seed=args.seed)
    if args.head == "probe":
        features = {name: sentence_features(model, tokenizer, [r.text for r in reviews], args.pooling, amp=amp)
                    for name, reviews in (("train", train), ("validation", splits.validation))}
        labels = {name: torch.tensor([r.label for r in reviews])
                  for name, reviews in (("train", train), ("validation", splits.validation))}
        probe, wd, accs = select_weight_decay(features["train"], labels["train"], features["validation"],
                                              labels["validation"], WEIGHT_DECAYS)
        init_head_from_probe(model, probe)
        print(f"head started from a linear probe on the frozen features (weight decay {wd:g}, validation "
              f"accuracy {accs[wd]:.3f})", flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"fine-tuning {'pretrained all-MiniLM-L6-v2' if args.model == 'minilm' else 'a randomly initialised MiniLM'}"
          f" ({n_params:,} parameters, {args.pooling} pooling) on {len(train):,} sentences for {args.epochs} "
          f"epoch(s): lr {args.lr:g}, batch {args.batch_size}, bf16 autocast: {amp}", flush=True)
    trainer = finetune(model, tokenizer, train, splits.validation, epochs=args.epochs, lr=args.lr,
                       batch_size=args.batch_size, warmup_ratio=args.warmup_ratio,
                       weight_decay=args.weight_decay, seed=args.seed, amp=amp,
                       checkpointing=args.checkpointing, train_word_embeddings=not args.freeze_word_embeddings,
                       progress=not args.quiet, plot=False, device=args.device)
    history = trainer.history
    per_epoch = max(1, math.ceil(len(train) / args.batch_size))
    for ev in history.evals:
        print(f"epoch {ev['step'] / per_epoch:.2f} (step {ev['step']}): validation accuracy {ev['acc']:.3f}",
              flush=True)
    test = evaluate_classifier(model, review_loader(splits.test, tokenizer, args.batch_size, by_length=True), amp=amp)
    extra = {"model": args.model, "head": args.head, "pooling": args.pooling, "epochs": args.epochs,
             "lr": args.lr, "batch_size": args.batch_size, "train_size": len(train), "seed": args.seed, "test_acc": test["acc"],
             "validation_acc": history.evals[-1]["acc"] if history.evals else None,
             "train_seconds": trainer.elapsed, "stopped_by": history.stopped_by}
    save_classifier(args.out, model, tokenizer, trainer, extra=extra)
    state = "interrupted" if history.interrupted else "done"
    print(f"{state}: {trainer.step} steps in {trainer.elapsed:.1f} s; checkpoint saved to {args.out}", flush=True)
    print(f"test accuracy: {test['acc']:.3f}", flush=True)
    return 130 if history.interrupted else 0


def finetune_main(argv=None) -> int:
    """``python -m bertcourse.finetune``; returns the exit code (0 done, 2 bad options,
    130 interrupted)."""
    return run_cli(_parse_finetune_args, _run_finetune, argv)

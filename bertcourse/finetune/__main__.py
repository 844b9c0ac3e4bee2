"""``python -m bertcourse.finetune``: fine-tuning's command line, for the four task shapes of
BERT's paper (its Figure 4), one chapter each:

    python -m bertcourse.finetune --task sentiment --out runs/sentiment   # chapter 9: a sentence -> a class
    python -m bertcourse.finetune --task nli --out runs/nli               # chapter 10: a pair -> a class
    python -m bertcourse.finetune --task ner --out runs/ner               # chapter 11: a tag per word
    python -m bertcourse.finetune --task qa --out runs/qa                 # chapter 12: an answer span

The options are read here, and :data:`TASKS` says what each task reads, builds, scores and saves,
with its chapter's recipe as the defaults; the training is the one
:func:`bertcourse.finetune.finetune` (chapter 9's sentiment starts its head from a linear probe:
:func:`~bertcourse.finetune.probe_then_finetune`). What every command shares (one-line errors,
exit codes 0 / 2 / 130, ``--device``) comes from :mod:`bertcourse.cli`.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import Callable

import torch

from ..answer_spans import WindowDataset, load_questions, squad_scores
from ..checkpoints import write_json
from ..cli import (Parser, UsageError, add_device_option, check_writable, nonnegative_float, nonnegative_int,
                   positive_float, positive_int, run_cli)
from ..i18n import gettext as _, gettext_noop as N_
from ..inspection import POOLINGS
from ..memory import cap_onednn_kernels
from ..hf_export import save_hf_question_answering, save_hf_token_classifier
from ..precision import cpu_has_fast_bf16
from ..reviews import load_sentiment, review_loader, stratified_subset
from ..sentence_pairs import LABELS, load_snli, pair_loader, stratified_pairs
from ..task_heads import build_span_predictor, build_tagger, predict_answers, predict_tags
from ..token_tags import TAGS, TaggedDataset, entity_scores, read_named_entities, split_by_document, token_accuracy
from ..utils import hash_sample
from . import (RECIPE, build_classifier, evaluate_classifier, finetune, fit_probe, probe_then_finetune,
               save_classifier)


# ----------------------------------------------------------------------------------------
# The tasks: what each reads, builds, scores and saves
# ----------------------------------------------------------------------------------------

def _sentiment_data():
    s = load_sentiment()
    return s.train, s.validation, s.test


def _nli_data():
    s = load_snli(test_size=1000, seed=0)           # chapter 10's split: all of its training pool
    return s.train, s.validation, s.test


def _ner_data():
    train, test = split_by_document(read_named_entities(), seed=0)     # chapter 11's split, no validation
    return train, None, test


def _qa_data():
    s = load_questions(train_size=None, test_size=300, seed=0)     # chapter 12's split, all of its training pool
    return s.train, s.validation, s.test


def _classifier(num_classes):
    def build(args):
        return build_classifier(args.model, num_classes=num_classes, pooling=args.pooling, seed=args.seed)
    return build


def _tagger(args):
    return build_tagger(args.model, num_tags=len(TAGS), seed=args.seed)


def _span_predictor(args):
    return build_span_predictor(args.model, seed=args.seed)


WINDOWS = dict(max_len=96, stride=32)
"""Chapter 12's windows over a paragraph: 96 pieces, overlapping by 32."""


def _windows(questions, tokenizer, only_with_answer: bool):
    return WindowDataset(questions, tokenizer, only_with_answer=only_with_answer, **WINDOWS)


def _qa_training_data(train, validation, tokenizer):
    # chapter 12: train (and watch the loss) on the windows that hold the answer
    return _windows(train, tokenizer, True), _windows(validation, tokenizer, True)


def _test_classifier(model, tokenizer, test, args, amp):
    loader = (pair_loader if args.task == "nli" else review_loader)(test, tokenizer, args.batch_size, by_length=True)
    acc = evaluate_classifier(model, loader, amp=amp)["acc"]
    return {"test_acc": acc}, [_("test accuracy: {acc:.3f}").format(acc=acc)]


def _test_tagger(model, tokenizer, test, args, amp):
    gold = [list(s.tags) for s in test]
    predicted = predict_tags(model, TaggedDataset(test, tokenizer))
    scores, acc = entity_scores(gold, predicted), token_accuracy(gold, predicted)
    return ({"test_entity_f1": scores["f1"], "test_entity_precision": scores["precision"],
             "test_entity_recall": scores["recall"], "test_token_acc": acc},
            [_("test token accuracy {acc:.3f}, entity precision {precision:.3f}, recall {recall:.3f}").format(
                acc=acc, precision=scores["precision"], recall=scores["recall"]),
             _("test entity F1: {f1:.3f}").format(f1=scores["f1"])])


def _test_spans(model, tokenizer, test, args, amp):
    scores = squad_scores(predict_answers(model, _windows(test, tokenizer, False), batch_size=16), test)
    return ({"test_exact_match": scores["exact_match"], "test_f1": scores["f1"]},
            [_("test exact match {em:.1f}").format(em=scores["exact_match"]),
             _("test F1: {f1:.1f}").format(f1=scores["f1"])])


def _save_classifier(out, model, tokenizer, trainer, extra, labels):
    save_classifier(out, model, tokenizer, trainer, extra={**extra, **({"labels": list(labels)} if labels else {})})
    return "the course's checkpoint (bertcourse.finetune.load_classifier reads it)"


def _save_tagger(out, model, tokenizer, trainer, extra, labels):
    save_hf_token_classifier(model, tokenizer, out, labels=list(labels))
    write_json(os.path.join(out, RUN_FILE), extra)
    return "a Hugging Face folder (transformers' AutoModelForTokenClassification reads it)"


def _save_span_predictor(out, model, tokenizer, trainer, extra, labels):
    save_hf_question_answering(model, tokenizer, out)
    write_json(os.path.join(out, RUN_FILE), extra)
    return "a Hugging Face folder (transformers' AutoModelForQuestionAnswering reads it)"


RUN_FILE = "run.json"
"""Where ``--task ner`` and ``--task qa`` keep the run's settings and test scores beside the Hugging
Face files (the classifiers keep them in their checkpoint's ``config.json``)."""


@dataclass(frozen=True)
class Task:
    """One task of the command: its chapter, what it trains on (``examples``: the word in the
    messages), the chapter's recipe (learning rate, batch size, word-embedding table frozen or
    not, training size) and the functions that read the data, build the model, choose a
    training subset, score the test split and save."""
    chapter: int
    examples: str
    lr: float
    batch_size: int
    freeze_word_embeddings: bool
    train_size: int | None          # None: the whole training pool
    data: Callable                  # () -> (train, validation or None, test)
    build: Callable                 # args -> (model, tokenizer)
    subset: Callable                # (train, n, seed) -> n of train
    test: Callable                  # (model, tokenizer, test, args, amp) -> (scores, lines to print)
    save: Callable                  # (out, model, tokenizer, trainer, extra, labels) -> what was written
    training_data: Callable = lambda train, validation, tokenizer: (train, validation)
    score: str = "test accuracy: 0.xxx"
    labels: tuple | None = None     # the names of the classes or tags, saved with the model
    amp: str = "auto"               # the chapter's precision: "off" where it trains in float32 on every CPU


TASKS = {
    "sentiment": Task(9, "sentences", RECIPE["lr"], RECIPE["batch_size"], False, None, _sentiment_data,
                      _classifier(2), stratified_subset, _test_classifier, _save_classifier),
    "nli": Task(10, "sentence pairs", 1e-4, RECIPE["batch_size"], True, 3000, _nli_data, _classifier(3),
                stratified_pairs, _test_classifier, _save_classifier, labels=LABELS, amp="off"),
    "ner": Task(11, "sentences", 4e-4, RECIPE["batch_size"], True, None, _ner_data, _tagger,
                lambda train, n, seed: hash_sample(train, n, seed, lambda s: s.sent_id),
                _test_tagger, _save_tagger, score="test entity F1: 0.xxx", labels=TAGS, amp="off"),
    "qa": Task(12, "questions", 2e-4, 4, True, 1000, _qa_data, _span_predictor,
               lambda train, n, seed: hash_sample(train, n, seed, lambda q: q.id),
               _test_spans, _save_span_predictor, training_data=_qa_training_data, score="test F1: xx.x",
               amp="off"),
}
"""The command's tasks, by the value of ``--task``; each one's defaults are its chapter's recipe."""

SCRATCH_LR = 3e-4
"""Chapter 9's learning rate for a randomly initialised encoder (``--task sentiment --model scratch``); the
other chapters train both starts at their one rate."""

# ----------------------------------------------------------------------------------------
# Options
# ----------------------------------------------------------------------------------------

def parser() -> Parser:
    p = Parser(prog="python -m bertcourse.finetune",
               description="Fine-tune BERT on one of the course's four tasks (data shipped with the package; "
                           "offline): sentiment (chapter 9: 2,400 review sentences, a class each), nli (chapter "
                           "10: SNLI sentence pairs, three classes), ner (chapter 11: Universal NER, a tag per "
                           "word) or qa (chapter 12: SQuADShifts questions, an answer span in a paragraph). "
                           "It reports the validation score after every epoch (ner has no validation split), "
                           "saves the model and scores it once on the test split. The last line printed is "
                           "the test score: 'test accuracy: 0.xxx' (sentiment, nli), 'test entity F1: 0.xxx' "
                           "(ner) or 'test F1: xx.x' (qa, in percent, as SQuAD reports it).",
               epilog="Example: python -m bertcourse.finetune --task nli --out runs/nli. Every default is the "
                      "task's chapter's recipe. Ctrl-C stops after the current step; the model is then saved "
                      "and evaluated.")
    p.add_argument("--task", default="sentiment",
                   help="sentiment, nli, ner or qa (default: sentiment)")
    p.add_argument("--model", default="minilm",
                   help="minilm: start from the pretrained all-MiniLM-L6-v2 (chapter 8); scratch: the same "
                        "architecture and tokenizer with random weights (default: minilm)")
    p.add_argument("--out", required=True,
                   help="output folder (created if needed): sentiment and nli write the course's checkpoint "
                        "(load_classifier reads it); ner and qa a Hugging Face folder (AutoModelForTokenClassification "
                        f"or AutoModelForQuestionAnswering reads it) with the run's settings and scores in {RUN_FILE}")
    p.add_argument("--epochs", type=positive_int("--epochs"), default=RECIPE["epochs"],
                   help=f"passes over the training examples (default: {RECIPE['epochs']})")
    p.add_argument("--lr", type=positive_float("--lr"), default=None,
                   help="peak learning rate of AdamW (default: the chapter's: sentiment 5e-5, or 3e-4 with "
                        "--model scratch; nli 1e-4; ner 4e-4; qa 2e-4)")
    p.add_argument("--batch-size", type=positive_int("--batch-size"), default=None,
                   help="examples per batch (default: 16; qa 4 windows)")
    p.add_argument("--warmup-ratio", type=nonnegative_float("--warmup-ratio"), default=RECIPE["warmup_ratio"],
                   help="fraction of the steps with a linear warm-up, at most 1 (default: 0.1)")
    p.add_argument("--weight-decay", type=nonnegative_float("--weight-decay"), default=RECIPE["weight_decay"],
                   help="AdamW weight decay on weight matrices (default: 0.01)")
    p.add_argument("--pooling", default=None,
                   help="sentiment and nli only: mean: average of the real tokens' states (what MiniLM was "
                        "trained for); cls: the [CLS] state through the pooler (default: mean)")
    p.add_argument("--head", default=None,
                   help="how the new layer starts: probe (sentiment only: fit a logistic regression on the "
                        "frozen pooled features first, then fine-tune everything: LP-FT) or random (default: "
                        "probe for sentiment with minilm, random otherwise)")
    p.add_argument("--train-size", type=positive_int("--train-size"), default=None,
                   help="train on this many examples, chosen by --seed (sentiment and nli: balanced over "
                        "labels); the default is the chapter's: all 2,400 sentences (sentiment), 3,000 of "
                        "8,936 sentence pairs (nli), all 3,058 sentences (ner), 1,000 of 6,929 questions (qa)")
    p.add_argument("--seed", type=nonnegative_int("--seed"), default=0,
                   help="seed of the new weights, dropout, batch order and --train-size's choice (the "
                        "validation and test splits are fixed; default: 0)")
    p.add_argument("--amp", default=None,
                   help="bf16 autocast: auto (when the CPU has fast bf16), on or off (default: the chapter's: "
                        "auto for sentiment; off for nli, ner and qa, whose chapters train in float32 on every "
                        "CPU)")
    p.add_argument("--threads", type=positive_int("--threads"), default=None,
                   help="torch threads (default: torch's choice)")
    p.add_argument("--checkpointing", action="store_true",
                   help="recompute each encoder block's activations in the backward pass instead of keeping "
                        "them: the same training, a fraction of the activation memory, about 30%% more time")
    p.add_argument("--freeze-word-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the word-embedding table as it is (no gradient, no AdamW moments: for MiniLM "
                        "3 x 47 MB less memory); default: the chapter's, frozen for nli, ner and qa, trained "
                        "for sentiment")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_device_option(p)
    return p


def parse_args(argv) -> argparse.Namespace:
    args = parser().parse_args(argv)
    if args.task not in TASKS:
        raise UsageError(f"--task must be one of {', '.join(TASKS)}, got {args.task!r}")
    task = TASKS[args.task]
    classifies = args.task in ("sentiment", "nli")
    if args.amp is None:
        args.amp = task.amp
    for option, value, choices in (("--model", args.model, ("minilm", "scratch")),
                                   ("--pooling", args.pooling or "mean", POOLINGS),
                                   ("--amp", args.amp, ("auto", "on", "off")),
                                   ("--head", args.head or "random", ("probe", "random"))):
        if value not in choices:
            raise UsageError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    if args.pooling is not None and not classifies:
        raise UsageError(f"--pooling is for the tasks that classify a whole input (sentiment, nli); --task "
                         f"{args.task} reads every piece's state, got --pooling {args.pooling}")
    if args.head == "probe" and args.task != "sentiment":
        raise UsageError(f"--head probe is chapter 9's recipe for --task sentiment; --task {args.task} starts "
                         f"its new layer at random (--head random)")
    if args.warmup_ratio > 1:
        raise UsageError(f"--warmup-ratio must be <= 1, got {args.warmup_ratio}")
    if args.lr is None:
        args.lr = SCRATCH_LR if args.task == "sentiment" and args.model == "scratch" else task.lr
    if args.batch_size is None:
        args.batch_size = task.batch_size
    if args.head is None:
        args.head = "probe" if args.task == "sentiment" and args.model == "minilm" else "random"
    if args.pooling is None and classifies:
        args.pooling = "mean"
    if args.freeze_word_embeddings is None:
        args.freeze_word_embeddings = task.freeze_word_embeddings
    if args.train_size is None:
        args.train_size = task.train_size
    check_writable(args.out)
    return args


# ----------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------

def run(args) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    task = TASKS[args.task]
    amp = {"auto": cpu_has_fast_bf16(), "on": True, "off": False}[args.amp]
    if amp:         # bf16 products compile a oneDNN kernel per batch shape: keep 16, not 1,024 (~100 MB less)
        cap_onednn_kernels()
    train, validation, test = task.data()
    if args.train_size is not None and args.train_size > len(train):
        raise UsageError(f"--train-size must be <= {len(train)} (the training {task.examples} of --task "
                         f"{args.task}), got {args.train_size}")
    if args.train_size is not None:
        train = task.subset(train, args.train_size, args.seed)
    print(_("loading {model} ...").format(model=args.model), flush=True)
    model, tokenizer = task.build(args)
    options = dict(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, warmup_ratio=args.warmup_ratio,
                   weight_decay=args.weight_decay, seed=args.seed, amp=amp, checkpointing=args.checkpointing,
                   train_word_embeddings=not args.freeze_word_embeddings, progress=not args.quiet, plot=False,
                   device=args.device)
    probe = None
    if args.head == "probe":
        probe, wd, accs = fit_probe(model, tokenizer, train, validation, amp=amp)
        print(_("head started from a linear probe on the frozen features (weight decay {wd:g}, validation "
                "accuracy {acc:.3f})").format(wd=wd, acc=accs[wd]), flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    pooling = _(", {pooling} pooling").format(pooling=args.pooling) if args.pooling else ""
    print(_("fine-tuning {model} ({parameters:,} parameters{pooling}) for {task} (chapter {chapter}) on "
            "{examples} for {epochs} epoch(s): lr {lr:g}, batch {batch}, {embeddings}, bf16 autocast: {amp}").format(
        model=_("pretrained all-MiniLM-L6-v2") if args.model == "minilm" else _("a randomly initialised MiniLM"),
        parameters=n_params, pooling=pooling, task=args.task, chapter=task.chapter,
        examples=_(_COUNTED[task.examples]).format(n=len(train)), epochs=args.epochs, lr=args.lr,
        batch=args.batch_size, amp=amp,
        embeddings=_("word embeddings frozen") if args.freeze_word_embeddings else _("word embeddings trained")),
          flush=True)
    fit_on, watch = task.training_data(train, validation, tokenizer)
    if probe is not None:
        trainer = probe_then_finetune(model, tokenizer, fit_on, watch, probe=probe, **options)
    else:
        trainer = finetune(model, tokenizer, fit_on, watch, **options)
    history = trainer.history
    per_epoch = max(1, math.ceil(len(fit_on) / args.batch_size))
    for ev in history.evals:
        print(_("epoch {epoch:.2f} (step {step}): validation {scores}").format(
            epoch=ev["step"] / per_epoch, step=ev["step"], scores=_validation(ev)), flush=True)
    scores, lines = task.test(model, tokenizer, test, args, amp)
    extra = {"task": args.task, "model": args.model, "head": args.head, "pooling": args.pooling,
             "epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "train_size": len(train),
             "seed": args.seed, "freeze_word_embeddings": args.freeze_word_embeddings, **scores,
             "validation": {k: v for k, v in history.evals[-1].items() if k != "step"} if history.evals else None,
             "train_seconds": trainer.elapsed, "stopped_by": history.stopped_by}
    written = task.save(args.out, model, tokenizer, trainer, extra, task.labels)
    ended = (_("interrupted: {steps} steps in {seconds:.1f} s; saved to {out}: {files}") if history.interrupted
             else _("done: {steps} steps in {seconds:.1f} s; saved to {out}: {files}"))
    print(ended.format(steps=trainer.step, seconds=trainer.elapsed, out=args.out, files=written), flush=True)
    for line in lines:
        print(line, flush=True)
    return 130 if history.interrupted else 0


_COUNTED = {"sentences": N_("{n:,} sentences"), "sentence pairs": N_("{n:,} sentence pairs"),
            "questions": N_("{n:,} questions")}       # a task's examples, counted (Task.examples)
_VALIDATION_NAMES = {"acc": N_("accuracy"), "start_acc": N_("start accuracy"), "end_acc": N_("end accuracy")}


def _validation(ev: dict) -> str:
    """A validation's scores as read aloud: ``accuracy 0.812`` or ``start accuracy 0.41, end accuracy 0.45``."""
    return ", ".join(f"{_(name)} {ev[key]:.3f}" for key, name in _VALIDATION_NAMES.items() if key in ev)


def main(argv=None) -> int:
    """The command; returns the exit code (0 done, 2 bad options, 130 interrupted)."""
    return run_cli(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())

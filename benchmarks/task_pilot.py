"""Pilot of BERT's other three task shapes on this CPU: what a chapter's budget buys (issue 45).

    python benchmarks/task_pilot.py --task nli --train-size 3000 --test-size 1000
    python benchmarks/task_pilot.py --task ner
    python benchmarks/task_pilot.py --task ner --validation --lr 4e-4 --seed 1     # chapter 11's learning rate
    python benchmarks/task_pilot.py --task qa --train-size 1500 --test-size 300 --max-len 192 --stride 64

Fine-tunes all-MiniLM-L6-v2 once (chapter 9's recipe: AdamW, warm-up 10 %, linear decay, one
epoch, batch 16) with the package's pieces only (sentence_pairs, token_tags, answer_spans,
task_heads, the one Trainer) and prints one JSON line: the training and evaluation seconds, the
scores and their standard errors, and the baselines, so that the chapters' sizes can be chosen
from measurements. One seed: a pilot, not a spread study.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch

from bertcourse.answer_spans import (WindowDataset, bootstrap_se, read_questions, sentence_overlap_answers,
                                     squad_scores, window_loader)
from bertcourse.finetune import build_classifier, classification_step, evaluate_classifier, finetune
from bertcourse.sentence_pairs import load_snli, majority_class_accuracy, pair_loader
from bertcourse.task_heads import (build_span_predictor, build_tagger, predict_answers, predict_tags, span_step,
                                   tagging_step)
from bertcourse.token_tags import (TAGS, TaggedDataset, all_o_tagger, entity_scores, most_frequent_tag,
                                   read_named_entities, split_by_document, tagged_loader, token_accuracy)
from bertcourse.training import TrainConfig, Trainer
from bertcourse.utils import set_threads


def binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def recipe(steps: int, lr: float, seed: int) -> TrainConfig:
    return TrainConfig(steps=steps, lr=lr, warmup_steps=round(0.1 * steps), final_lr_ratio=0.0, weight_decay=0.01,
                       clip=1.0, eval_every=None, seed=seed)


def nli(args) -> dict:
    splits = load_snli(train_size=args.train_size, test_size=args.test_size, seed=args.seed)
    out = {"train": len(splits.train), "test": len(splits.test),
           "majority": majority_class_accuracy(splits.train, splits.test)}
    for name, kwargs in (("pair", {}), ("hypothesis only", {"hypothesis_only": True})):
        clf, tok = build_classifier("minilm", num_classes=3, seed=args.seed)
        start = time.perf_counter()
        loader = pair_loader(splits.train, tok, 16, shuffle=True, seed=args.seed, **kwargs)
        Trainer(clf, loader, classification_step, recipe(len(loader), args.lr, args.seed)).fit(
            progress=False, plot=False)
        trained = time.perf_counter() - start
        acc = evaluate_classifier(clf, pair_loader(splits.test, tok, 64, by_length=True, **kwargs))["acc"]
        out[name] = {"acc": acc, "se": binomial_se(acc, len(splits.test)), "train_s": trained,
                     "eval_s": time.perf_counter() - start - trained}
    return out


def ner(args) -> dict:
    train, test = split_by_document(read_named_entities(), seed=args.seed)
    if args.train_size:
        train = train[:args.train_size]
    gold = [list(s.tags) for s in test]
    words = [list(s.words) for s in test]
    out = {"train": len(train), "test": len(test)}
    for name, predicted in (("all O", all_o_tagger(words)), ("most frequent tag", most_frequent_tag(train, words))):
        out[name] = {"f1": entity_scores(gold, predicted)["f1"], "token_acc": token_accuracy(gold, predicted)}
    tagger, tok = build_tagger("minilm", num_tags=len(TAGS), seed=args.seed)
    loader = tagged_loader(train, tok, 16, shuffle=True, seed=args.seed)
    start = time.perf_counter()
    Trainer(tagger, loader, tagging_step, recipe(len(loader), args.lr, args.seed)).fit(progress=False, plot=False)
    trained = time.perf_counter() - start
    predicted = predict_tags(tagger, TaggedDataset(test, tok))
    scores = entity_scores(gold, predicted)
    per_sentence = []      # a sentence-level bootstrap of F1: resample sentences, recompute F1
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        idx = torch.randint(0, len(test), (len(test),), generator=gen).tolist()
        per_sentence.append(entity_scores([gold[i] for i in idx], [predicted[i] for i in idx])["f1"])
    out["tagger"] = {"f1": scores["f1"], "f1_se": float(torch.tensor(per_sentence).std()),
                     "precision": scores["precision"], "recall": scores["recall"],
                     "token_acc": token_accuracy(gold, predicted), "train_s": trained,
                     "eval_s": time.perf_counter() - start - trained}
    return out


def ner_validation(args) -> dict:
    """Chapter 11's learning rate: its recipe (finetune, word embeddings frozen) trained on the training
    documents less a validation split of them (20 % of the sentences, by document), scored there."""
    train, _test = split_by_document(read_named_entities(), seed=0)
    fit, validation = split_by_document(train, test_share=0.2, seed=1)
    tagger, tok = build_tagger("minilm", num_tags=len(TAGS), seed=args.seed)
    trainer = finetune(tagger, tok, fit, lr=args.lr, train_word_embeddings=False, seed=args.seed, progress=False,
                       plot=False)
    predicted = predict_tags(tagger, TaggedDataset(validation, tok))
    return {"train": len(fit), "validation": len(validation), "train_s": trainer.elapsed,
            "validation_f1": entity_scores([list(s.tags) for s in validation], predicted)["f1"]}


def qa(args) -> dict:
    train = read_questions("squadshifts_new_wiki")[:args.train_size]
    test = read_questions("xquad_en")[:args.test_size]
    base = squad_scores(sentence_overlap_answers(test), test)
    out = {"train": len(train), "test": len(test),
           "overlap baseline": {"em": base["exact_match"], "f1": base["f1"],
                                "f1_se": 100 * bootstrap_se(base["f1_per_question"])}}
    model, tok = build_span_predictor("minilm", seed=args.seed)
    start = time.perf_counter()
    data = WindowDataset(train, tok, args.max_len, args.stride)
    loader = window_loader(data, tok, 16, shuffle=True, seed=args.seed)
    prepared = time.perf_counter() - start
    Trainer(model, loader, span_step, recipe(len(loader), args.lr, args.seed)).fit(progress=False, plot=False)
    trained = time.perf_counter() - start - prepared
    answers = predict_answers(model, WindowDataset(test, tok, args.max_len, args.stride))
    scores = squad_scores(answers, test)
    out["model"] = {"em": scores["exact_match"], "em_se": 100 * bootstrap_se(scores["em_per_question"]),
                    "f1": scores["f1"], "f1_se": 100 * bootstrap_se(scores["f1_per_question"]),
                    "windows": len(data), "prepare_s": prepared, "train_s": trained,
                    "eval_s": time.perf_counter() - start - prepared - trained}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=["nli", "ner", "qa"], required=True)
    p.add_argument("--train-size", type=int, default=None)
    p.add_argument("--test-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-len", type=int, default=192)
    p.add_argument("--stride", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--validation", action="store_true",
                   help="ner only: chapter 11's recipe, scored on a validation split of the training documents")
    args = p.parse_args(argv)
    threads = set_threads()
    start = time.perf_counter()
    task = ner_validation if args.validation and args.task == "ner" else {"nli": nli, "ner": ner, "qa": qa}[args.task]
    result = task(args)
    result.update(task=args.task, seed=args.seed, lr=args.lr, threads=threads, total_s=time.perf_counter() - start,
                  torch=torch.__version__)
    if args.task == "qa":
        result.update(max_len=args.max_len, stride=args.stride)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

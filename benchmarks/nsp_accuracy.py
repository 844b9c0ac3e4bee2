"""Chapter 7's pretraining run with other settings: held-out MLM and NSP accuracy, and NSP
accuracy by what could give a random sentence away (``bertcourse.corpus.nsp_cues``).

    python benchmarks/nsp_accuracy.py                       # the notebook's settings
    python benchmarks/nsp_accuracy.py --steps 2200 --heads 4 --batch-size 256

A script, not a test: it trains for about a minute per run. The defaults are exactly
notebook 07's (tiny config without dropout, 1,600 steps of 128 pairs, lr 5e-3, 50 warm-up
steps, one thread), so the first command reproduces the notebook's numbers.
"""
from __future__ import annotations

import argparse
import time

import torch

from bertcourse.bert import BERTModel, get_config
from bertcourse.pretraining_baselines import NSP_CUES, nsp_cues
from bertcourse.corpus import generate_corpus
from bertcourse.data import load_pretrain_data
from bertcourse.pretrain import TrainConfig, init_bert_weights, nsp_predictions, pretrain
from bertcourse.batching import bucketed_loader
from bertcourse.utils import set_seed


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1600, help="training steps (default 1600)")
    parser.add_argument("--batch-size", type=int, default=128, help="pairs per step (default 128)")
    parser.add_argument("--lr", type=float, default=5e-3, help="peak learning rate (default 5e-3)")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up steps (default 50)")
    parser.add_argument("--heads", type=int, default=2, help="attention heads (default 2)")
    parser.add_argument("--blocks", type=int, default=2, help="encoder blocks (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    set_seed(0)
    train_loader, tokenizer = load_pretrain_data(batch_size=args.batch_size, max_len=64, split="train", seed=0)
    heldout_loader, _ = load_pretrain_data(batch_size=128, max_len=64, split="held_out", seed=0)
    train_loader = bucketed_loader(train_loader.dataset, batch_size=args.batch_size, seed=0)
    next(iter(train_loader))   # the notebook looks at some batches first; this keeps its batch order
    set_seed(0)
    config = get_config("tiny", vocab_size=len(tokenizer.vocab), dropout=0.0, num_heads=args.heads,
                        num_blks=args.blocks)
    model = init_bert_weights(BERTModel(config))
    cfg = TrainConfig(steps=args.steps, lr=args.lr, warmup_steps=args.warmup, eval_every=None,
                      amp=False, seed=0)
    start = time.perf_counter()
    history = pretrain(model, train_loader, heldout_loader, cfg, progress=False, plot=False)
    seconds = time.perf_counter() - start

    pairs = heldout_loader.dataset.pairs
    correct = [int(p) == label for p, (_, _, label) in zip(nsp_predictions(model, heldout_loader), pairs)]
    final = history.final_eval
    assert abs(sum(correct) / len(correct) - final["nsp_acc"]) < 1e-9, "predictions and pairs out of step"
    cues = nsp_cues(generate_corpus(0), pairs, "held_out")
    print(f"{args.steps} steps of {args.batch_size} pairs in {seconds:.0f} s "
          f"({args.threads} thread(s), {args.heads} heads, {args.blocks} blocks)")
    print(f"held-out MLM accuracy {final['mlm_acc']:.3f}, NSP accuracy {final['nsp_acc']:.3f}")
    by_cue = {}
    for cue in NSP_CUES:
        hits = [c for c, k in zip(correct, cues) if k == cue]
        by_cue[cue] = sum(hits) / len(hits) if hits else float("nan")
        print(f"  {cue:36s} {len(hits):4d} pairs  accuracy {by_cue[cue]:.2f}")
    return {"seconds": seconds, **final, "by_cue": by_cue}


if __name__ == "__main__":
    main()

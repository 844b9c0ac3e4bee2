"""Why chapter 9's training-loss curve rises before it falls (issue 43, item 6).

Chapter 9 fine-tunes MiniLM with its head started from the linear probe (LP-FT) and plots
the mean of the last 10 training losses; the curve rises for a while in the middle of the
epoch before it falls. This script runs the chapter's recipe (the same calls and seed; the
chapter's own run draws other dropout masks, because the cells before it use the random
generator) and, before every training step, also records the loss of the same batch at the
same weights with dropout off (a forward pass in eval mode: it draws no random number, so
the training is the same to the bit). It prints the mean over windows of steps of:

* ``training loss``: what the chapter plots (dropout on);
* ``dropout off``: the recorded loss of the same batch at the same weights;
* ``no update``: the probe-initialised classifier's loss on the same batches, dropout off,
  without any weight update;
* ``updates did``: ``dropout off`` minus ``no update``, step by step (paired): what the
  weight updates did to the loss, with its standard error over the window's steps;

for the chapter's learning rate (5e-5) and a five times smaller one (1e-5).

    python benchmarks/finetune_curve.py            # about 3 minutes on 2 cores
"""
from __future__ import annotations

import statistics

import torch

import bertcourse.finetune as finetune_module
from bertcourse.finetune import (build_classifier, classification_loss, classification_step, init_head_from_probe,
                                 probe_then_finetune)
from bertcourse.finetuning_baselines import WEIGHT_DECAYS, frozen_features, select_weight_decay
from bertcourse.memory import unmap_large_blocks
from bertcourse.precision import autocast
from bertcourse.reviews import load_sentiment, review_loader
from bertcourse.training import cpu_has_fast_bf16
from bertcourse.utils import set_seed, set_threads

WINDOWS = [(1, 5), (6, 20), (21, 40), (41, 75), (76, 150)]


def windows(losses: list) -> str:
    """Mean ± standard error of ``losses`` (one per step) over each window of steps."""
    parts = []
    for a, b in WINDOWS:
        xs = losses[a - 1:b]
        parts.append(f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs) / len(xs) ** 0.5:.3f}")
    return " | ".join(parts)


def main() -> None:
    set_seed(0)
    set_threads()
    unmap_large_blocks()
    amp = cpu_has_fast_bf16()
    splits = load_sentiment(seed=0)
    features = frozen_features(amp=amp)
    probe, _wd, _val = select_weight_decay(features.mean["train"], features.labels["train"],
                                           features.mean["validation"], features.labels["validation"], WEIGHT_DECAYS)
    print(f"threads {torch.get_num_threads()}, bf16 {amp}; windows of steps: "
          + " | ".join(f"{a}-{b}" for a, b in WINDOWS))

    clf, tokenizer = build_classifier("minilm", pooling="mean", seed=0)
    init_head_from_probe(clf, probe)
    clf.eval()
    no_update = []
    with torch.no_grad(), autocast(amp, "cpu"):
        for batch in review_loader(splits.train, tokenizer, 16, shuffle=True, seed=0):
            no_update.append(float(classification_loss(clf(batch["tokens"], valid_lens=batch["mask"]).float(),
                                                       batch["labels"])))
    del clf

    for lr in (5e-5, 1e-5):
        dropout_off = []

        def recording_step(model, batch):
            with torch.no_grad(), autocast(amp, "cpu"):
                model.eval()                 # no dropout, so no random number drawn
                logits = model(batch["tokens"], valid_lens=batch["mask"]).float()
                model.train()
            dropout_off.append(float(classification_loss(logits, batch["labels"])))
            return classification_step(model, batch)

        finetune_module.classification_step = recording_step   # finetune() looks its step up here
        try:
            clf, tokenizer = build_classifier("minilm", pooling="mean", seed=0)
            trainer = probe_then_finetune(clf, tokenizer, splits.train, splits.validation, probe=probe, epochs=1,
                                          lr=lr, seed=0, amp=amp, checkpointing=True, train_word_embeddings=False,
                                          plot=False, progress=False)
        finally:
            finetune_module.classification_step = classification_step
        print(f"learning rate {lr:g}")
        print(f"  {'training loss':14s} {windows(trainer.history.metrics['loss'])}")
        print(f"  {'dropout off':14s} {windows(dropout_off)}")
        print(f"  {'no update':14s} {windows(no_update)}")
        print(f"  {'updates did':14s} {windows([x - y for x, y in zip(dropout_off, no_update)])}")
        del trainer, clf


if __name__ == "__main__":
    main()

"""Chapter 9's evaluations in the sentences' given order and shortest first
(``review_loader(..., by_length=True)``), side by side in one run: padded tokens, seconds and
the accuracy and mean loss each order gives.

    python benchmarks/eval_order.py
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/eval_order.py

The classifier is all-MiniLM-L6-v2 with its head started from the linear probe (chapter 9,
section 4, before fine-tuning): a real classifier (about 0.9 accuracy) without training one.
One thread, as the notebook; each timing is the best of three. bf16 autocast where the CPU
has it (``training.cpu_has_fast_bf16()``), float32 always. A script, not a test: the
seconds depend on the machine and its load; the accuracies must not depend on the order.
"""
from __future__ import annotations

import time

import torch

from bertcourse.finetune import build_classifier, evaluate_classifier, init_head_from_probe
from bertcourse.finetuning_baselines import WEIGHT_DECAYS, frozen_features, select_weight_decay
from bertcourse.reviews import load_sentiment, review_loader
from bertcourse.training import cpu_has_fast_bf16


def probe_headed_classifier(amp: bool):
    """``(classifier, tokenizer)``: chapter 9's MiniLM classifier with its head started from the
    linear probe on the frozen features (``amp``: their precision), before any fine-tuning."""
    F = frozen_features(amp=amp)
    probe, _, _ = select_weight_decay(F.mean["train"], F.labels["train"], F.mean["validation"],
                                      F.labels["validation"], WEIGHT_DECAYS)
    clf, tokenizer = build_classifier("minilm", pooling="mean", seed=0)
    init_head_from_probe(clf, probe)
    return clf, tokenizer


def main() -> None:
    torch.set_num_threads(1)
    splits = load_sentiment(0)
    clf, tokenizer = probe_headed_classifier(amp=False)
    print(f"CPU capability {torch.backends.cpu.get_cpu_capability()}, torch {torch.__version__}, one thread")
    print(f"{'split':10s} {'batch':>5s} {'precision':9s} {'order':9s} {'tokens':>7s} {'seconds':>8s} "
          f"{'accuracy':>8s} {'loss':>8s}")
    for amp in [False] + ([True] if cpu_has_fast_bf16() else []):
        for split, batch_size in (("validation", 16), ("validation", 64), ("test", 16)):
            for by_length in (False, True):
                loader = review_loader(splits[split], tokenizer, batch_size, by_length=by_length)
                tokens = sum(b["tokens"].numel() for b in loader)
                seconds = []
                for _ in range(3):
                    start = time.perf_counter()
                    result = evaluate_classifier(clf, loader, amp=amp)
                    seconds.append(time.perf_counter() - start)
                print(f"{split:10s} {batch_size:5d} {'bf16' if amp else 'float32':9s} "
                      f"{'shortest' if by_length else 'given':9s} {tokens:7d} {min(seconds):8.2f} "
                      f"{result['acc']:8.4f} {result['loss']:8.5f}", flush=True)


if __name__ == "__main__":
    main()

"""Chapter 9's Pitfall 4 (evaluating with dropout on): how much the fine-tuned classifier's
accuracy moves from one pass to the next in train mode, and so how likely it is that a few
passes happen to agree, which would make the pitfall's assertion (the passes differ) fail.

    python benchmarks/dropout_passes.py
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/dropout_passes.py

Fine-tunes the notebook's classifier (section 4's call, seed 0, one thread; bf16 autocast where
the CPU has it), then counts the correct answers of ``--passes`` train-mode passes over the
first 100 (the notebook's) and over all 300 validation sentences, in batches of 50, shortest
first (as the notebook), and prints, from those counts, the chance that 3, 5 or 8 passes (the
notebook's 8) all give the same accuracy. A script, not a test: a few CPU-minutes.
"""
from __future__ import annotations

import argparse
import collections

import torch

from eval_order import probe_headed_classifier      # the sibling script: the same classifier

from bertcourse.finetune import finetune
from bertcourse.reviews import load_sentiment, review_loader
from bertcourse.training import cpu_has_fast_bf16
from bertcourse.utils import set_seed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=150, help="train-mode passes per set of sentences")
    args = parser.parse_args()
    torch.set_num_threads(1)
    amp = cpu_has_fast_bf16()
    set_seed(0)
    splits = load_sentiment(0)
    clf, tokenizer = probe_headed_classifier(amp)
    finetune(clf, tokenizer, splits.train, splits.validation, epochs=1, lr=5e-5, batch_size=16, warmup_ratio=0.1,
             evals_per_epoch=3, seed=0, amp=amp, checkpointing=True, train_word_embeddings=False,
             progress=False, plot=False)
    print(f"CPU capability {torch.backends.cpu.get_cpu_capability()}, bf16 autocast {amp}, one thread")
    clf.train()                                        # the pitfall: dropout stays on
    for n in (100, 300):
        loader = review_loader(splits.validation[:n], tokenizer, batch_size=50, by_length=True)
        counts = collections.Counter()
        with torch.no_grad():
            for _ in range(args.passes):
                counts[sum(int((clf(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).sum())
                           for b in loader)] += 1
        share = {k: v / args.passes for k, v in counts.items()}
        print(f"{n} sentences, correct answers in {args.passes} passes: {dict(sorted(counts.items()))}")
        for runs in (3, 5, 8):
            print(f"  chance that {runs} passes give the same accuracy: "
                  f"{sum(p ** runs for p in share.values()):.4f}")


if __name__ == "__main__":
    main()

"""Forward pass of the course's BERT vs Hugging Face's BertModel, same weights (chapter 8).

    python benchmarks/real_bert_forward.py                  # batch 8 x 128, all-MiniLM-L6-v2
    python benchmarks/real_bert_forward.py --threads 2 --repeats 30

Three models with identical weights (all-MiniLM-L6-v2, loaded offline):

* course: ``load_pretrained("minilm").model.encoder`` with
  ``store_attention_weights(model, False)`` (the fused attention path; no weights kept);
* HF eager: ``BertModel`` with ``attn_implementation="eager"`` (explicit softmax);
* HF sdpa: ``BertModel`` with ``attn_implementation="sdpa"`` (PyTorch's fused attention).

The batch is 8 sequences of 128 tokens: real sentences, tokenized, padded to 128 with an
attention mask (so every model really masks padding). Everything runs under
``torch.inference_mode()`` with the same ``torch.get_num_threads()``. After a warm-up, the
three models are timed in turns (course, eager, sdpa, course, …) so that a change in the
machine's load hits all three alike; the script prints the median milliseconds per batch
(wall clock, and CPU time of the process, which a busy machine disturbs less) and the ratios. It first checks that the three outputs agree (max |diff| on real tokens).
A script, not a test: timings depend on the machine.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from bertcourse.attention import store_attention_weights
from bertcourse.pretrained_bert import load_pretrained

TEXTS = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Attention lets every token look at every other token in the sentence.",
    "BERT reads the whole sentence at once, left and right context together.",
    "A small model can still learn useful sentence embeddings.",
    "Tokenizers split rare words such as electroencephalography into pieces.",
    "The bank raised interest rates again this quarter.",
    "Layer normalisation keeps the activations in a sensible range.",
    "Pretrained weights save a lot of compute compared with training from scratch.",
]


def make_batch(pretrained, batch: int, seq: int):
    """``batch`` rows of real text, padded to ``seq`` tokens: row ``r`` has
    ``seq - r * seq // (2 * batch)`` real tokens (from ``seq`` down to about ``seq / 2``), so
    the attention mask really hides something, as in any batch of sentences."""
    text = " ".join(TEXTS * (1 + 2 * seq // 100))
    ids = pretrained.tokenizer.encode(text).ids              # [CLS] ... [SEP], truncated at max_len
    if len(ids) < seq:
        raise ValueError(f"seq={seq} is longer than the model's max_len={len(ids)}")
    sep = pretrained.tokenizer.token_to_id("[SEP]")
    tokens = torch.zeros(batch, seq, dtype=torch.long)        # [PAD] = 0
    mask = torch.zeros(batch, seq, dtype=torch.bool)
    for r in range(batch):
        n = seq - r * seq // (2 * batch)
        tokens[r, :n] = torch.tensor(ids[: n - 1] + [sep])
        mask[r, :n] = True
    return tokens, torch.zeros_like(tokens), mask


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import BertModel

    pretrained = load_pretrained("minilm")
    course = store_attention_weights(pretrained.model, False).encoder.eval()
    hf = {impl: BertModel.from_pretrained(str(pretrained.folder), attn_implementation=impl).eval()
          for impl in ("eager", "sdpa")}
    tokens, segments, mask = make_batch(pretrained, args.batch, args.seq)
    runs = {
        "course": lambda: course(tokens, segments, mask),
        "HF eager": lambda: hf["eager"](input_ids=tokens, token_type_ids=segments,
                                        attention_mask=mask.long()).last_hidden_state,
        "HF sdpa": lambda: hf["sdpa"](input_ids=tokens, token_type_ids=segments,
                                      attention_mask=mask.long()).last_hidden_state,
    }
    times = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    with torch.inference_mode():
        outs = {name: f() for name, f in runs.items()}
        diff = max(float((outs[n] - outs["course"])[mask].abs().max()) for n in outs)
        for _ in range(args.warmup):
            for f in runs.values():
                f()
        for _ in range(args.repeats):
            for name, f in runs.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                f()
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)

    ms = {name: 1000 * statistics.median(t) for name, t in times.items()}
    cpu_ms = {name: 1000 * statistics.median(t) for name, t in cpu.items()}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch {args.batch} x "
          f"{args.seq} tokens ({int(mask.sum())} real, {int((~mask).sum())} padding); "
          f"median of {args.repeats} runs after {args.warmup} warm-up rounds")
    print(f"max |diff| of the outputs on real tokens: {diff:.1e}")
    for name, v in ms.items():
        q1, q3 = (1000 * q for q in statistics.quantiles(times[name], n=4)[::2])
        print(f"  {name:9} {v:8.1f} ms per batch   (quartiles {q1:.1f} .. {q3:.1f}; "
              f"CPU time {cpu_ms[name]:.1f} ms)")
    print(f"speed of the course model relative to HF eager: {ms['HF eager'] / ms['course']:.2f}x, "
          f"relative to HF sdpa: {ms['HF sdpa'] / ms['course']:.2f}x  (> 1 = course faster)")
    print(f"the same ratios in CPU time (less sensitive to other processes on a busy machine): "
          f"{cpu_ms['HF eager'] / cpu_ms['course']:.2f}x and {cpu_ms['HF sdpa'] / cpu_ms['course']:.2f}x")


if __name__ == "__main__":
    main()

"""Time the offline data pipeline: corpus, WordPiece tokenizer, one DataLoader epoch.

    python benchmarks/data_pipeline.py

Issue target: under 10 s in all (after `import`) for the tiny model's setting on 2 cores.
Each stage starts from a cold cache (the generators are cached in-process, so the
script times them once, in order).
"""
import time

t0 = time.perf_counter()
from bertcourse.data import generate_corpus, get_tokenizer, load_pretrain_data  # noqa: E402

t_import = time.perf_counter()
corpus = generate_corpus(0)
t_corpus = time.perf_counter()
tokenizer = get_tokenizer(0)
t_tok = time.perf_counter()
loader, _ = load_pretrain_data(batch_size=128, max_len=64, split="train", seed=0)
examples = sum(len(batch["tokens"]) for batch in loader)
t_epoch = time.perf_counter()

print(f"import            {t_import - t0:6.2f} s")
print(f"corpus            {t_corpus - t_import:6.2f} s  ({len(corpus.sentences())} training sentences)")
print(f"tokenizer         {t_tok - t_corpus:6.2f} s  (vocabulary {len(tokenizer.vocab)})")
print(f"dataset + epoch   {t_epoch - t_tok:6.2f} s  ({examples} examples, batch 128, max_len 64)")
total = t_epoch - t_import
print(f"total after import {total:5.2f} s  (target < 10 s): {'OK' if total < 10 else 'OVER'}")

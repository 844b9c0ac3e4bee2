"""What pretraining buys without having seen SNLI (issue 45, item 4): chapter 10's pair model on
chapter 7's encoder, which was pretrained on the course's generated corpus only, against the same
network from random weights.

    python benchmarks/course_encoder.py --seeds 0 1 2 3 4 --threads 2 --out benchmarks/course_encoder.json
    python benchmarks/course_encoder.py --table benchmarks/course_encoder.json

all-MiniLM-L6-v2, chapter 10's starting point, was trained on SNLI's pairs among a billion others,
so its 0.67-0.71 mixes what general pretraining buys with what it had already seen; from random
weights the same recipe reaches 0.41-0.42 (``spread_chapters.py``). Chapter 7's tiny BERT never saw
SNLI. For each seed, this script pretrains it with chapter 7's recipe (``tiny`` with dropout 0,
1,600 steps of 128 pairs, peak learning rate 5e-3 after 50 warm-up steps, float32, the corpus and
tokenizer of seed 0; the seed drives the initial weights, masks and batch order), then fine-tunes
two starts with chapter 10's split (3,000 training, 900 validation, 1,000 test pairs) and recipe
(batch 16, AdamW, warm-up 10 %, linear decay; one epoch as there, and three), except that the word-embedding table is
trained (it is 3,000 x 64 here, not MiniLM's 30,522 x 384, and a random one must learn), the
peak learning rate is chosen on the validation pairs from ``LRS`` for each start, since a small
network from random weights wants a larger one than MiniLM's 1e-4, and the precision is
``finetune``'s automatic one (bf16 autocast where the CPU has fast bf16, as the Zen 4 of the committed
run has; chapter 10 trains in float32), the same for both starts:

* ``course``: the pretrained encoder, a new head;
* ``random``: the same network and tokenizer, BERT's initialisation (seeded), a new head.

One JSON line per result on stdout (and, with ``--out``, all of them in one file: the committed
``course_encoder.json`` is the run of 2026-11-30 on the 2-core AMD EPYC Zen 4, native kernels, 2 threads,
while other jobs shared the machine, so its seconds are not timings); ``--table`` prints the per-start
summary the README and chapter 10 quote: the learning rate chosen on validation (best mean over the
seeds), then the test accuracy at it (mean, range, and the binomial standard error of one run on 1,000
pairs), and the two starts' gap seed by seed.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

LRS = (3e-4, 1e-3, 3e-3)
EPOCHS = (1, 3)
PRETRAIN = dict(steps=1600, lr=5e-3, warmup_steps=50, eval_every=400, amp=False)   # chapter 7's cell


def pretrain_course_encoder(seed: int, folder: str) -> dict:
    """Chapter 7's pretraining with ``seed``, saved as a Hugging Face folder; its held-out scores."""
    from bertcourse.bert import BERTModel, get_config
    from bertcourse.data import load_pretrain_data
    from bertcourse.hf_export import save_hf_checkpoint
    from bertcourse.pretrain import TrainConfig, init_bert_weights, pretrain
    from bertcourse.utils import set_seed

    train_loader, tokenizer = load_pretrain_data(batch_size=128, max_len=64, split="train", seed=0)
    heldout_loader, _ = load_pretrain_data(batch_size=128, max_len=64, split="held_out", seed=0)
    set_seed(seed)
    model = init_bert_weights(BERTModel(get_config("tiny", vocab_size=len(tokenizer.vocab), dropout=0.0)))
    start = time.perf_counter()
    history = pretrain(model, train_loader, heldout_loader, TrainConfig(seed=seed, device="cpu", **PRETRAIN),
                       progress=False, plot=False)
    save_hf_checkpoint(model, tokenizer, folder)
    return {"seconds": time.perf_counter() - start, **{k: history.final_eval[k] for k in ("mlm_acc", "nsp_acc")}}


def finetune_pairs(pretrained, random_weights: bool, lr: float, epochs: int, seed: int) -> dict:
    """Chapter 10's pair model on ``pretrained`` (or on its network re-initialised): validation and test accuracy."""
    import torch

    from bertcourse.finetune import build_classifier, evaluate_classifier, finetune
    from bertcourse.pretrain import init_bert_weights
    from bertcourse.sentence_pairs import load_snli, pair_loader

    splits = load_snli(train_size=3000, test_size=1000, seed=0)          # chapter 10's split, whatever the seed
    clf, tok = build_classifier(pretrained, num_classes=3, seed=seed)
    if random_weights:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            init_bert_weights(clf.encoder)
    start = time.perf_counter()
    trainer = finetune(clf, tok, splits.train, splits.validation, epochs=epochs, lr=lr, seed=seed,
                       train_word_embeddings=True, progress=False, plot=False)
    test = evaluate_classifier(clf, pair_loader(splits.test, tok, 64, by_length=True))["acc"]
    truncated = pair_loader(splits.test, tok, 64).dataset.truncated       # pairs cut to 64 pieces
    return {"validation_acc": trainer.history.evals[-1]["acc"], "test_acc": test,
            "seconds": time.perf_counter() - start, "test_pairs_cut": truncated}


def run(seeds, threads: int | None, out: pathlib.Path | None) -> list[dict]:
    import torch

    from bertcourse.pretrained_bert import load_pretrained

    if threads:
        torch.set_num_threads(threads)
    results = []

    def record(row):
        row.update(threads=torch.get_num_threads(), torch=torch.__version__)
        results.append(row)
        print(json.dumps(row), flush=True)
        if out is not None:
            out.write_text(json.dumps(results, indent=1) + "\n")

    for seed in seeds:
        with tempfile.TemporaryDirectory() as folder:
            record({"kind": "pretrain", "seed": seed, **pretrain_course_encoder(seed, folder)})
            pretrained = load_pretrained(folder)
            for start_name in ("course", "random"):
                for epochs in EPOCHS:
                    for lr in LRS:
                        record({"kind": "finetune", "start": start_name, "seed": seed, "epochs": epochs, "lr": lr,
                                **finetune_pairs(pretrained, start_name == "random", lr, epochs, seed)})
    return results


def summary(results: list[dict]) -> dict:
    """Per (start, epochs): the learning rate with the best mean validation accuracy over the seeds, that
    mean, and the test accuracy of each seed at it: ``{(start, epochs): {"lr", "validation", "test": {seed:
    accuracy}}}``."""
    runs = [r for r in results if r["kind"] == "finetune"]
    out = {}
    for start in ("course", "random"):
        for epochs in EPOCHS:
            by_lr = {}
            for r in runs:
                if r["start"] == start and r["epochs"] == epochs:
                    by_lr.setdefault(r["lr"], []).append(r)
            if by_lr:
                lr, rows = max(by_lr.items(), key=lambda kv: statistics.mean(r["validation_acc"] for r in kv[1]))
                out[start, epochs] = {"lr": lr, "validation": statistics.mean(r["validation_acc"] for r in rows),
                                      "test": {r["seed"]: r["test_acc"] for r in rows}}
    return out


def table(results: list[dict]) -> str:
    """:func:`summary` as the README's table, then the two starts' gap seed by seed, and the pretraining runs."""
    from bertcourse.measured_bounds import standard_error

    lines = ["| start | epochs | lr (best on validation) | validation | test: mean (range) over seeds | seeds |",
             "|---|---|---|---|---|---|"]
    rows = summary(results)
    for (start, epochs), row in rows.items():
        test = list(row["test"].values())
        m = statistics.mean(test)
        lines.append(f"| {start} | {epochs} | {row['lr']:g} | {row['validation']:.3f} | {m:.3f} ({min(test):.3f}-"
                     f"{max(test):.3f}; one run ± {standard_error(m, 1000):.3f}) | {len(test)} |")
    lines.append("")
    for epochs in EPOCHS:      # the same seed's two starts, each at its chosen learning rate
        course = rows.get(("course", epochs), {}).get("test", {})
        scratch = rows.get(("random", epochs), {}).get("test", {})
        gaps = [course[s] - scratch[s] for s in sorted(course.keys() & scratch.keys())]
        if gaps:
            lines.append(f"{epochs} epoch(s): course - random, seed by seed: "
                         + ", ".join(f"{g:+.3f}" for g in gaps) + f" (mean {statistics.mean(gaps):+.3f})")
    pre = [r for r in results if r["kind"] == "pretrain"]
    if pre:
        lines.append("")
        lines.append(f"Pretraining ({len(pre)} seeds): held-out MLM accuracy "
                     f"{min(r['mlm_acc'] for r in pre):.3f}-{max(r['mlm_acc'] for r in pre):.3f}, NSP "
                     f"{min(r['nsp_acc'] for r in pre):.3f}-{max(r['nsp_acc'] for r in pre):.3f}, "
                     f"{statistics.mean(r['seconds'] for r in pre):.0f} s each on {pre[0]['threads']} threads.")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--out", type=pathlib.Path, default=None, help="write every result to this JSON file")
    p.add_argument("--table", type=pathlib.Path, default=None, help="summarise a file --out wrote, run nothing")
    args = p.parse_args(argv)
    if args.table is not None:
        print(table(json.loads(args.table.read_text())))
        return 0
    print(table(run(args.seeds, args.threads, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

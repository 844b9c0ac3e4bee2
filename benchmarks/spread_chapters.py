"""The trained numbers of chapters 3, 7, 10 (sentence pairs, since 2026-11-29) and 14 (the scaling-up
chapter, chapter 10 until 2026-11-28) over seeds and machines (issue 22, item 3; issue 45): how far
each number the notebooks assert moves, so that their margins come from a measured spread and not
from one run. Chapter 10's configurations and seeds: CHAPTER10_CONFIGS and SEEDS below.

    python benchmarks/spread_chapters.py                                # seeds 0-1, both configurations
    python benchmarks/spread_chapters.py --seeds 0 1 2 3 4 --jobs 14 --deadline-s 420 --out other.json
    python benchmarks/spread_chapters.py --table                        # the README's tables (every machine's file)
    python benchmarks/spread_chapters.py --table a.json b.json          # runs of several machines

Each (chapter, configuration, seed) runs in a subprocess of its own, because the variables that
choose PyTorch's CPU kernels are read when torch is imported; the configurations are chapter 9's
(``benchmarks/spread.py``):

* ``native``: this CPU's best kernels, with the course's automatic precision; chapters 3, 7, 10,
  11, 12 and 14 train in float32 whatever the CPU (``amp=False`` / ``--amp off`` in their cells;
  10-12 since 2026-11-30, when a CPU with fast bf16 took them past 900 MB), so here the kernels
  alone differ;
* ``fp32-avx2``: ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2``.
* ``native-2-threads``, ``fp32-avx2-2-threads``: the same on two threads (chapters 3 and 7 use
  every core, ``bertcourse.utils.set_threads``; chapter 14 trains in one-thread processes and is
  not run in them). Such a worker takes two cores: on a 2-core machine, ``--jobs 1``.

A worker repeats the notebook's calls (the configuration's threads, the notebook's settings) with ``seed`` in
place of the notebook's 0 where a seed drives *training*: ``set_seed`` before a model is built,
the trainer's seed (batch order, dropout) and the batch sampler's. The data and the evaluation
probes stay the notebook's (chapter 3's dates and its peeking probe, chapter 7's corpus,
tokenizer, masks and held-out pairs), as chapter 9's study keeps its test split: the spread
measured is that of training, which is what another CPU changes. Chapter 14's command line has
one ``--seed`` for everything (corpus, tokenizer, masks and model), so there the seed changes
the data too. Training runs on the CPU even where a GPU is present (the notebooks' "auto").

Robust for long runs on many cores: ``--jobs N`` runs N workers at once (longest chapter
first), every value is written to ``--out`` as soon as a worker prints it (an interrupted run
loses at most the part it was in), a (chapter, configuration, seed) already complete in the
file for this CPU and torch is not run again (the CPU as ``/proc/cpuinfo`` names it: a machine that
shares another's name, as the course's Zen 3, Zen 4 and Zen 5 "AMD EPYC"s do, needs its own
``--out``), and ``--deadline-s S`` starts no new worker after
S seconds. Each run records the CPU (``/proc/cpuinfo``), torch's version, its CPU capability and
whether bf16 autocast was used.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import spread
from spread import emit, locked, save  # chapter 9's study: the same results and files

# chapter 9's two default configurations, and the same on two threads (the notebooks use every core:
# bertcourse.utils.set_threads); its bf16 one does not apply: these chapters never use autocast
CONFIGS = {name: spread.CONFIGS[name] for name in (*spread.DEFAULT_CONFIGS, *spread.TWO_THREAD_CONFIGS)}
# PyTorch's portable kernels (no vector instructions of its own; oneDNN and MKL keep theirs): on a
# machine whose native kernels are AVX2 already, the one configuration that differs from native
CONFIGS["fp32-default"] = {"ATEN_CPU_CAPABILITY": "default", spread.THREADS: "1"}

DEFAULT_OUT = HERE / "spread_chapters.json"
CHAPTERS = ("7", "12", "10", "11", "3", "14")       # the longest first, so that --jobs finishes together
# chapter 14 trains in processes of one thread each (one per core): the thread configurations do not apply
ONE_THREAD_CHAPTERS = ("14",)


# Chapter 10 (measured from 2026-11-29 on a Zen 3 EPYC whose best kernels *are* AVX2, so that "native" is
# the AVX2 laptop's configuration: its seed 0 under fp32-avx2 gave the same numbers to the last digit):
# native, PyTorch's portable kernels, and two threads. Each run fine-tunes MiniLM two or three times.
CHAPTER10_CONFIGS = ("native", "fp32-default", "native-2-threads")
# Chapter 11 (named entities, from 2026-11-29, the same Zen 3): the same configurations and seeds.
SEEDS = {(c, config): seeds for c in ("10", "11")
         for config, seeds in (("fp32-default", (0, 1, 2)), ("native-2-threads", (0, 1)))}     # else 0-4
# Chapter 12 (question answering, from 2026-11-29, the same Zen 3): three seeds natively and with the portable
# kernels, seed 0 on two threads (the notebook's), as issue 45 allows for question answering
SEEDS.update({("12", "native"): (0, 1, 2), ("12", "fp32-default"): (0, 1, 2), ("12", "native-2-threads"): (0,)})


def configs_for(chapter: str) -> list[str]:
    """The configurations a chapter is measured in."""
    if chapter in ("10", "11", "12"):
        return list(CHAPTER10_CONFIGS)
    return [c for c in CONFIGS if not (chapter in ONE_THREAD_CHAPTERS and c in spread.TWO_THREAD_CONFIGS)
            and c != "fp32-default"]


def seeds_for(chapter: str, config: str) -> tuple:
    """The seeds a chapter is measured with in a configuration."""
    return SEEDS.get((chapter, config), (0, 1, 2, 3, 4))


def cpu_info() -> dict:
    """The CPU's model name and the flags that decide its kernels, from ``/proc/cpuinfo``."""
    model, flags = "unknown", set()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"cpu": model, "cpu_flags": sorted(flags & {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})}


def torch_version() -> str:
    return importlib.metadata.version("torch")


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


# ----------------------------------------------------------------------------------------
# Chapter 3: notebooks/03_transformer.ipynb
# ----------------------------------------------------------------------------------------

def chapter3(seed: int) -> None:
    import math

    import torch

    from bertcourse.attention import inspect_attention, store_attention_weights
    from bertcourse.seq2seq import exact_match, make_batch, make_date_dataset, sequence_loss, train_seq2seq, translate
    from bertcourse.transformer import EncoderDecoder, TransformerDecoder, TransformerEncoder, greedy_decode
    from bertcourse.utils import set_seed

    set_seed(seed)
    ds = make_date_dataset(num_train=20_000, num_valid=1_000, seed=0)       # the data stay the notebook's
    train = dict(src_vocab=ds.src_vocab, tgt_vocab=ds.tgt_vocab, progress=False, device="cpu", seed=seed)

    def make_model(causal=True, **overrides):                                # cell "make_model"
        set_seed(seed)
        kw = dict(num_hiddens=64, ffn_num_hiddens=128, num_heads=4, num_blks=2, dropout=0.0, max_len=32)
        kw.update(overrides)
        encoder = TransformerEncoder(len(ds.src_vocab), **kw)
        decoder = TransformerDecoder(len(ds.tgt_vocab), causal=causal, **kw)
        return store_attention_weights(EncoderDecoder(encoder, decoder), False)

    # section "training": 200 steps, exact match on the 1,000 validation dates
    model = make_model()
    losses = train_seq2seq(model, ds.train, num_steps=200, batch_size=128, lr=3e-3, warmup=50, **train)
    emit("training", {"exact_match": exact_match(model, ds.valid, ds.src_vocab, ds.tgt_vocab),
                      "loss_last20": mean(losses[-20:])})

    # post-norm vs pre-norm vs warm-up (4 + 4 blocks, lr 3e-2, 40 steps)
    counts = {}
    for _, tgt in ds.train:
        for ch in tgt + ["<eos>"]:
            counts[ch] = counts.get(ch, 0) + 1
    total = sum(counts.values())
    runs = {}
    for name, norm_first, warmup in [("post-norm, no warm-up", False, 0), ("pre-norm, no warm-up", True, 0),
                                     ("post-norm, 20 warm-up steps", False, 20)]:
        m = make_model(num_hiddens=32, ffn_num_hiddens=64, num_blks=4, norm_first=norm_first)
        runs[name] = mean(train_seq2seq(m, ds.train, num_steps=40, batch_size=64, lr=3e-2, warmup=warmup,
                                        **train)[-10:])
    emit("norm_order", {"frequency_loss": -sum(n / total * math.log(n / total) for n in counts.values()),
                        "last10": runs})

    # cached and uncached greedy decoding agree (cell "step t attends to ...")
    batch = make_batch(ds.valid[:200], ds.src_vocab, ds.tgt_vocab)
    kw = dict(bos_id=ds.tgt_vocab.bos_id, eos_id=ds.tgt_vocab.eos_id, max_len=16)
    same = torch.equal(greedy_decode(model, batch.src, batch.src_valid_lens, use_cache=True, **kw),
                       greedy_decode(model, batch.src, batch.src_valid_lens, use_cache=False, **kw))

    # cross-attention of the trained model on the first validation date: as
    # bertcourse.widgets.transformer.example_attention (not imported: widgets need ipywidgets)
    source = ds.valid[0][0]
    prediction = translate(model, [source], ds.src_vocab, ds.tgt_vocab)[0]
    dec_in = torch.tensor([[ds.tgt_vocab.bos_id] + ds.tgt_vocab.encode(prediction)])
    with inspect_attention(model):
        model(torch.tensor([ds.src_vocab.encode(source)]), dec_in, torch.tensor([len(source)]))
    cross = model.decoder.cross_attention_weights[0][0, 0]                  # layer 0, head 0
    emit("cross_attention", {"prediction": "".join(prediction), "cache_agrees": same,
                             "looks_at": [source[j] for j in cross.argmax(-1).tolist()]})

    # without the causal mask (100 steps): teacher-forced loss, exact match, weight on the
    # future, peeking rate (cells of section "Pitfalls", replicated: the notebook defines them)
    leaky = make_model(causal=False)
    train_seq2seq(leaky, ds.train, num_steps=100, batch_size=128, lr=3e-3, warmup=50, **train)
    valid = make_batch(ds.valid, ds.src_vocab, ds.tgt_vocab)
    probe = make_batch(ds.valid[:200], ds.src_vocab, ds.tgt_vocab)

    def teacher_forced_loss(m):
        with torch.no_grad():
            logits = m(valid.src, valid.dec_inputs, valid.src_valid_lens)
        return sequence_loss(logits, valid.labels, valid.tgt_valid_lens).item()

    def future_weight(m):
        store_attention_weights(m, True)
        with torch.no_grad():
            m(probe.src, probe.dec_inputs, probe.src_valid_lens)
        return [torch.triu(w, diagonal=1).sum(-1).mean().item() for w in m.decoder.self_attention_weights]

    def peeking_rate(m):
        g = torch.Generator().manual_seed(0)                                 # the notebook's probe
        with torch.no_grad():
            base = m(probe.src, probe.dec_inputs, probe.src_valid_lens).argmax(-1)
            changed = 0
            for t in range(10):
                x = probe.dec_inputs.clone()
                x[:, t + 1] = torch.randint(3, len(ds.tgt_vocab), (len(x),), generator=g)
                changed += (m(probe.src, x, probe.src_valid_lens).argmax(-1)[:, t] != base[:, t]).sum().item()
        return changed / (10 * len(x))

    emit("no_causal_mask", {"teacher_forced_loss": teacher_forced_loss(leaky),
                            "exact_match": exact_match(leaky, ds.valid, ds.src_vocab, ds.tgt_vocab),
                            "future_weight": future_weight(leaky), "peeking_rate": peeking_rate(leaky),
                            "masked_future_weight": future_weight(model), "masked_peeking_rate": peeking_rate(model),
                            "masked_teacher_forced_loss": teacher_forced_loss(model)})


# ----------------------------------------------------------------------------------------
# Chapter 7: notebooks/07_pretraining.ipynb
# ----------------------------------------------------------------------------------------

def chapter7(seed: int) -> None:
    import itertools
    import re

    import torch
    from torch.utils.data import DataLoader, Subset

    from bertcourse.inspection import attention_maps
    from bertcourse.pretraining_baselines import NSP_CUES, baselines, nsp_cues
    from bertcourse.batching import bucketed_loader
    from bertcourse.bert import BERTModel, get_config
    from bertcourse.data import cloze_items, generate_corpus, load_pretrain_data
    from bertcourse.pretrain import TrainConfig, evaluate, init_bert_weights, mlm_accuracy, nsp_predictions, pretrain
    from bertcourse.utils import set_seed

    set_seed(seed)
    # the data stay the notebook's (seed 0): corpus, tokenizer, masks, held-out pairs
    train_loader, tokenizer = load_pretrain_data(batch_size=128, max_len=64, split="train", seed=0)
    heldout_loader, _ = load_pretrain_data(batch_size=128, max_len=64, split="held_out", seed=0)
    vocab = tokenizer.vocab
    batch = next(iter(heldout_loader))
    train_loader = bucketed_loader(train_loader.dataset, batch_size=128, seed=seed)
    # the notebook previews 200 batches of this loader before training: that draws one epoch's
    # order from the sampler's generator, so training starts from the second (same for us)
    next(iter(train_loader))

    set_seed(seed)
    config = get_config("tiny", vocab_size=len(vocab), dropout=0.0)
    model = init_bert_weights(BERTModel(config))
    cfg = TrainConfig(steps=1600, lr=5e-3, warmup_steps=50, eval_every=400, amp=False, seed=seed, device="cpu")
    history = pretrain(model, train_loader, heldout_loader, cfg, progress=False, plot=False)
    final = history.final_eval
    base = baselines(train_loader, heldout_loader)
    emit("training", {"loss_first20": mean(history["loss"][:20]), "loss_last20": mean(history["loss"][-20:]),
                      "mlm_acc": final["mlm_acc"], "nsp_acc": final["nsp_acc"], "seconds": history.time[-1],
                      "baselines": base})

    # NSP by cue
    corpus = generate_corpus(0)
    pairs = heldout_loader.dataset.pairs
    predicted = nsp_predictions(model, heldout_loader)
    by_cue = {cue: [] for cue in NSP_CUES}
    for cue, p, (_, _, label) in zip(nsp_cues(corpus, pairs, "held_out"), predicted, pairs):
        by_cue[cue].append(int(p) == label)
    emit("nsp_by_cue", {cue: mean(hits) for cue, hits in by_cue.items()})

    # cloze: right kind vs right fact (replicated from the notebook's cloze cells)
    world = corpus.world
    values_of = {}
    for (_, relation), value in world.facts.items():
        values_of.setdefault(relation, set()).add(value)

    def right_kind(guess, item):
        return guess in values_of[item.fact.relation] or (
            item.answer in world.names and world.names.get(guess) == world.names[item.answer])

    model.eval()
    kind, fact = [], []
    with torch.no_grad():
        for it in cloze_items(corpus, "held_out"):
            if len(tokenizer.tokenize(it.answer)) != 1:
                continue
            ids = [vocab.cls_id, *tokenizer.encode(it.masked), vocab.sep_id]
            x = torch.tensor([ids])
            _, logits, _ = model(x, torch.zeros_like(x), torch.tensor([len(ids)]),
                                 torch.tensor([[ids.index(vocab.mask_id)]]))
            guess = vocab.to_tokens(logits[0, 0].topk(3).indices.tolist())[0]
            kind.append(right_kind(guess, it))
            fact.append(guess == it.answer)
    emit("cloze", {"questions": len(kind), "right_kind": mean(kind), "right_fact": mean(fact)})

    # attention inside the own sentence, per layer and head (200 held-out pairs)
    own_share = torch.zeros(2, 2)
    for a, b, _ in pairs[:200]:
        _, segments, w = attention_maps(model, tokenizer, a, b)
        seg = torch.tensor(segments)
        own_share += (w * (seg[:, None] == seg[None, :])).sum(-1).mean(-1) / 200
    emit("own_sentence_attention", own_share.tolist())

    # word senses: cosine of "silver" / "gold" vectors within and across senses (replicated)
    senses = {"metal": ("export", "sells", "famous"), "colour": ("flag", "colours")}
    set_seed(seed)
    untrained = init_bert_weights(BERTModel(config)).eval()

    @torch.no_grad()
    def word_vector(m, sentence, word):
        ids = [vocab.cls_id, *tokenizer.encode(sentence), vocab.sep_id]
        position = ids.index(vocab.to_ids([word])[0])
        x = torch.tensor([ids])
        return m.encoder(x, torch.zeros_like(x), torch.tensor([len(ids)]))[0, position], position

    train_sentences = sorted({s for paragraph in corpus.split("train") for s in paragraph})
    model.eval()
    cosines = {}
    for word in ("silver", "gold"):
        found = [s for s in train_sentences if re.search(rf"\b{word}\b", s)]
        labelled = [([k for k, keys in senses.items() if any(key in s.split() for key in keys)][0], s) for s in found]
        for name, m in [("trained", model), ("untrained", untrained)]:
            vectors = [word_vector(m, s, word) for _, s in labelled]
            same, cross = [], []
            for (sa, (va, pa)), (sb, (vb, pb)) in itertools.combinations(zip([k for k, _ in labelled], vectors), 2):
                if pa == pb:
                    (same if sa == sb else cross).append(torch.cosine_similarity(va, vb, dim=0).item())
            cosines[f"{word}, {name}"] = {"same": mean(same), "cross": mean(cross)}
    emit("word_senses", cosines)

    # memorised masks: training pairs with their training masks, with fresh masks, held-out pairs
    dataset = train_loader.dataset
    on_train = evaluate(model, DataLoader(Subset(dataset, range(1024)), batch_size=128))
    dataset.dynamic_masking, trained_epoch = True, dataset.epoch
    dataset.set_epoch(1)
    on_train_fresh = evaluate(model, DataLoader(Subset(dataset, range(1024)), batch_size=128))
    dataset.dynamic_masking = False
    dataset.set_epoch(trained_epoch)
    emit("memorised_masks", {"training_masks": on_train["mlm_acc"], "fresh_masks": on_train_fresh["mlm_acc"],
                             "held_out": evaluate(model, heldout_loader)["mlm_acc"]})

    # dropout left on at evaluation: three train-mode passes against eval mode
    noisy = BERTModel(get_config("tiny", vocab_size=len(vocab), dropout=0.1))
    noisy.load_state_dict(model.state_dict())

    def accuracy_in_current_mode(m):
        with torch.no_grad():
            _, logits, _ = m(batch["tokens"], batch["segments"], batch["valid_lens"], batch["pred_positions"])
        return mlm_accuracy(logits, batch["mlm_labels"], batch["mlm_weights"]).item()

    set_seed(seed)
    noisy.train()
    train_mode = [accuracy_in_current_mode(noisy) for _ in range(3)]
    noisy.eval()
    emit("dropout", {"train_mode": train_mode, "eval_mode": [accuracy_in_current_mode(noisy) for _ in range(3)]})


# ----------------------------------------------------------------------------------------
# Chapter 14: notebooks/14_scaling_up.ipynb (the command line, 1 and 2 processes)
# ----------------------------------------------------------------------------------------

def chapter14(seed: int) -> None:
    from bertcourse.distributed import launch

    common = ["-m", "bertcourse.pretrain", "--config", "tiny", "--batch-size", "128", "--eval-every", "100000",
              "--quiet", "--amp", "off", "--device", "cpu", "--threads", "1", "--seed", str(seed)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    commands = {1: [sys.executable] + common + ["--steps", "250", "--out", "one"],
                2: [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
                   + common + ["--steps", "250", "--out", "two"]}
    with tempfile.TemporaryDirectory(prefix="spread-ch14-") as folder:
        for n, command in commands.items():
            launch(command, cwd=folder, env=env, timeout_s=600)
            run = pathlib.Path(folder) / ("one" if n == 1 else "two")
            h = json.loads((run / "trainer_state.json").read_text())["history"]
            extra = json.loads((run / "config.json").read_text())["extra"]
            loss = h["metrics"]["loss"]
            emit(f"processes_{n}", {"world_size": extra["world_size"], "steps": len(loss),
                                    "loss_first10": mean(loss[:10]), "loss_last10": mean(loss[-10:]),
                                    "mlm_acc": h["evals"][-1]["mlm_acc"], "nsp_acc": h["evals"][-1]["nsp_acc"],
                                    "seconds": h["time"][-1]})


# ----------------------------------------------------------------------------------------
# Chapter 10: notebooks/10_sentence_pairs.ipynb (natural language inference on SNLI)
# ----------------------------------------------------------------------------------------

CH10_SPLITS = dict(train_size=3000, test_size=1000, seed=0)     # the notebook's data, whatever the seed
CH10_RECIPE = dict(lr=1e-4, train_word_embeddings=False, amp=False)       # the notebook's finetune() arguments


def chapter10(seed: int) -> None:
    """Section 4's pair model (and, as the notebook reads them, its test accuracy as typed, swapped and
    with the segment ids left at 0), then the runs the notebook quotes: the same training on the
    hypothesis alone, and on a randomly initialised MiniLM (seeds 0-2 on native kernels only)."""
    import torch

    from bertcourse.bert import confusion_matrix
    from bertcourse.finetune import build_classifier, evaluate_classifier, finetune, predict_proba
    from bertcourse.finetuning_baselines import one_side_baselines
    from bertcourse.sentence_pairs import PairDataset, load_snli, pair_loader

    splits = load_snli(**CH10_SPLITS)
    bow = one_side_baselines(splits)         # no seed: the kernels alone change its last digits
    emit("one_side_bow", {side: r["test"] for side, r in bow.items()})

    def train(source, **kwargs):
        clf, tok = build_classifier(source, num_classes=3, seed=seed)
        start = time.perf_counter()
        trainer = finetune(clf, tok, splits.train, splits.validation, seed=seed, progress=False, plot=False,
                           **CH10_RECIPE, **kwargs)
        return clf, tok, trainer, time.perf_counter() - start

    clf, tok, trainer, seconds = train("minilm")
    test = evaluate_classifier(clf, pair_loader(splits.test, tok, 64, by_length=True))["acc"]
    labels = torch.tensor([p.label for p in splits.test])
    as_typed = predict_proba(clf, tok, splits.test).argmax(-1)
    swapped = predict_proba(clf, tok, [type(p)(p.hypothesis, p.premise, p.label) for p in splits.test]).argmax(-1)
    zero_segments = evaluate_classifier(clf, [{**b, "segments": torch.zeros_like(b["segments"])}
                                              for b in pair_loader(splits.test, tok, 64, by_length=True)])["acc"]
    emit("pair", {"test_acc": test, "validation_acc": trainer.history.evals[-1]["acc"], "seconds": seconds,
                  "amp": CH10_RECIPE["amp"], "predicted_acc": float((as_typed == labels).float().mean()),
                  "swapped_acc": float((swapped == labels).float().mean()),
                  "changed_on_swap": {str(y): float((as_typed != swapped)[labels == y].float().mean()) for y in range(3)},
                  "confusion": confusion_matrix(labels, as_typed, 3).tolist(),
                  "swapped_confusion": confusion_matrix(as_typed, swapped, 3).tolist(),
                  "zero_segments_acc": zero_segments})
    avx2 = bool(os.environ.get("ATEN_CPU_CAPABILITY"))
    for name, source, kwargs in (("hypothesis_only", "minilm", {"hypothesis_only": True}),
                                 ("scratch", "scratch", {})):
        if name == "scratch" and (avx2 or seed > 2):
            continue
        model, tok = build_classifier(source, num_classes=3, seed=seed)
        data = {k: PairDataset(getattr(splits, k), tok, **kwargs) for k in ("train", "validation", "test")}
        start = time.perf_counter()
        finetune(model, tok, data["train"], data["validation"], seed=seed, progress=False, plot=False, **CH10_RECIPE)
        seconds = time.perf_counter() - start
        acc = evaluate_classifier(model, pair_loader(data["test"], tok, 64, by_length=True, **kwargs))["acc"]
        emit(name, {"test_acc": acc, "seconds": seconds})


CH11_RECIPE = dict(lr=4e-4, train_word_embeddings=False, amp=False)       # the notebook's finetune() arguments


def chapter11(seed: int) -> None:
    """Section 4's tagger (its entity F1, precision, recall and token accuracy on the 1,020 test
    sentences, with the bootstrap standard errors the notebook computes), the baselines it is held
    to (no seed: they are counts), and the run the notebook quotes: the same training with a label
    on every piece of a word (seeds 0-2 on native kernels only)."""
    import torch

    from bertcourse.finetune import finetune
    from bertcourse.task_heads import build_tagger, predict_piece_tags, predict_tags
    from bertcourse.token_tags import (TAGS, TaggedDataset, all_o_tagger, entity_f1_se, entity_scores,
                                       most_frequent_tag, read_named_entities, split_by_document, token_accuracy,
                                       word_tags)

    train, test = split_by_document(read_named_entities(), seed=0)
    gold, words = [list(s.tags) for s in test], [list(s.words) for s in test]
    frequent = most_frequent_tag(train, words)
    emit("baselines", {name: {"f1": entity_scores(gold, tags)["f1"], "token_acc": token_accuracy(gold, tags)}
                       for name, tags in (("all_o", all_o_tagger(words)), ("most_frequent", frequent),
                                          ("most_frequent_lowercase", most_frequent_tag(train, words, lowercase=True)))})

    def run(label_all_pieces: bool) -> dict:
        tagger, tok = build_tagger("minilm", num_tags=len(TAGS), seed=seed)
        start = time.perf_counter()
        finetune(tagger, tok, TaggedDataset(train, tok, label_all_pieces=label_all_pieces), seed=seed,
                 progress=False, plot=False, **CH11_RECIPE)
        seconds = time.perf_counter() - start
        data = TaggedDataset(test, tok)
        predicted = predict_tags(tagger, data)
        scores = entity_scores(gold, predicted)
        # the pitfall: each word reads the tag predicted one piece before its first
        late = [torch.cat([best[:1], best[:-1]]) for best in predict_piece_tags(tagger, data)]
        shifted = [word_tags(ids, tags, len(s.words)) for ids, tags, s in zip(data.word_ids, late, data.sentences)]
        return {"f1": scores["f1"], "precision": scores["precision"], "recall": scores["recall"],
                "off_by_one_f1": entity_scores(gold, shifted)["f1"],
                "token_acc": token_accuracy(gold, predicted), "seconds": seconds,
                "per_type_f1": {k: v["f1"] for k, v in scores["per_type"].items()},
                "f1_se": entity_f1_se(gold, predicted), "minus_most_frequent_se": entity_f1_se(gold, predicted, frequent)}

    emit("tagger", run(False))
    if not os.environ.get("ATEN_CPU_CAPABILITY") and seed <= 2:
        emit("all_pieces", run(True))


CH12_RECIPE = dict(lr=2e-4, batch_size=4, train_word_embeddings=False, amp=False)  # the notebook's finetune() arguments
CH12_SPLITS = dict(train_size=1000, test_size=300, seed=0)                     # its load_questions() arguments
CH12_WINDOWS = dict(max_len=96, stride=32)


def chapter12(seed: int) -> None:
    """Section 4's model (exact match and F1 on the 300 test questions, the F1's bootstrap standard
    error and the paired one of its gap to the sentence baseline), the baseline (no seed), the pitfall's
    counts (no seed), and two runs the text quotes (seed 0 on native kernels only): training on every
    window, and the same head on a randomly initialised encoder."""
    from bertcourse.answer_spans import (WindowDataset, answer_positions, bootstrap_se, load_questions, make_windows,
                                         sentence_overlap_answers, squad_scores)
    from bertcourse.finetune import finetune
    from bertcourse.task_heads import build_span_predictor, predict_answers

    splits = load_questions(**CH12_SPLITS)
    test = splits.test
    baseline = squad_scores(sentence_overlap_answers(test), test)
    emit("baseline", {"em": baseline["exact_match"], "f1": baseline["f1"]})

    def run(source: str, only_with_answer: bool) -> dict:
        model, tok = build_span_predictor(source, seed=seed)
        windows = WindowDataset(splits.train, tok, only_with_answer=only_with_answer, **CH12_WINDOWS)
        start = time.perf_counter()
        finetune(model, tok, windows, seed=seed, progress=False, plot=False, **CH12_RECIPE)
        seconds = time.perf_counter() - start
        scores = squad_scores(predict_answers(model, WindowDataset(test, tok, **CH12_WINDOWS), batch_size=16), test)
        gap = [a - b for a, b in zip(scores["f1_per_question"], baseline["f1_per_question"])]
        return {"em": scores["exact_match"], "f1": scores["f1"], "f1_se": 100 * bootstrap_se(scores["f1_per_question"]),
                "em_se": 100 * bootstrap_se(scores["em_per_question"]), "minus_baseline_se": 100 * bootstrap_se(gap),
                "windows": len(windows), "seconds": seconds}

    emit("model", run("minilm", True))
    if not os.environ.get("ATEN_CPU_CAPABILITY") and seed == 0 and torch_threads() == 1:
        _, tok = build_span_predictor("minilm", seed=0)
        emit("whole_somewhere", {str(stride): sum(
            any(answer_positions(w, *q.answers[0]) != (0, 0)
                for w in make_windows(tok, q.question, q.context, stride=stride, max_len=CH12_WINDOWS["max_len"]))
            for q in test) for stride in (0, CH12_WINDOWS["stride"])})
        emit("every_window", run("minilm", False))
        emit("scratch", run("scratch", True))


def torch_threads() -> int:
    import torch
    return torch.get_num_threads()


WORKERS = {"3": chapter3, "7": chapter7, "10": chapter10, "11": chapter11, "12": chapter12, "14": chapter14}


def worker(chapter: str, seed: int) -> None:
    import torch

    from bertcourse.training import cpu_has_fast_bf16
    from bertcourse.utils import set_threads

    set_threads()                         # as the notebooks: BERTCOURSE_THREADS, set by the configuration
    # tokenizers trains chapter 7's and 10's WordPiece vocabulary: another version could change the data
    emit("setup", {**cpu_info(), "torch": torch.__version__, "tokenizers": importlib.metadata.version("tokenizers"),
                   "python": sys.version.split()[0], "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                   "cpu_has_fast_bf16": cpu_has_fast_bf16(), "amp": False, "threads": torch.get_num_threads(),
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    WORKERS[chapter](seed)


# ----------------------------------------------------------------------------------------
# What the notebooks assert, on the values of one run
# ----------------------------------------------------------------------------------------

class Check:
    """One assertion of a notebook on a trained number.

    ``number(v)``: the number shown in the table, from a run's ``values``; ``slack(v)``: how far
    inside the asserted bound the run is (the assertion holds when it is ``> 0``; for an
    assertion that is true or false, 1 or -1). ``source``: the notebook's own assertion, word
    for word (``tests/test_spread_chapters.py`` checks that the notebook still says it, so the
    bounds here and there cannot drift apart). ``committed``: the committed notebook's value,
    as it prints it."""

    def __init__(self, chapter, name, committed, asserted, source, number, slack=None):
        self.chapter, self.name, self.committed, self.asserted, self.source = chapter, name, committed, asserted, source
        self.number, self.slack = number, slack

    def holds(self, v) -> bool | None:
        return None if self.slack is None else self.slack(v) > 0


def _true(flag) -> float:
    return 1.0 if flag else -1.0


def _ch3_cross(v):
    c = v["cross_attention"]
    # the month (outputs 5-6) is not checked: seed 4 writes the month's first digit looking at "tenth"
    return (c["prediction"] == "1965-05-10" and set(c["looks_at"][0:4]) <= {"nineteen", "sixty", "five"}
            and c["looks_at"][8:10] == ["tenth", "tenth"])


_last10 = lambda v, name: v["norm_order"]["last10"][name]
_freq = lambda v: v["norm_order"]["frequency_loss"]
_base = lambda v, name: v["training"]["baselines"][name]


def _cue(v, i):
    from bertcourse.pretraining_baselines import NSP_CUES    # imports torch: only where a table is made
    return v["nsp_by_cue"][NSP_CUES[i]]


_sense = lambda v, word, kind: v["word_senses"][f"{word}, trained"][kind]
_masks = lambda v, name: v["memorised_masks"][name]

CHECKS = [
    # chapter 3
    Check("3", "exact match, 1,000 validation dates", "1.00", ">= 0.95", "em >= 0.95",
          lambda v: v["training"]["exact_match"], lambda v: v["training"]["exact_match"] - 0.95 + 1e-12),
    Check("3", "post-norm, no warm-up: last-10 loss - frequency loss", "2.28 - 2.27", "abs(d) < 0.1",
          'abs(last10["post-norm, no warm-up"] - frequency_loss) < 0.1',
          lambda v: _last10(v, "post-norm, no warm-up") - _freq(v),
          lambda v: 0.1 - abs(_last10(v, "post-norm, no warm-up") - _freq(v))),
    Check("3", "pre-norm, no warm-up: last-10 loss", "1.25", "< 2.27 - 0.6",
          'last10["pre-norm, no warm-up"] < frequency_loss - 0.6',
          lambda v: _last10(v, "pre-norm, no warm-up"), lambda v: _freq(v) - 0.6 - _last10(v, "pre-norm, no warm-up")),
    Check("3", "post-norm, 20 warm-up steps: last-10 loss", "0.67", "< 2.27 - 0.6",
          'last10["post-norm, 20 warm-up steps"] < frequency_loss - 0.6',
          lambda v: _last10(v, "post-norm, 20 warm-up steps"),
          lambda v: _freq(v) - 0.6 - _last10(v, "post-norm, 20 warm-up steps")),
    Check("3", "post-norm with warm-up - pre-norm (last-10 losses)", "0.67 - 1.25", "< 0",
          'last10["post-norm, 20 warm-up steps"] < last10["pre-norm, no warm-up"]',
          lambda v: _last10(v, "post-norm, 20 warm-up steps") - _last10(v, "pre-norm, no warm-up"),
          lambda v: _last10(v, "pre-norm, no warm-up") - _last10(v, "post-norm, 20 warm-up steps")),
    Check("3", "cross-attention: 1965-05-10, argmax on nineteen/sixty/five and tenth", "yes", "exact strings",
          'looks_at[8:10] == ["tenth", "tenth"]',
          lambda v: float(_ch3_cross(v)), lambda v: _true(_ch3_cross(v))),
    Check("3", "cached and uncached greedy decoding agree (200 dates)", "yes", "equal",
          "assert torch.equal(with_cache, without)",
          lambda v: float(v["cross_attention"]["cache_agrees"]), lambda v: _true(v["cross_attention"]["cache_agrees"])),
    Check("3", "no causal mask: teacher-forced validation loss", "0.06", "< 0.1", "teacher_forced_loss(leaky) < 0.1",
          lambda v: v["no_causal_mask"]["teacher_forced_loss"], lambda v: 0.1 - v["no_causal_mask"]["teacher_forced_loss"]),
    Check("3", "no causal mask: exact match", "0.00", "< 0.05", "leaky_em < 0.05",
          lambda v: v["no_causal_mask"]["exact_match"], lambda v: 0.05 - v["no_causal_mask"]["exact_match"]),
    Check("3", "no causal mask: weight on future positions, smaller layer", "0.45", "> 0.2",
          "min(future_weight(leaky)) > 0.2",
          lambda v: min(v["no_causal_mask"]["future_weight"]), lambda v: min(v["no_causal_mask"]["future_weight"]) - 0.2),
    Check("3", "no causal mask: prediction at t changed by input at t+1", "0.24", "> 0.1", "peeking_rate(leaky) > 0.1",
          lambda v: v["no_causal_mask"]["peeking_rate"], lambda v: v["no_causal_mask"]["peeking_rate"] - 0.1),
    # chapter 7
    Check("7", "training loss, last 20 / first 20 steps", "1.4 / 8.3", "< 0.5",
          'sum(history["loss"][-20:]) < 0.5 * sum(history["loss"][:20])',
          lambda v: v["training"]["loss_last20"] / v["training"]["loss_first20"],
          lambda v: 0.5 - v["training"]["loss_last20"] / v["training"]["loss_first20"]),
    Check("7", "held-out MLM / most frequent token", "0.69 / 0.14", ">= 3",
          'final["mlm_acc"] >= 3 * base["mlm_most_frequent"]',
          lambda v: v["training"]["mlm_acc"] / _base(v, "mlm_most_frequent"),
          lambda v: v["training"]["mlm_acc"] / _base(v, "mlm_most_frequent") - 3 + 1e-12),
    Check("7", "held-out MLM - bigram baseline", "0.69 - 0.39", "> 0.1",
          'final["mlm_acc"] > base["mlm_bigram"] + 0.1',
          lambda v: v["training"]["mlm_acc"] - _base(v, "mlm_bigram"),
          lambda v: v["training"]["mlm_acc"] - _base(v, "mlm_bigram") - 0.1),
    Check("7", "held-out MLM - both-neighbours baseline", "0.69 - 0.65", "abs(d) < 0.1",
          'abs(final["mlm_acc"] - base["mlm_both_neighbours"]) < 0.1',
          lambda v: v["training"]["mlm_acc"] - _base(v, "mlm_both_neighbours"),
          lambda v: 0.1 - abs(v["training"]["mlm_acc"] - _base(v, "mlm_both_neighbours"))),
    Check("7", "held-out NSP accuracy", "0.82", ">= 0.65", 'final["nsp_acc"] >= 0.65',
          lambda v: v["training"]["nsp_acc"], lambda v: v["training"]["nsp_acc"] - 0.65 + 1e-12),
    Check("7", "NSP by cue: B follows A", "0.95", "> 0.75", "acc[NSP_CUES[0]] > 0.75",
          lambda v: _cue(v, 0), lambda v: _cue(v, 0) - 0.75),
    Check("7", "NSP by cue: B opens a paragraph", "0.98", "> 0.75", "acc[NSP_CUES[1]] > 0.75",
          lambda v: _cue(v, 1), lambda v: _cue(v, 1) - 0.75),
    Check("7", "NSP by cue: B is about another kind of thing", "0.75", "> 0.5", "acc[NSP_CUES[3]] < 0.5 < acc[NSP_CUES[2]]",
          lambda v: _cue(v, 2), lambda v: _cue(v, 2) - 0.5),
    Check("7", "NSP by cue: B is about the same kind of thing", "0.27", "< 0.5", "acc[NSP_CUES[3]] < 0.5 < acc[NSP_CUES[2]]",
          lambda v: _cue(v, 3), lambda v: 0.5 - _cue(v, 3)),
    Check("7", "cloze: right kind - right fact", "0.93 - 0.05", "> 0.2", "kind_acc > fact_acc + 0.2",
          lambda v: v["cloze"]["right_kind"] - v["cloze"]["right_fact"],
          lambda v: v["cloze"]["right_kind"] - v["cloze"]["right_fact"] - 0.2),
    Check("7", "attention inside the own sentence, largest head", "0.95", "> 0.8", "own_share.max() > 0.8",
          lambda v: max(map(max, v["own_sentence_attention"])), lambda v: max(map(max, v["own_sentence_attention"])) - 0.8),
    Check("7", "attention inside the own sentence, smallest head", "0.66", "not asserted", None,
          lambda v: min(map(min, v["own_sentence_attention"]))),
    Check("7", "silver: cosine same sense - cross sense", "0.93 - 0.77", "> 0.04",
          'trained["cosine, same sense"] - trained["cosine, cross sense"] > 0.04',
          lambda v: _sense(v, "silver", "same") - _sense(v, "silver", "cross"),
          lambda v: _sense(v, "silver", "same") - _sense(v, "silver", "cross") - 0.04),
    Check("7", "gold: cosine same sense - cross sense", "0.94 - 0.86", "> 0.04",
          'trained["cosine, same sense"] - trained["cosine, cross sense"] > 0.04',
          lambda v: _sense(v, "gold", "same") - _sense(v, "gold", "cross"),
          lambda v: _sense(v, "gold", "same") - _sense(v, "gold", "cross") - 0.04),
    Check("7", "silver: cosine across senses", "0.77", "< 0.95", 'trained["cosine, cross sense"] < 0.95',
          lambda v: _sense(v, "silver", "cross"), lambda v: 0.95 - _sense(v, "silver", "cross")),
    Check("7", "gold: cosine across senses", "0.86", "< 0.95", 'trained["cosine, cross sense"] < 0.95',
          lambda v: _sense(v, "gold", "cross"), lambda v: 0.95 - _sense(v, "gold", "cross")),
    Check("7", "untrained model: smallest cosine (silver and gold)", "1.00", "> 0.99",
          'min(before["cosine, same sense"], before["cosine, cross sense"]) > 0.99',
          lambda v: min(min(v["word_senses"][f"{w}, untrained"].values()) for w in ("silver", "gold")),
          lambda v: min(min(v["word_senses"][f"{w}, untrained"].values()) for w in ("silver", "gold")) - 0.99),
    Check("7", "memorised masks: training masks - held-out", "0.73 - 0.69", "> 0",
          'on_train["mlm_acc"] > on_heldout["mlm_acc"]',
          lambda v: _masks(v, "training_masks") - _masks(v, "held_out"),
          lambda v: _masks(v, "training_masks") - _masks(v, "held_out")),
    Check("7", "memorised masks: training masks - fresh masks", "0.73 - 0.65", "> 0.03",
          'on_train["mlm_acc"] > on_train_fresh["mlm_acc"] + 0.03',
          lambda v: _masks(v, "training_masks") - _masks(v, "fresh_masks"),
          lambda v: _masks(v, "training_masks") - _masks(v, "fresh_masks") - 0.03),
    Check("7", "memorised masks: fresh masks - held-out", "0.65 - 0.69", "< 0.02",
          'on_train_fresh["mlm_acc"] < on_heldout["mlm_acc"] + 0.02',
          lambda v: _masks(v, "fresh_masks") - _masks(v, "held_out"),
          lambda v: 0.02 - (_masks(v, "fresh_masks") - _masks(v, "held_out"))),
    Check("7", "dropout at evaluation: eval mode - best of 3 train-mode passes", "0.686 - 0.516", "> 0",
          "max(train_mode) < eval_mode[0]",
          lambda v: v["dropout"]["eval_mode"][0] - max(v["dropout"]["train_mode"]),
          lambda v: v["dropout"]["eval_mode"][0] - max(v["dropout"]["train_mode"])),
    Check("7", "dropout: train-mode passes differ, eval-mode passes agree", "yes", "true",
          "len(set(train_mode)) > 1 and len(set(eval_mode)) == 1",
          lambda v: float(len(set(v["dropout"]["train_mode"])) > 1 and len(set(v["dropout"]["eval_mode"])) == 1),
          lambda v: _true(len(set(v["dropout"]["train_mode"])) > 1 and len(set(v["dropout"]["eval_mode"])) == 1)),
]
for _n in (1, 2):
    CHECKS += [
        Check("14", f"{_n} process{'es' if _n > 1 else ''}: loss of the last 10 / first 10 steps", "not printed",
              "< 1", 'assert all(sum(r["loss"][-10:]) < sum(r["loss"][:10]) for r in result.values())',
              lambda v, n=_n: v[f"processes_{n}"]["loss_last10"] / v[f"processes_{n}"]["loss_first10"],
              lambda v, n=_n: 1 - v[f"processes_{n}"]["loss_last10"] / v[f"processes_{n}"]["loss_first10"]),
        Check("14", f"{_n} process{'es' if _n > 1 else ''}: held-out MLM accuracy after 250 steps",
              "0.239" if _n == 1 else "0.285", "not asserted", None, lambda v, n=_n: v[f"processes_{n}"]["mlm_acc"]),
    ]
CHECKS.append(Check("14", "2 processes - 1 process: held-out MLM accuracy", "0.285 - 0.239", "not asserted", None,
                    lambda v: v["processes_2"]["mlm_acc"] - v["processes_1"]["mlm_acc"]))


# chapter 10: accuracies on its 1,000 test pairs, each with a binomial standard error of about 0.015
def _se(p: float, n: int = 1000) -> float:
    return (p * (1 - p) / n) ** 0.5


_pair = lambda v: v["pair"]["predicted_acc"]            # the notebook's: predict_proba, then argmax
_hyp_bow = lambda v: v["one_side_bow"]["hypothesis"]
_hyp_bert = lambda v: v["hypothesis_only"]["test_acc"]
_changed = lambda v, y: v["pair"]["changed_on_swap"][str(y)]
# true label y predicted as 2 - y: the anti-diagonal of the confusion matrix (rows: true labels)
_reversed = lambda v: sum(v["pair"]["confusion"][y][2 - y] for y in range(3)) / 1000
CHECKS += [
    Check("10", "pair model - hypothesis-only bag of words", "0.70 - 0.55", "> 3 sqrt(2) SE",
          "assert pair_acc - hypothesis_bow > 3 * (2 ** 0.5) * se",
          lambda v: _pair(v) - _hyp_bow(v), lambda v: _pair(v) - _hyp_bow(v) - 3 * 2 ** 0.5 * _se(_pair(v))),
    Check("10", "hypothesis-only bag of words - majority class", "0.55 - 0.334", "> 0.15",
          "assert hypothesis_bow - majority > 0.15",
          lambda v: _hyp_bow(v) - 0.334, lambda v: _hyp_bow(v) - 0.334 - 0.15),
    Check("10", "changed on swap: entailment - contradiction", "not printed", "> 0.1",
          'assert changed["entailment"] > changed["contradiction"] + 0.1',
          lambda v: _changed(v, 0) - _changed(v, 2), lambda v: _changed(v, 0) - _changed(v, 2) - 0.1),
    Check("10", "labels read in the reversed order (0 <-> 2): accuracy", "0.21", "< 1/3 < pair",
          "assert reversed_acc < 1 / 3 < pair_acc",
          lambda v: _reversed(v), lambda v: min(1 / 3 - _reversed(v), _pair(v) - 1 / 3)),
    # quoted in the text, not asserted by the notebook (tests/test_spread_chapters.py checks the claims)
    Check("10", "pair model, test accuracy", "0.70", "not asserted", None, _pair),
    Check("10", "hypothesis-only MiniLM, test accuracy", "not run", "not asserted", None, _hyp_bert),
    Check("10", "pair model - hypothesis-only MiniLM", "not run", "not asserted", None,
          lambda v: _pair(v) - _hyp_bert(v)),
    Check("10", "segment ids set to 0 - as trained", "not run", "not asserted", None,
          lambda v: v["pair"]["zero_segments_acc"] - v["pair"]["test_acc"]),
]


# chapter 11: entity F1 on its 1,020 test sentences, with bootstrap standard errors over the sentences
# (entity_f1_se: about 0.022 for F1, 0.026 to 0.030 for the paired gap to the most frequent tag)
_f1 = lambda v: v["tagger"]["f1"]
_frequent = lambda v: v["baselines"]["most_frequent"]["f1"]
CHECKS += [
    Check("11", "tagger - most frequent tag: entity F1", "0.69 - 0.35", "> 3 SE of the gap (paired bootstrap)",
          'assert scores["f1"] - floor_scores["most frequent tag"][1] > 3 * se_gap',
          lambda v: _f1(v) - _frequent(v),
          lambda v: _f1(v) - _frequent(v) - 3 * v["tagger"]["minus_most_frequent_se"]),
    Check("11", "read one piece late < most frequent tag < tagger: entity F1", "0.00 < 0.35 < 0.69", "true",
          'assert off_by_one < floor_scores["most frequent tag"][1] < scores["f1"]',
          lambda v: v["tagger"]["off_by_one_f1"],
          lambda v: min(_frequent(v) - v["tagger"]["off_by_one_f1"], _f1(v) - _frequent(v))),
    # quoted in the text, not asserted by the notebook (tests/test_spread_chapters.py checks the claims)
    Check("11", "tagger, entity F1", "0.69", "not asserted", None, _f1),
    Check("11", "tagger, token accuracy", "0.97", "not asserted", None, lambda v: v["tagger"]["token_acc"]),
]


# chapter 12: exact match and F1 (percent) on its 300 test questions, with bootstrap standard errors over
# the questions (answer_spans.bootstrap_se: about 2.4 for F1 and for the paired gap to the sentence baseline)
_qa_f1 = lambda v: v["model"]["f1"]
CHECKS += [
    Check("12", "model - sentence baseline: F1", "37.6 - 14.3", "> 3 SE of the gap (paired bootstrap)",
          'assert scores["f1"] - baseline["f1"] > 3 * se_gap',
          lambda v: _qa_f1(v) - v["baseline"]["f1"],
          lambda v: _qa_f1(v) - v["baseline"]["f1"] - 3 * v["model"]["minus_baseline_se"]),
    # quoted in the text, not asserted by the notebook (tests/test_spread_chapters.py checks the claims)
    Check("12", "model, F1", "37.6", "not asserted", None, _qa_f1),
    Check("12", "model, exact match", "21.7", "not asserted", None, lambda v: v["model"]["em"]),
]

def value_of(check: Check, run: dict, slack: bool = False):
    """``check``'s number (or slack) in ``run``, or None where the run lacks what it needs."""
    try:
        f = check.slack if slack else check.number
        return None if f is None else f(run["values"])
    except (KeyError, IndexError, TypeError, ZeroDivisionError):
        return None


# the widest vector unit a CPU's flags show: "AMD EPYC" names a Zen 3 (AVX2 only), a Zen 4 and a Zen 5 alike
ISA_LABELS = (("amx_bf16", "AMX"), ("avx512_bf16", "AVX-512 BF16"), ("avx512f", "AVX-512"), ("avx2", "AVX2"))


def machine_name(run: dict) -> str:
    m = run["machine"]
    flags = set(m.get("cpu_flags", []))
    isa = next((label for flag, label in ISA_LABELS if flag in flags), "no AVX2")
    return f"{m.get('cpu', '?')} ({isa}), torch {m.get('torch', '?').split('+')[0]}"


def table(files: list[dict]) -> str:
    """The README's tables, one per chapter: per assertion the committed value, the bound, and
    per machine and configuration the mean [smallest, largest] value over the complete runs;
    then the least slack over all of them and in how many runs the assertion held."""
    runs = [r for data in files for r in data["runs"] if r.get("complete")]
    out = []
    for chapter in ("3", "7", "10", "11", "12", "14"):
        mine = [r for r in runs if r["chapter"] == chapter]
        groups = sorted({(machine_name(r), r["config"]) for r in mine}, key=lambda g: (g[0], list(CONFIGS).index(g[1])))
        if not groups:
            continue
        sizes = [sum((machine_name(r), r["config"]) == g for r in mine) for g in groups]
        out += ["", f"Chapter {chapter}, mean [min, max] over the runs of each machine and configuration:", "",
                "| number | committed | asserted | " + " | ".join(f"{c}, {m} ({n} runs)" for (m, c), n in zip(groups, sizes))
                + " | least slack | holds |", "|---" * (len(groups) + 5) + "|"]
        for check in (c for c in CHECKS if c.chapter == chapter):
            cells = []
            for g in groups:
                xs = [x for x in (value_of(check, r) for r in mine if (machine_name(r), r["config"]) == g) if x is not None]
                cells.append(f"{sum(xs) / len(xs):.3f} [{min(xs):.3f}, {max(xs):.3f}]" if xs else "–")
            slacks = [s for s in (value_of(check, r, slack=True) for r in mine) if s is not None]
            least = f"{min(slacks):.3f}" if slacks else "–"
            holds = f"{sum(s > 0 for s in slacks)}/{len(slacks)}" if slacks else "–"
            out.append(f"| {check.name} | {check.committed} | {check.asserted} | " + " | ".join(cells)
                       + f" | {least} | {holds} |")
    return "\n".join(out).strip()


# ----------------------------------------------------------------------------------------
# The parent: one subprocess per (chapter, configuration, seed), results merged as they come
# ----------------------------------------------------------------------------------------

_WRITE = threading.Lock()                 # the --jobs threads of one parent; `locked` for other parents


def load(path: pathlib.Path) -> dict:
    if path.exists():
        return json.loads(path.read_text())
    return {"about": "benchmarks/spread_chapters.py: the trained numbers of chapters 3, 7 and 10 over seeds, "
                     "CPU configurations and machines",
            "configs": {name: {"env": env} for name, env in CONFIGS.items()}, "runs": []}


def find(data: dict, chapter: str, config: str, seed: int, cpu: str, torch: str) -> dict | None:
    for run in data["runs"]:
        if (run["chapter"], run["config"], run["seed"], run["machine"].get("cpu"),
                run["machine"].get("torch", "").split("+")[0]) == (chapter, config, seed, cpu, torch.split("+")[0]):
            return run
    return None


def update(path: pathlib.Path, key: tuple, change) -> None:
    """Apply ``change`` to the run ``key`` of the file (created if missing), under both locks."""
    with _WRITE, locked(path):
        data = load(path)
        run = find(data, *key)
        if run is None:
            chapter, config, seed, cpu, torch = key
            run = {"chapter": chapter, "config": config, "seed": seed, "machine": {"cpu": cpu, "torch": torch},
                   "values": {}, "complete": False}
            data["runs"].append(run)
        change(run)
        save(path, data)


def run_one(chapter: str, config: str, seed: int, path: pathlib.Path, machine: tuple) -> bool:
    key = (chapter, config, seed, *machine)
    update(path, key, lambda run: (run.update(complete=False, values={}), run.pop("error", None)))
    env = dict(os.environ, **CONFIGS[config], OMP_NUM_THREADS=CONFIGS[config][spread.THREADS])
    root = str(HERE.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", "--chapter", chapter, "--seed", str(seed)]
    start, tag = time.perf_counter(), f"[chapter {chapter} {config} seed {seed}]"
    # stderr to a file, not a pipe: a worker that writes much of it would block on a full pipe
    errors = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=errors, text=True, cwd=root)
    for line in proc.stdout:
        if not line.startswith("RESULT "):
            continue
        item = json.loads(line[len("RESULT "):])

        def merge(run, item=item):
            for k, v in item.items():
                if k == "setup":
                    run["machine"].update(v)
                else:
                    run["values"][k] = v
        update(path, key, merge)
        print(f"{tag} {line[7:].strip()[:150]}", flush=True)
    ok = proc.wait() == 0
    errors.seek(0)
    err = errors.read()
    errors.close()
    seconds = time.perf_counter() - start
    update(path, key, lambda run: run.update(complete=ok, seconds=seconds, **({} if ok else {"error": err[-2000:]})))
    print(f"{tag} {'done' if ok else 'FAILED: ' + err.strip()[-500:]} in {seconds:.0f} s", flush=True)
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", choices=CHAPTERS, default=list(CHAPTERS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--jobs", type=int, default=1, help="workers at once (each takes one core; chapter 14's "
                                                            "two-process run takes two)")
    parser.add_argument("--deadline-s", type=float, default=None, help="start no new worker after this many seconds")
    parser.add_argument("--force", action="store_true", help="measure again what the file already has")
    parser.add_argument("--table", nargs="*", type=pathlib.Path, default=None, metavar="JSON",
                        help="print the README's tables from these files (default: benchmarks/spread_chapters*.json) "
                             "and stop")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--chapter", choices=CHAPTERS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.chapter, args.seed)
        return 0
    if args.table is not None:
        # every machine's file beside this one (spread_chapters_<machine>.json), as the test reads them
        print(table([load(p) for p in (args.table or sorted(HERE.glob("spread_chapters*.json")))]))
        return 0
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    machine = (cpu_info()["cpu"], torch_version())
    data = load(args.out)
    todo = [(c, config, s) for s in args.seeds for c in args.chapters for config in args.configs
            if config in configs_for(c) and s in seeds_for(c, config)
            and (args.force or not (find(data, c, config, s, *machine) or {}).get("complete"))]
    todo.sort(key=lambda t: CHAPTERS.index(t[0]))       # chapter 7 (the longest) first
    print(f"{len(todo)} runs to do on {machine[0]}, torch {machine[1]}, {args.jobs} at a time", flush=True)
    start, failed, skipped = time.perf_counter(), 0, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        pending = set()
        for item in todo:
            while len(pending) >= args.jobs:            # start the next one only when a worker is free
                done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                failed += sum(not f.result() for f in done)
            if args.deadline_s is not None and time.perf_counter() - start > args.deadline_s:
                skipped = len(todo) - todo.index(item)
                print(f"deadline ({args.deadline_s:.0f} s) passed: {skipped} runs not started", flush=True)
                break
            pending.add(pool.submit(run_one, *item, args.out, machine))
        for f in concurrent.futures.as_completed(pending):
            failed += not f.result()
    print(f"{len(todo) - skipped - failed} runs done, {failed} failed, {skipped} not started "
          f"in {time.perf_counter() - start:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""How close each training step comes to what this CPU can do: FLOPs per step, the rate
achieved, the matrix-product peak measured in the same run, and where the rest goes (issue 47).

    python benchmarks/roofline.py                          # every step; threads: bertcourse.utils.set_threads()
    python benchmarks/roofline.py --threads 1
    python benchmarks/roofline.py --steps d2l-small --profile
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/roofline.py

The steps (each the course's own code, as the chapter or command line runs it):

* ``d2l-small``: a pretraining step of the fast path (``bertcourse.pretrain.training_step``) at
  the widely used d2l setting (2 blocks, hidden 128, FFN 256, vocabulary 20,256; 512 pairs of
  64 tokens, 10 predictions each; dropout 0.2), as in ``benchmarks/pretrain_step.py``;
* ``ch7``: chapter 7's pretraining: its tiny model (hidden 64, vocabulary 3,000), its data and
  length-bucketed batches of 128 pairs (each cut to its longest pair, as the step does), through
  ``pretrain`` (the one ``Trainer``);
* ``ch9``: chapter 9's fine-tuning of MiniLM (6 blocks, hidden 384, FFN 1,536): batches of 16
  review sentences padded to the longest, activation checkpointing, frozen word embeddings,
  bf16 autocast where the CPU has fast bf16 (as the notebook), through ``finetune``;
* ``ch10``, ``ch11``, ``ch12``: chapters 10-12's fine-tuning of MiniLM as their notebooks call
  ``finetune``, float32 on every CPU (``amp=False``), frozen word embeddings: sentence pairs (a
  3-class head on the mean of the pieces, batches of 16, checkpointing), tagged sentences (a
  tag per piece, batches of 16, checkpointing), question windows of at most 96 pieces that hold
  their answer (a start and an end score per piece, batches of 4, no checkpointing).

**FLOPs** (:func:`pretraining_flops`, :func:`classification_flops`, :func:`position_head_flops`) are
written out from the shapes: every matrix product of the
forward pass (2 FLOPs per multiply-add) and twice that for the backward (the gradients of both
operands); element-wise work (softmax, layer norm, GELU, dropout, AdamW) is left out, as in the
usual model-FLOPs accounting: it is a few percent of the operations but, on these small
models, much of the time (the profile shows it). Activation checkpointing runs each block's
forward once more: "executed" counts it, the fraction of peak uses the model FLOPs (the
recomputation is not useful work). ``tests/test_roofline.py`` checks the count against
PyTorch's ``FlopCounterMode`` on tiny cases, with and without the fast path and checkpointing.

**Peak**: the best of ``torch.mm`` (MKL on x86) and oneDNN's product
(``bertcourse.fast_paths.onednn_mm_t``) on two products of 17 GFLOP each, ``(2048, 2048) x
(2048, 2048)`` and ``(4096, 2048) x (2048, 1024)``, in the step's dtype and thread count, median
of 7 after two warm-ups: what this CPU's libraries reach on a large, well-shaped product, the
practical roof. Their outputs (16 MiB) stay below the size from which glibc maps every new block
afresh (:data:`PEAK_SHAPES`; until 2026-11-30 a ``(4096, 1024) x (1024, 4096)`` product with
a new 64 MiB output each time, which measured the peak 6-16 % low). A script, not a test: it
prints a table and changes nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

STEPS = ("d2l-small", "ch7", "ch9", "ch10", "ch11", "ch12")


# ----------------------------------------------------------------------------------------
# FLOPs, written out
# ----------------------------------------------------------------------------------------

def block_forward_flops(batch: int, seq: int, d: int, ffn: int, rows: int | None = None) -> int:
    """Forward matrix-product FLOPs of one post-norm encoder block on ``(batch, seq)`` tokens.

    ``rows``: the block computes its output only at that many positions per sequence (the last
    block of the pretraining fast path: ``[CLS]`` and the predictions); keys and values are
    still computed everywhere. ``None``: every position.
    """
    r = seq if rows is None else rows
    kv = 2 * batch * seq * d * 2 * d                 # K and V projections, every position
    q = 2 * batch * r * d * d                        # Q projection, the rows computed
    scores = 2 * batch * r * seq * d                 # Q K^T, all heads together (heads x d/heads = d)
    mix = 2 * batch * r * seq * d                    # attention weights x V
    out = 2 * batch * r * d * d                      # output projection
    ffn_flops = 2 * batch * r * d * ffn * 2          # two FFN layers
    return kv + q + scores + mix + out + ffn_flops


def pretraining_flops(batch: int, seq: int, preds: int, d: int, ffn: int, blocks: int, vocab: int,
                      fast: bool = True) -> dict:
    """``{"model", "executed"}`` FLOPs of one pretraining step (forward + backward, matrix
    products only): the encoder, the MLM head (dense + decoder over the vocabulary at the
    ``preds`` predicted positions per pair) and the NSP head (pooler + 2 classes).
    ``fast``: the last block only at ``[CLS]`` and the predictions (``pretraining_features``)."""
    fwd = sum(block_forward_flops(batch, seq, d, ffn, rows=(1 + preds) if fast and i == blocks - 1 else None)
              for i in range(blocks))
    fwd += 2 * batch * preds * d * d + 2 * batch * preds * d * vocab      # MLM: dense, decoder
    fwd += 2 * batch * d * d + 2 * batch * d * 2                          # NSP: pooler, classifier
    return {"model": 3 * fwd, "executed": 3 * fwd}


def classification_flops(batch: int, seq: int, d: int, ffn: int, blocks: int, classes: int = 2,
                         pooler: bool = False, checkpointing: bool = False) -> dict:
    """``{"model", "executed"}`` FLOPs of one fine-tuning step of a sentence classifier on a
    ``(batch, seq)`` padded batch: the encoder, the pooler with ``pooler=True`` (``"cls"``
    pooling; mean pooling has no product), the linear head. ``checkpointing``: each block's
    forward runs again in the backward pass (executed, not model, FLOPs)."""
    encoder = blocks * block_forward_flops(batch, seq, d, ffn)
    fwd = encoder + (2 * batch * d * d if pooler else 0) + 2 * batch * d * classes
    return {"model": 3 * fwd, "executed": 3 * fwd + (encoder if checkpointing else 0)}


def position_head_flops(batch: int, seq: int, d: int, ffn: int, blocks: int, outputs: int,
                        checkpointing: bool = False) -> dict:
    """``{"model", "executed"}`` FLOPs of one fine-tuning step of a linear head on every position
    of a ``(batch, seq)`` padded batch: the tagger (``outputs`` = the number of tags) or the span
    predictor (2: start and end). ``checkpointing`` as in :func:`classification_flops`."""
    encoder = blocks * block_forward_flops(batch, seq, d, ffn)
    fwd = encoder + 2 * batch * seq * d * outputs
    return {"model": 3 * fwd, "executed": 3 * fwd + (encoder if checkpointing else 0)}


# ----------------------------------------------------------------------------------------
# The peak
# ----------------------------------------------------------------------------------------

# Products whose output is a fresh block of more than 32 MiB are slower by what the block costs,
# not the product: glibc gives every such block its own memory mapping, and each call touches
# new pages (with a (4096, 4096) float32 output, 64 MiB, the peak read 6-16 % low, side by side
# on the Zen 4: benchmarks/README.md). The peak's products write 16 MiB outputs (their operands
# are made once).
PEAK_SHAPES = ((2048, 2048, 2048), (4096, 2048, 1024))      # (m, k, n)


def gemm_peak(dtype: torch.dtype, rounds: int = 7, shapes=PEAK_SHAPES) -> dict:
    """GFLOP/s of ``torch.mm`` (into a kept output: ``out=``) and of oneDNN's product on
    ``(m, k) x (k, n)`` products, the best over ``shapes`` of the median of ``rounds`` after
    two warm-ups: ``{"mm": ..., "onednn": ... or None}``."""
    from bertcourse.fast_paths import onednn_enabled, onednn_mm_t
    g = torch.Generator().manual_seed(0)

    def rate(fn, flops):
        fn()
        fn()
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return flops / statistics.median(times) / 1e9

    out = {"mm": 0.0, "onednn": None}
    for m, k, n in shapes:
        a = torch.randn(m, k, generator=g).to(dtype)
        bt = torch.randn(n, k, generator=g).to(dtype)        # (n, k): oneDNN's layout, as linear's weight
        b, c = bt.t().contiguous(), torch.empty(m, n, dtype=dtype)
        flops = 2 * m * k * n
        out["mm"] = max(out["mm"], rate(lambda: torch.mm(a, b, out=c), flops))
        if onednn_enabled():
            out["onednn"] = max(out["onednn"] or 0.0, rate(lambda: onednn_mm_t(a, bt), flops))
    return out


# ----------------------------------------------------------------------------------------
# The steps
# ----------------------------------------------------------------------------------------

@dataclass
class Measured:
    name: str
    dtype: str
    steps: int
    seconds: float          # per step, wall clock
    model_flops: float      # per step (mean over the steps timed)
    executed_flops: float

    @property
    def rate(self) -> float:
        return self.model_flops / self.seconds / 1e9


def measure_d2l_small(rounds: int, profile: bool) -> Measured:
    from pretrain_step import BATCH, PREDS, SEQ, course_model, make_batch

    from bertcourse.bert import get_config
    from bertcourse.pretrain import make_optimizer, training_step
    from bertcourse.precision import cpu_has_fast_bf16
    cfg = get_config("d2l-small")
    amp = cpu_has_fast_bf16()
    batch = make_batch(cfg.vocab_size)
    model = course_model(cfg)
    opt = make_optimizer(model)
    step = lambda: training_step(model, opt, batch, amp=amp)           # noqa: E731
    for _ in range(2):
        step()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    f = pretraining_flops(BATCH, SEQ, PREDS, cfg.num_hiddens, cfg.ffn_num_hiddens, cfg.num_blks, cfg.vocab_size)
    if profile:
        print_profile("d2l-small", step, 2)
    return Measured("d2l-small pretraining (fast path)", "bf16" if amp else "fp32", rounds,
                    statistics.median(times), f["model"], f["executed"])


def _loader_flops(batches, flops_of) -> tuple[float, float]:
    model = executed = 0
    for b in batches:
        f = flops_of(b)
        model += f["model"]
        executed += f["executed"]
    return model / len(batches), executed / len(batches)


def measure_ch7(steps: int, profile: bool) -> Measured:
    from bertcourse.batching import bucketed_loader, trim_batch
    from bertcourse.bert import BERTModel, get_config
    from bertcourse.data import load_pretrain_data
    from bertcourse.pretrain import TrainConfig, init_bert_weights, pretrain
    from bertcourse.utils import set_seed
    set_seed(0)
    loader, tokenizer = load_pretrain_data(batch_size=128, max_len=64, split="train", seed=0)
    loader = bucketed_loader(loader.dataset, batch_size=128, seed=0)
    cfg = get_config("tiny", vocab_size=len(tokenizer.vocab), dropout=0.0)      # as the notebook
    model = init_bert_weights(BERTModel(cfg))

    def run(n):
        pretrain(model, loader, cfg=TrainConfig(steps=n, lr=1e-3, warmup_steps=0, eval_every=10 ** 9, amp=False,
                                                seed=0), progress=False, plot=False)
    run(5)                                                   # warm-up
    t = time.perf_counter()
    run(steps)
    seconds = (time.perf_counter() - t) / steps
    # the step computes on the batch cut to its longest pair (trim_batch), not on max_len
    batches = [trim_batch(b) for _, b in zip(range(steps), iter(loader))]
    model_f, exec_f = _loader_flops(batches, lambda b: pretraining_flops(
        b["tokens"].shape[0], b["tokens"].shape[1], b["pred_positions"].shape[1], cfg.num_hiddens,
        cfg.ffn_num_hiddens, cfg.num_blks, cfg.vocab_size))
    if profile:
        print_profile("ch7", lambda: run(10), 1)
    return Measured("chapter 7 pretraining (tiny model)", "fp32", steps, seconds, model_f, exec_f)


def measure_finetuning(label: str, model, tokenizer, train, warmup, loader, flops_of, profile: bool,
                       batch_size: int = 16, **recipe) -> Measured:
    """Time ``finetune(model, tokenizer, train, epochs=1, batch_size=..., **recipe)`` per step, after
    a warm-up on ``warmup`` (other examples); FLOPs from the shapes of the batches that
    ``loader(train, tokenizer, batch_size, shuffle=True, seed=0)`` makes, which are finetune's."""
    from bertcourse.finetune import finetune

    def run(examples):
        finetune(model, tokenizer, examples, None, epochs=1, batch_size=batch_size, seed=0, progress=False,
                 plot=False, **recipe)
    run(warmup)
    batches = list(loader(train, tokenizer, batch_size, shuffle=True, seed=0))
    t = time.perf_counter()
    run(train)
    seconds = (time.perf_counter() - t) / len(batches)
    model_f, exec_f = _loader_flops(batches, lambda b: flops_of(*b["tokens"].shape))
    if profile:
        print_profile(label, lambda: run(warmup), 1)
    return Measured(label, "bf16" if recipe.get("amp") else "fp32", len(batches), seconds, model_f, exec_f)


def _minilm_sizes(model) -> tuple:
    c = model.encoder.config
    return c.num_hiddens, c.ffn_num_hiddens, c.num_blks


def measure_ch9(steps: int, profile: bool) -> Measured:
    from bertcourse.finetune import build_classifier
    from bertcourse.precision import cpu_has_fast_bf16
    from bertcourse.reviews import load_sentiment, review_loader
    from bertcourse.utils import set_seed
    set_seed(0)
    splits = load_sentiment(0)
    clf, tokenizer = build_classifier("minilm", pooling="mean", seed=0)
    d, ffn, blocks = _minilm_sizes(clf)
    return measure_finetuning(
        "chapter 9 fine-tuning (MiniLM)", clf, tokenizer, splits.train[:16 * steps], splits.train[-48:],
        review_loader, lambda b, n: classification_flops(b, n, d, ffn, blocks, checkpointing=True), profile,
        lr=5e-5, amp=cpu_has_fast_bf16(), train_word_embeddings=False, checkpointing=True)


def measure_ch10(steps: int, profile: bool) -> Measured:
    from bertcourse.finetune import build_classifier
    from bertcourse.sentence_pairs import load_snli, pair_loader
    from bertcourse.utils import set_seed
    set_seed(0)
    splits = load_snli(train_size=3000, test_size=1000, seed=0)
    clf, tokenizer = build_classifier("minilm", num_classes=3, seed=0)
    d, ffn, blocks = _minilm_sizes(clf)
    return measure_finetuning(
        "chapter 10 sentence pairs (MiniLM)", clf, tokenizer, splits.train[:16 * steps], splits.train[-48:],
        pair_loader, lambda b, n: classification_flops(b, n, d, ffn, blocks, classes=3, checkpointing=True),
        profile, lr=1e-4, amp=False, train_word_embeddings=False, checkpointing=True)


def measure_ch11(steps: int, profile: bool) -> Measured:
    from bertcourse.task_heads import build_tagger
    from bertcourse.token_tags import TAGS, read_named_entities, split_by_document, tagged_loader
    from bertcourse.utils import set_seed
    set_seed(0)
    train, _ = split_by_document(read_named_entities(), seed=0)
    tagger, tokenizer = build_tagger("minilm", num_tags=len(TAGS), seed=0)
    d, ffn, blocks = _minilm_sizes(tagger)
    return measure_finetuning(
        "chapter 11 named entities (MiniLM)", tagger, tokenizer, train[:16 * steps], train[-48:], tagged_loader,
        lambda b, n: position_head_flops(b, n, d, ffn, blocks, len(TAGS), checkpointing=True), profile,
        lr=4e-4, amp=False, train_word_embeddings=False, checkpointing=True)


def measure_ch12(steps: int, profile: bool) -> Measured:
    from bertcourse.answer_spans import WindowDataset, load_questions, window_loader
    from bertcourse.task_heads import build_span_predictor
    from bertcourse.utils import set_seed
    set_seed(0)
    questions = load_questions(train_size=1000, test_size=300, seed=0).train
    model, tokenizer = build_span_predictor("minilm", seed=0)
    d, ffn, blocks = _minilm_sizes(model)

    def windows(qs):
        return WindowDataset(qs, tokenizer, max_len=96, stride=32, only_with_answer=True)
    # 1,000 questions give 1,292 such windows: 3 questions per 4 windows is about one step each
    train = windows(questions[:3 * steps])
    return measure_finetuning(
        "chapter 12 answer spans (MiniLM)", model, tokenizer, train, windows(questions[-12:]), window_loader,
        lambda b, n: position_head_flops(b, n, d, ffn, blocks, 2), profile, batch_size=4, lr=2e-4, amp=False,
        train_word_embeddings=False)


# ----------------------------------------------------------------------------------------
# Where the time goes
# ----------------------------------------------------------------------------------------

CATEGORIES = (   # (label, substrings of the op name), first match wins
    ("matrix products", ("mm", "linear_pointwise", "matmul", "linear", "bmm", "baddbmm", "addmm")),
    ("softmax / cross-entropy", ("softmax", "log_softmax", "nll", "amax", "logsumexp", "cross_entropy")),
    ("dropout masks, random numbers", ("random", "bernoulli", "rand", "dropout", "ge", "lt")),
    ("layer norm", ("layer_norm",)),
    ("dtype casts, copies", ("copy_", "_to_copy", "to", "contiguous", "clone", "cat", "index", "gather",
                             "scatter", "embedding")),
    ("optimizer (AdamW), clipping", ("_foreach", "adam", "norm", "lerp", "addcdiv", "sqrt")),
    ("element-wise (add, mul, GELU, ...)", ("add", "mul", "gelu", "relu", "tanh", "div", "sub", "where",
                                            "masked_fill", "fill", "zero", "sum", "mean")),
)


def categorise(name: str) -> str:
    op = name.split("::")[-1].lower()
    for label, keys in CATEGORIES:
        if any(k == op or op.startswith(k) or f"_{k}" in op for k in keys):
            return label
    return "other"


def print_profile(label: str, step, repeats: int) -> None:
    """Self CPU time of the step's operators, summed into :data:`CATEGORIES`."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            step()
    shares: dict[str, float] = {}
    for e in prof.key_averages():
        shares[categorise(e.key)] = shares.get(categorise(e.key), 0.0) + e.self_cpu_time_total
    total = sum(shares.values()) or 1.0
    print(f"\nwhere the time of {label} goes (self CPU time of its operators):")
    for k, v in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {k:38s} {100 * v / total:5.1f} %")


# ----------------------------------------------------------------------------------------

def cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next(line for line in f if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
    return " ".join(w for w in wanted if w in flags) or "none of avx2/avx512/amx"


def main(argv=None) -> int:
    from pretrain_step import cpu_model

    from bertcourse.utils import set_threads
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, among {', '.join(STEPS)}")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (default: bertcourse.utils.set_threads(), every core, capped by "
                        "BERTCOURSE_THREADS)")
    p.add_argument("--rounds", type=int, default=5, help="timed d2l-small steps (default 5)")
    p.add_argument("--train-steps", type=int, default=40, help="timed steps of ch7, ch9-ch12 (default 40)")
    p.add_argument("--profile", action="store_true", help="where each step's time goes")
    args = p.parse_args(argv)
    names = [s for s in args.steps.split(",") if s]
    unknown = [s for s in names if s not in STEPS]
    if unknown:
        p.error(f"--steps must be among {', '.join(STEPS)}, got {', '.join(unknown)}")
    threads = set_threads(args.threads) if args.threads else set_threads()
    from bertcourse.precision import cpu_has_fast_bf16
    capability = torch.backends.cpu.get_cpu_capability()
    print(f"CPU: {cpu_model()}; flags: {cpu_flags()}; PyTorch kernels: {capability}; torch {torch.__version__}; "
          f"{threads} threads; fast bf16: {cpu_has_fast_bf16()}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    peaks = {"fp32": gemm_peak(torch.float32)}
    if cpu_has_fast_bf16():
        peaks["bf16"] = gemm_peak(torch.bfloat16)
    for dt, pk in peaks.items():
        onednn = "n/a" if pk["onednn"] is None else f"{pk['onednn']:.0f}"
        print(f"GEMM peak {dt}: torch.mm {pk['mm']:.0f} GFLOP/s, oneDNN {onednn} GFLOP/s", flush=True)
    measure = {"d2l-small": lambda: measure_d2l_small(args.rounds, args.profile),
               "ch7": lambda: measure_ch7(args.train_steps, args.profile),
               "ch9": lambda: measure_ch9(args.train_steps, args.profile),
               "ch10": lambda: measure_ch10(args.train_steps, args.profile),
               "ch11": lambda: measure_ch11(args.train_steps, args.profile),
               "ch12": lambda: measure_ch12(args.train_steps, args.profile)}
    rows = []
    for name in names:
        m = measure[name]()
        peak = max(v for v in peaks[m.dtype].values() if v is not None)
        rows.append((m, peak))
        print(f"measured {m.name}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n{'step':36s} {'dtype':5s} {'GFLOP/step':>10s} {'executed':>9s} {'s/step':>8s} "
          f"{'GFLOP/s':>8s} {'peak':>6s} {'of peak':>8s}")
    for m, peak in rows:
        print(f"{m.name:36s} {m.dtype:5s} {m.model_flops / 1e9:10.2f} {m.executed_flops / 1e9:9.2f} "
              f"{m.seconds:8.4f} {m.rate:8.1f} {peak:6.0f} {100 * m.rate / peak:7.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())

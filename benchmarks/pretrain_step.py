"""Full pretraining steps per second: the course's fast path vs a straightforward (d2l-style) step.

    python benchmarks/pretrain_step.py --skip-hf                 # the d2l small setting, 2 threads
    python benchmarks/pretrain_step.py --threads 1 --rounds 5 --skip-hf
    python benchmarks/pretrain_step.py --skip-hf --compile        # also torch.compile (slow to start)

The widely used small setting (d2l / WikiText-2): 2 blocks, hidden 128, 2 heads, FFN 256,
ReLU, batch 512 sentence pairs of 64 tokens, 10 MLM predictions per pair, vocabulary
20,256, dropout 0.2 (on). The ids are random (the speed does not depend on them); every
pair is 64 tokens long (no padding to skip), sentence B starts at position 32.

A *step* is everything: forward, MLM loss (softmax over the full vocabulary at all
5,120 predictions) + NSP loss, backward, gradient clipping and the AdamW update. After
``--warmup`` steps, the variants are timed in turns (a, b, c, a, b, c, ...) so that a change
in the machine's load hits all of them alike; the script prints the median seconds per
step (wall clock, and CPU time of the process), sentence pairs per second and the ratio to
the reference. All variants are the same model and the same loss:

* ``eager fp32 (reference)``     the straightforward step, as d2l writes it: the model's own
                                 forward, full (5120, 20256) logits, explicit attention softmax
                                 (weights kept), float32, PyTorch's default matrix products;
* ``model fwd + fused CE fp32``  the course's previous default: fused attention
                                 (``scaled_dot_product_attention``) and the chunked MLM loss;
* ``fast path fp32, MKL``        ``BERTModel.pretraining_features`` (the layers' fast paths: last block
                                 only where the losses read it, one QKV product, attention
                                 written out with cheap dropout masks) + the chunked MLM loss,
                                 with PyTorch's default float32 products (MKL on x86);
* ``fast path fp32``             the same with oneDNN's float32 products: chapter 7's default;
* ``model fwd + fused CE bf16``  the previous default under bf16 autocast;
* ``fast path bf16``             the fast path under bf16 autocast (loss in float32): what
                                 ``python -m bertcourse.pretrain`` uses on a CPU with fast bf16;

``--compile`` adds ``torch.compile`` (inductor) of the fast path's forward: it needs a C++
compiler (``g++``; ``apt-get install g++``), and without one the variant is reported as
skipped (inductor raises ``InvalidCxxCompiler`` at the first call). Hugging Face
``BertForPreTraining`` at the same shape and settings (float32, and bf16 autocast) computes
logits at *every* position (512 x 64 x 20,256) and its loss ignores the non-masked ones, so
it does about 6x more work in the output layer; to fit in memory it runs the 512 pairs as
``--hf-micro-batch`` pairs at a time with gradient accumulation (same work per step).

Targets on the 2-core machine, in one run: the best variant >= 3x the reference, the best
float32 variant >= 2x. A script, not a test: the numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

from bertcourse.attention import store_attention_weights
from bertcourse.bert import BERTModel, get_config
from bertcourse.pretrain import init_bert_weights, make_optimizer, mlm_loss, nsp_loss, training_step
from bertcourse.fast_paths import use_onednn
from bertcourse.precision import autocast, bf16_speedup, cpu_has_fast_bf16
from bertcourse.training import optimizer_step

TARGET_BEST, TARGET_FP32 = 3.0, 2.0     # times the reference, on the 2-core machine
REFERENCE = "eager fp32 (reference)"
BATCH, SEQ, PREDS = 512, 64, 10


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_batch(vocab: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(5, vocab, (BATCH, SEQ), generator=g)
    tokens[:, 0], tokens[:, SEQ // 2 - 1], tokens[:, -1] = 2, 3, 3          # [CLS] A [SEP] B [SEP]
    segments = torch.zeros(BATCH, SEQ, dtype=torch.long)
    segments[:, SEQ // 2:] = 1
    # 10 distinct positions per pair among the ordinary tokens
    candidates = torch.tensor([i for i in range(1, SEQ - 1) if i != SEQ // 2 - 1])
    order = torch.argsort(torch.rand(BATCH, len(candidates), generator=g), dim=1)[:, :PREDS]
    pred_positions = candidates[order].sort(dim=1).values
    return {"tokens": tokens, "segments": segments, "valid_lens": torch.full((BATCH,), SEQ),
            "pred_positions": pred_positions,
            "mlm_labels": torch.randint(5, vocab, (BATCH, PREDS), generator=g),
            "mlm_weights": torch.ones(BATCH, PREDS),
            "nsp_labels": torch.randint(0, 2, (BATCH,), generator=g)}


# ---------------------------------------------------------------------------------------
# The course's model
# ---------------------------------------------------------------------------------------

def course_model(cfg):
    torch.manual_seed(0)
    return init_bert_weights(BERTModel(cfg)).train()


def eager_step(model, opt, batch):
    """The straightforward step: the model's own forward, full logits, pretrain.mlm_loss."""
    _, mlm_logits, nsp_logits = model(batch["tokens"], batch["segments"], batch["valid_lens"],
                                      batch["pred_positions"])
    loss = mlm_loss(mlm_logits, batch["mlm_labels"], batch["mlm_weights"]) + \
        nsp_loss(nsp_logits, batch["nsp_labels"])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def model_forward_step(model, opt, batch, amp: bool):
    """The previous default: the model's encoder (fused attention) + the chunked MLM loss."""
    with autocast(amp):
        encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
        features = model.mlm.features(encoded, batch["pred_positions"])
        nsp_logits = model.nsp(model.pooler(encoded))
    loss = model.mlm.loss(features, batch["mlm_labels"], batch["mlm_weights"], fused=True) + \
        nsp_loss(nsp_logits.float(), batch["nsp_labels"])
    optimizer_step(opt, loss, 1.0)


def with_onednn(on: bool, step):
    def run():
        use_onednn(on)
        try:
            step()
        finally:
            use_onednn(True)
    return run


def compiled_step(model, opt, batch, amp: bool):
    """The fast path with its forward compiled by inductor (compiles at the first call)."""
    forward = torch.compile(model.pretraining_features)

    def step():
        with autocast(amp):
            features, nsp_logits = forward(batch["tokens"], batch["segments"], batch["valid_lens"],
                                           batch["pred_positions"])
        loss = model.mlm.loss(features, batch["mlm_labels"], batch["mlm_weights"], fused=True) + \
            nsp_loss(nsp_logits.float(), batch["nsp_labels"])
        optimizer_step(opt, loss, 1.0)
    return step


def course_variants(cfg, batch, compile_too: bool = False):
    """name -> step function (each with its own model and optimizer)."""
    def fresh(keep_weights: bool = False):
        m = course_model(cfg)
        return store_attention_weights(m, keep_weights), make_optimizer(m)

    bf16 = cpu_has_fast_bf16()
    variants = {}
    m, o = fresh(keep_weights=True)                                  # attention weights kept (default)
    variants[REFERENCE] = lambda m=m, o=o: eager_step(m, o, batch)
    m, o = fresh()
    variants["model fwd + fused CE fp32"] = with_onednn(False, lambda m=m, o=o: model_forward_step(m, o, batch, False))
    m, o = fresh()
    variants["fast path fp32, MKL"] = with_onednn(False, lambda m=m, o=o: training_step(m, o, batch, amp=False))
    m, o = fresh()
    variants["fast path fp32"] = lambda m=m, o=o: training_step(m, o, batch, amp=False)
    if bf16:
        m, o = fresh()
        variants["model fwd + fused CE bf16"] = lambda m=m, o=o: model_forward_step(m, o, batch, True)
        m, o = fresh()
        variants["fast path bf16"] = lambda m=m, o=o: training_step(m, o, batch, amp=True)
    if compile_too:
        for amp in ([False, True] if bf16 else [False]):
            m, o = fresh()
            name = f"fast path {'bf16' if amp else 'fp32'} + torch.compile"
            step = compiled_step(m, o, batch, amp)
            start = time.perf_counter()
            try:
                step()                                   # compiles now
            except Exception as e:                       # no C++ compiler, or inductor cannot build it
                print(f"skipped {name}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
                continue
            print(f"{name}: first call (compilation) {time.perf_counter() - start:.0f} s")
            variants[name] = step
    return variants


# ---------------------------------------------------------------------------------------
# d2l's own code
# ---------------------------------------------------------------------------------------

D2L = "d2l's own BERT (d2l 1.0.3)"


def import_d2l(path: str | None):
    """``d2l.torch`` from an installed d2l (``pip install --no-deps d2l==1.0.3``, or
    ``--target DIR`` and ``--d2l DIR``), or None. Its module imports torchvision (and scipy) for
    its vision chapters; where they are missing, empty stand-ins let the module load: its BERT
    classes do not use them."""
    import sys
    import types
    if path:
        sys.path.insert(0, path)
    for name in ("torchvision", "torchvision.transforms", "scipy", "scipy.spatial"):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    sys.modules["torchvision"].transforms = sys.modules["torchvision.transforms"]
    sys.modules["scipy"].spatial = sys.modules["scipy.spatial"]
    if not hasattr(sys.modules["scipy.spatial"], "distance_matrix"):
        sys.modules["scipy.spatial"].distance_matrix = None
    try:
        from d2l import torch as d2l
    except ImportError as e:
        print(f"skipped {D2L}: {e} (pip install --no-deps d2l==1.0.3)")
        return None
    return d2l


def d2l_variant(cfg, batch, path: str | None):
    """d2l's ``BERTModel`` and ``_get_batch_loss_bert`` as its chapter "Pretraining BERT" trains
    them (``nn.CrossEntropyLoss()``, Adam, no clipping), at the same shape: 2 blocks, hidden 128,
    2 heads, FFN 256, dropout 0.2, the same batch. Its MLM head also computes logits at the
    predicted positions only, so the work per step is the same as the course's."""
    d2l = import_d2l(path)
    if d2l is None:
        return {}
    torch.manual_seed(0)
    net = d2l.BERTModel(cfg.vocab_size, num_hiddens=cfg.num_hiddens, ffn_num_hiddens=cfg.ffn_num_hiddens,
                        num_heads=cfg.num_heads, num_blks=cfg.num_blks, dropout=cfg.dropout, max_len=SEQ)
    with torch.no_grad():                       # materialise its lazy layers
        net(batch["tokens"][:2], batch["segments"][:2], batch["valid_lens"][:2], batch["pred_positions"][:2])
    net.train()
    trainer = torch.optim.Adam(net.parameters(), lr=0.01)
    loss = torch.nn.CrossEntropyLoss()

    def step():
        trainer.zero_grad()
        _, _, total = d2l._get_batch_loss_bert(net, loss, cfg.vocab_size, batch["tokens"], batch["segments"],
                                               batch["valid_lens"], batch["pred_positions"],
                                               batch["mlm_weights"], batch["mlm_labels"], batch["nsp_labels"])
        total.backward()
        trainer.step()
    return {D2L: step}


# ---------------------------------------------------------------------------------------
# Hugging Face
# ---------------------------------------------------------------------------------------

def hf_variants(cfg, batch, micro: int):
    from transformers import BertConfig, BertForPreTraining
    hf_cfg = BertConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.num_hiddens,
                        num_hidden_layers=cfg.num_blks, num_attention_heads=cfg.num_heads,
                        intermediate_size=cfg.ffn_num_hiddens, hidden_act=cfg.activation,
                        hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                        max_position_embeddings=cfg.max_len, type_vocab_size=2,
                        layer_norm_eps=cfg.norm_eps)
    labels = torch.full((BATCH, SEQ), -100)
    labels.scatter_(1, batch["pred_positions"], batch["mlm_labels"])
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)

    def make(amp: bool):
        torch.manual_seed(0)
        model = BertForPreTraining(hf_cfg).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-6, weight_decay=0.01)

        def step():
            opt.zero_grad(set_to_none=True)
            for s in range(0, BATCH, micro):
                e = min(s + micro, BATCH)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                    out = model(input_ids=batch["tokens"][s:e], token_type_ids=batch["segments"][s:e],
                                attention_mask=attention_mask[s:e], labels=labels[s:e],
                                next_sentence_label=batch["nsp_labels"][s:e])
                (out.loss * (e - s) / BATCH).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        return step

    variants = {"HF BertForPreTraining fp32": make(False)}
    if cpu_has_fast_bf16():
        variants["HF BertForPreTraining bf16"] = make(True)
    return variants


# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------

def time_variants(variants: dict, warmup: int, rounds: int) -> dict:
    for name, step in variants.items():
        for _ in range(warmup):
            step()
    walls = {n: [] for n in variants}
    cpus = {n: [] for n in variants}
    for _ in range(rounds):
        for name, step in variants.items():
            w, c = time.perf_counter(), time.process_time()
            step()
            walls[name].append(time.perf_counter() - w)
            cpus[name].append(time.process_time() - c)
    return {n: (statistics.median(walls[n]), statistics.median(cpus[n])) for n in variants}


def profile_step(step, steps: int = 2, rows: int = 18) -> None:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per variant (default 2)")
    p.add_argument("--rounds", type=int, default=5, help="timed steps per variant (default 5)")
    p.add_argument("--hf-micro-batch", type=int, default=128,
                   help="pairs per Hugging Face forward/backward (default 128; same work per step)")
    p.add_argument("--skip-hf", action="store_true", help="do not time Hugging Face")
    p.add_argument("--d2l", metavar="DIR", default=None,
                   help="a folder holding the d2l package (pip install --no-deps --target DIR d2l==1.0.3); "
                        "without it, d2l is timed when importable")
    p.add_argument("--compile", action="store_true", help="also time torch.compile of the fast path")
    p.add_argument("--profile", action="store_true", help="print the profile of the best variant")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    cfg = get_config("d2l-small")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, fast bf16: {cpu_has_fast_bf16()} (bf16 products {bf16_speedup():.2f}x "
          f"as fast as float32)")
    print(f"setting: {cfg.num_blks} blocks, hidden {cfg.num_hiddens}, {cfg.num_heads} heads, FFN "
          f"{cfg.ffn_num_hiddens}, {cfg.activation}, vocab {cfg.vocab_size:,}, dropout {cfg.dropout}; "
          f"batch {BATCH} x {SEQ} tokens, {PREDS} predictions per pair")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    batch = make_batch(cfg.vocab_size)
    variants = course_variants(cfg, batch, args.compile)
    variants.update(d2l_variant(cfg, batch, args.d2l))
    if not args.skip_hf:
        variants.update(hf_variants(cfg, batch, args.hf_micro_batch))
    print(f"timing {len(variants)} variants: {args.warmup} warm-up + {args.rounds} timed steps each, in turns ...",
          flush=True)
    results = time_variants(variants, args.warmup, args.rounds)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    ref = results[REFERENCE][0]
    print(f"\n{'variant':36s} {'s/step (wall)':>14s} {'s/step (CPU)':>13s} {'pairs/s':>9s} {'x reference':>12s}")
    for name, (wall, cpu) in results.items():
        print(f"{name:36s} {wall:14.3f} {cpu:13.3f} {BATCH / wall:9.0f} {ref / wall:12.2f}")
    course = {n: r for n, r in results.items() if not n.startswith("HF") and n != D2L}
    best = min(course, key=lambda n: course[n][0])
    fp32 = [n for n in course if "bf16" not in n]
    best32 = min(fp32, key=lambda n: course[n][0])
    for label, name, target in (("best", best, TARGET_BEST), ("best float32", best32, TARGET_FP32)):
        ratio = ref / course[name][0]
        print(f"{label} variant: {name}, {BATCH / course[name][0]:.0f} pairs/s, {ratio:.2f}x the reference "
              f"(target {target:.0f}x): {'met' if ratio >= target else 'NOT met'}"
              + (f"; {results[D2L][0] / course[name][0]:.2f}x d2l's own step" if D2L in results else ""))
    if args.profile:
        print(f"\nwhere the time of '{best}' goes (2 steps):")
        profile_step(variants[best])


if __name__ == "__main__":
    main()

"""Chapter 9's trained numbers over seeds and machines: how far they move, so that the notebook
asserts only what holds everywhere (issue 22).

    python benchmarks/spread.py                                    # seeds 0-4, native and fp32-avx2
    python benchmarks/spread.py --seeds 3 4 --configs fp32-avx2    # resume: only what is missing
    python benchmarks/spread.py --methods bow probe --force        # re-measure some methods
    python benchmarks/spread.py --configs native --out benchmarks/spread_<machine>.json   # another machine

Each (configuration, seed) runs in a subprocess of its own, because the environment variables
that choose PyTorch's CPU kernels are read when torch is imported:

* ``native``: this CPU's best kernels, with the course's automatic precision
  (``precision.cpu_has_fast_bf16()``: bf16 autocast where the CPU computes bfloat16 natively
  and faster than float32, float32 elsewhere);
* ``fp32-avx2``: AVX2 kernels only (``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
  MKL_ENABLE_INSTRUCTIONS=AVX2``), so no bf16: what a laptop without fast bf16 computes;
* ``bf16`` (only when asked for, ``--configs bf16``): bf16 autocast whatever the measurement
  says, on this CPU's best kernels: what the notebook computes where bf16 is fast, measured on a
  CPU where it is slow (it needs native bf16 support: AVX512-BF16 or AMX).
* ``native-2-threads``, ``fp32-avx2-2-threads`` (only when asked for): the first two on two
  threads. The notebook uses every core (``bertcourse.utils.set_threads``), and two threads add
  a sum in another order: its bounds must hold there too. Run them one at a time on a 2-core
  machine (``--configs native-2-threads``, then the other).

The worker repeats the notebook's calls (``notebooks/09_fine_tuning.ipynb``, the configuration's threads,
``checkpointing=True``, ``train_word_embeddings=False``) with ``seed`` in place of the
notebook's 0 wherever a seed is passed: ``set_seed``, the classifiers' initialisation, the
trainer (batch order, dropout) and the few-label subsets. The split is always the notebook's (``load_sentiment(0)``: the same 300 test
sentences), so the spread measured is that of training, not of the test sample; the binomial
standard error in ``benchmarks/README.md`` is the second. The bag of words and the probe are
convex fits (full-batch L-BFGS from zeros) and do not depend on the seed at all.

Results go to ``benchmarks/spread.json`` after every method, so an interrupted run loses at
most the method it was in. A script, not a test: one (configuration, seed) is a few CPU-minutes on
one thread (on the 2-core Intel Xeon of 2026-11-27, two side by side: 3 to 4.5 minutes each).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "spread.json"
FORCE_BF16 = "BERTCOURSE_SPREAD_BF16"      # set to 1 by the bf16 configuration
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
THREADS = "BERTCOURSE_THREADS"             # bertcourse.utils.set_threads: the notebook's thread count
CONFIGS = {
    "native": {THREADS: "1"},
    "fp32-avx2": {**AVX2, THREADS: "1"},
    "bf16": {FORCE_BF16: "1", THREADS: "1"},
    # the notebook uses every core (set_threads): two threads split the sums differently
    "native-2-threads": {THREADS: "2"},
    "fp32-avx2-2-threads": {**AVX2, THREADS: "2"},
}
TWO_THREAD_CONFIGS = ("native-2-threads", "fp32-avx2-2-threads")
DEFAULT_CONFIGS = ("native", "fp32-avx2")   # what the notebook itself chooses, and the laptop without bf16
# in the notebook's order; "finetune" also runs section 8's learning-rate comparison (10 steps at 1e-3)
METHODS = ("bow", "probe", "finetune", "scratch", "fewshot")
FEW_LABELS = (100, 300, 1000)
# values other machines reported (issue 22); the notebook's bounds must admit them too. Only
# values of the current recipe count: the bag of words has not changed since the Intel CPU
# reported it, while its from-scratch 0.763 (and the developers' machine's 0.737) came from the
# recipe before 2026-11-26, which trained the word-embedding table. The H100's are the fine-tuning
# command line with chapter 9's settings (`python -m bertcourse.finetune --model minilm|scratch
# --checkpointing --freeze-word-embeddings --device cuda`, seed 0): where the notebook trains on
# Colab's GPU (device="auto"), it computes there, in bf16.
EXTERNAL = [
    {"machine": "Intel CPU with AMX (bf16 autocast), executing the committed notebook",
     "values": {"a. bag of words": 0.793}},
    {"machine": "NVIDIA H100, bf16 autocast, the fine-tuning command line (2026-11-27, batches padded "
                "to the longest sentence)",
     "values": {"c. fine-tuned MiniLM": 0.917, "c. fine-tuned MiniLM, validation": 0.933,
                "d. MiniLM from scratch": 0.660}},
]


def cpu_model() -> str:
    """``lscpu``'s model name (``platform.processor()`` is empty on many Linux systems)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or platform.machine()


# ----------------------------------------------------------------------------------------
# The worker: one (configuration, seed), the notebook's calls
# ----------------------------------------------------------------------------------------


def emit(key: str, value) -> None:
    """Hand one result to the parent at once (a line on stdout), so that it is saved even if a
    later method fails."""
    print("RESULT " + json.dumps({key: value}), flush=True)


def worker(seed: int, methods: list[str]) -> None:
    import torch

    from bertcourse.utils import set_threads

    from bertcourse.finetune import (build_classifier, evaluate_classifier, finetune, init_head_from_probe,
                                     probe_then_finetune, weights_moved)
    from bertcourse.inspection import sentence_vectors
    from bertcourse.pretrained_bert import load_pretrained
    from bertcourse.finetuning_baselines import (WEIGHT_DECAYS, bag_of_words, build_vocabulary, frozen_features,
                                    select_weight_decay)
    from bertcourse.reviews import load_sentiment, review_loader, stratified_indices
    from bertcourse.precision import cpu_has_fast_bf16, cpu_supports_bf16
    from bertcourse.utils import set_seed

    set_threads()                         # as the notebook: BERTCOURSE_THREADS, set by the configuration
    amp = cpu_has_fast_bf16()             # the notebook's AMP
    if os.environ.get(FORCE_BF16) == "1":
        if not cpu_supports_bf16():
            raise SystemExit("the bf16 configuration needs a CPU with native bf16 (AVX512-BF16 or AMX)")
        amp = True
    emit("setup", {"amp": amp, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                   "torch": torch.__version__, "cpu": cpu_model(), "threads": torch.get_num_threads(),
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    set_seed(seed)
    splits = load_sentiment(0)            # the notebook's split, whatever the seed
    texts = {name: [r.text for r in part] for name, part in splits.items()}
    labels = {name: torch.tensor([r.label for r in part]) for name, part in splits.items()}

    # a. bag of words (section 2); the few-label curve needs it at 2,400 too
    bow = None
    if {"bow", "fewshot"} & set(methods):
        start = time.perf_counter()
        vocab = build_vocabulary(texts["train"])
        X = {name: bag_of_words(t, vocab) for name, t in texts.items()}
        bow, bow_wd, bow_val = select_weight_decay(X["train"], labels["train"], X["validation"],
                                                   labels["validation"], WEIGHT_DECAYS)
        a = bow.accuracy(X["test"], labels["test"])
        emit("bow", {"test": a, "validation": bow_val[bow_wd], "weight_decay": bow_wd,
                     "seconds": time.perf_counter() - start})
        del X

    # b. frozen MiniLM + probe (section 3)
    probe = F = None
    if {"probe", "finetune", "fewshot"} & set(methods):
        start = time.perf_counter()
        F = frozen_features(amp=amp)
        probe, probe_wd, probe_val = select_weight_decay(F.mean["train"], F.labels["train"], F.mean["validation"],
                                                         F.labels["validation"], WEIGHT_DECAYS)
        cls_probe, cls_wd, cls_val = select_weight_decay(F.cls["train"], F.labels["train"], F.cls["validation"],
                                                         F.labels["validation"], WEIGHT_DECAYS)
        c = probe.accuracy(F.mean["test"], F.labels["test"])
        emit("probe", {"test": c, "validation": probe_val[probe_wd], "weight_decay": probe_wd,
                       "cls_test": cls_probe.accuracy(F.cls["test"], F.labels["test"]),
                       "cls_validation": cls_val[cls_wd], "seconds": time.perf_counter() - start})

    # c. full fine-tuning, head started from the probe (section 4), then section 8's 1e-3 test
    if "finetune" in methods:
        clf, tokenizer = build_classifier("minilm", pooling="mean", seed=seed)
        untrained = evaluate_classifier(clf, review_loader(splits.validation, tokenizer, batch_size=64, by_length=True),
                                        amp=amp)
        trainer = probe_then_finetune(clf, tokenizer, splits.train, splits.validation, probe=probe, epochs=1,
                                      lr=5e-5, batch_size=16, warmup_ratio=0.1, evals_per_epoch=3, seed=seed,
                                      amp=amp, checkpointing=True, train_word_embeddings=False, progress=False,
                                      plot=False)
        evals, seconds = [e["acc"] for e in trainer.history.evals], trainer.elapsed
        del trainer
        test = evaluate_classifier(clf, review_loader(splits.test, tokenizer, batch_size=16, by_length=True), amp=amp)
        result = {"test": test["acc"], "validation": evals[-1], "validation_during": evals,
                  "untrained_validation": untrained["acc"], "seconds": seconds}

        pretrained = load_pretrained("minilm")
        probe_texts = [r.text for r in splits.validation[:64]]
        start_vectors = sentence_vectors(pretrained.model.encoder, tokenizer, probe_texts, normalize=True)
        result["weights_moved"] = weights_moved(clf.encoder, pretrained.model.encoder)
        result["similarity_to_pretrained"] = float((sentence_vectors(clf.encoder, tokenizer, probe_texts, normalize=True) * start_vectors)
                                                   .sum(-1).mean())
        del clf
        wreck, _ = build_classifier(pretrained, seed=seed)
        init_head_from_probe(wreck, probe)
        t = finetune(wreck, tokenizer, splits.train[:160], splits.validation, lr=1e-3, seed=seed, amp=amp,
                     progress=False, plot=False, train_word_embeddings=False, checkpointing=True)
        result["lr_1e-3"] = {"validation": t.history.evals[-1]["acc"],
                             "weights_moved": weights_moved(wreck.encoder, pretrained.model.encoder),
                             "similarity_to_pretrained":
                                 float((sentence_vectors(wreck.encoder, tokenizer, probe_texts, normalize=True) * start_vectors)
                                       .sum(-1).mean())}
        del t, wreck, pretrained
        emit("finetune", result)

    # d. the same network from scratch (section 5)
    if "scratch" in methods:
        scratch, tokenizer = build_classifier("scratch", seed=seed)
        trainer = finetune(scratch, tokenizer, splits.train, splits.validation, epochs=1, lr=3e-4, seed=seed,
                           amp=amp, checkpointing=True, train_word_embeddings=False, progress=False, plot=False)
        test = evaluate_classifier(scratch, review_loader(splits.test, tokenizer, batch_size=16, by_length=True),
                                   amp=amp)
        emit("scratch", {"test": test["acc"], "validation": trainer.history.evals[-1]["acc"],
                         "seconds": trainer.elapsed})
        del scratch, trainer

    # few labels (section 7): subsets drawn with `seed` from the notebook's training split
    # (seed 0 is exactly the notebook's `few_shot_accuracies(n)`)
    if "fewshot" in methods:
        curve = {}
        for n in FEW_LABELS:
            idx = stratified_indices(splits.train, n, seed)
            vocab = build_vocabulary([texts["train"][i] for i in idx])
            X = {name: bag_of_words(texts[name], vocab) for name in ("validation", "test")}
            X["train"] = bag_of_words([texts["train"][i] for i in idx], vocab)
            small_bow, _, _ = select_weight_decay(X["train"], labels["train"][idx], X["validation"],
                                                  labels["validation"], WEIGHT_DECAYS)
            small_probe, _, _ = select_weight_decay(F.mean["train"][idx], F.labels["train"][idx],
                                                    F.mean["validation"], F.labels["validation"], WEIGHT_DECAYS)
            curve[str(n)] = {"bag of words": small_bow.accuracy(X["test"], labels["test"]),
                             "probe": small_probe.accuracy(F.mean["test"], F.labels["test"])}
        emit("fewshot", curve)


# ----------------------------------------------------------------------------------------
# The parent: one subprocess per (configuration, seed), results merged as they come
# ----------------------------------------------------------------------------------------


def load(path: pathlib.Path) -> dict:
    if path.exists():
        data = json.loads(path.read_text())
        data["external"] = EXTERNAL
        data["configs"] = {name: {"env": env} for name, env in CONFIGS.items()}
        return data
    return {"external": EXTERNAL, "about": "benchmarks/spread.py: chapter 9's test accuracies over seeds and CPU configurations "
                     "(test set: the 300 sentences of load_sentiment(0))",
            "configs": {name: {"env": env} for name, env in CONFIGS.items()}, "runs": {}}


@contextlib.contextmanager
def locked(path: pathlib.Path):
    """Hold an exclusive lock for ``path`` (a file in the temporary directory, so the
    repository gains no stray file): two runs (one per configuration, on the two cores) may
    share one results file."""
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    with open(pathlib.Path(tempfile.gettempdir()) / f"spread-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def save(path: pathlib.Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)                     # atomic: a reader never sees half a file


def run_one(config: str, seed: int, methods: list[str], path: pathlib.Path) -> bool:
    env = dict(os.environ, **CONFIGS[config])
    root = str(HERE.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", "--seed", str(seed),
           "--methods", *methods]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=root)
    for line in proc.stdout:
        if not line.startswith("RESULT "):
            continue
        with locked(path):
            data = load(path)
            run = data["runs"].setdefault(config, {}).setdefault(str(seed), {"methods": {}})
            for key, value in json.loads(line[len("RESULT "):]).items():
                if key == "setup":
                    run.update(value)
                else:
                    run["methods"][key] = value
            save(path, data)
        print(f"[{config} seed {seed}] {line[7:].strip()[:160]}", flush=True)
    ok = proc.wait() == 0
    print(f"[{config} seed {seed}] {'done' if ok else 'FAILED'} in {time.perf_counter() - start:.0f} s", flush=True)
    return ok


# what the table shows, with the names of bertcourse.measured_bounds.RANGES: (name, path into a run's "methods")
ROWS = [("a. bag of words", ("bow", "test")),
        ("b. frozen MiniLM + probe", ("probe", "test")),
        ("c. fine-tuned MiniLM", ("finetune", "test")),
        ("d. MiniLM from scratch", ("scratch", "test")),
        ("c - b (paired)", None),
        ("a - d (paired)", None),
        ("c. fine-tuned MiniLM, validation", ("finetune", "validation")),
        ("b. probe, validation", ("probe", "validation")),
        ("probe on [CLS]", ("probe", "cls_test")),
        ("probe on [CLS], validation", ("probe", "cls_validation")),
        ("untrained head, validation", ("finetune", "untrained_validation")),
        ("10 steps at 1e-3, validation", ("finetune", "lr_1e-3", "validation")),
        ("10 steps at 1e-3, similarity", ("finetune", "lr_1e-3", "similarity_to_pretrained")),
        ("c. fine-tuned MiniLM, similarity", ("finetune", "similarity_to_pretrained")),
        ("10 steps at 1e-3, weights moved", ("finetune", "lr_1e-3", "weights_moved")),
        ("c. fine-tuned MiniLM, weights moved", ("finetune", "weights_moved"))]
ROWS += [(f"{m}, {n} labels", ("fewshot", str(n), m)) for n in FEW_LABELS for m in ("bag of words", "probe")]
PAIRS = {"c - b (paired)": (("finetune", "test"), ("probe", "test")),
         "a - d (paired)": (("bow", "test"), ("scratch", "test"))}
NOT_ACCURACIES = {name for name, _ in ROWS if "similarity" in name or "moved" in name}


def value(run: dict, path: tuple):
    v = run.get("methods", {})
    for key in path:
        if not isinstance(v, dict) or key not in v:
            return None
        v = v[key]
    return v


def values(data: dict, row: str, config: str) -> list[float]:
    """The row's value in every recorded seed of ``config`` (paired differences per seed)."""
    out = []
    for run in data["runs"].get(config, {}).values():
        if row in PAIRS:
            x, y = (value(run, p) for p in PAIRS[row])
            v = None if x is None or y is None else x - y
        else:
            v = value(run, dict(ROWS)[row])
        if v is not None:
            out.append(v)
    return out


def standard_error(p: float, n: int = 300) -> float:
    """Binomial standard error of an accuracy ``p`` measured on ``n`` sentences."""
    return (p * (1 - p) / n) ** 0.5


def table(data: dict) -> str:
    """The Markdown table of ``benchmarks/README.md``: per row and configuration, the mean,
    smallest and largest value over the recorded seeds, and the binomial standard error of an
    accuracy equal to the mean on the 300 test (or validation) sentences."""
    lines = ["| | configuration | seeds | mean | min | max | ± standard error (300 sentences) |",
             "|---|---|---|---|---|---|---|"]
    for row, _ in ROWS:
        for config in CONFIGS:
            v = values(data, row, config)
            if not v:
                continue
            mean = sum(v) / len(v)
            se = "–" if row in PAIRS or row in NOT_ACCURACIES else f"{standard_error(mean):.3f}"
            lines.append(f"| {row} | {config} | {len(v)} | {mean:.3f} | {min(v):.3f} | {max(v):.3f} | {se} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(DEFAULT_CONFIGS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--force", action="store_true", help="measure again what the file already has")
    parser.add_argument("--table", action="store_true", help="print the README's table from the file and stop")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.seed, args.methods)
        return 0
    if args.table:
        print(table(load(args.out)))
        return 0
    failed = 0
    for seed in args.seeds:               # seeds outermost: a partial run covers both configurations
        for config in args.configs:
            done = load(args.out)["runs"].get(config, {}).get(str(seed), {}).get("methods", {})
            todo = [m for m in args.methods if args.force or m not in done]
            if todo:
                failed += not run_one(config, seed, todo, args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

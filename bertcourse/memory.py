"""Memory: what a training step keeps, and handing freed memory back (chapters 9 and 13).

* :func:`saved_for_backward` adds up the tensors autograd keeps for the backward pass of one
  step (the activations), the figure that activation checkpointing
  (:class:`~bertcourse.bert.BERTEncoder`'s ``checkpointing``) makes small;
* :func:`activation_formula` turns four small measurements into the formula of those bytes for
  any batch: ``b * (per_token * s + per_pair * s**2 + per_sequence) + fixed`` for ``b``
  sequences of ``s`` tokens (:func:`activation_bytes` evaluates it);
* :func:`release_memory` collects garbage and returns freed memory to the operating system,
  which glibc otherwise keeps (on Binder's 1 GB that decides whether the next cell fits);
* :func:`unmap_large_blocks` makes every large block (a tensor, typically) go back to the
  operating system the moment it is freed (chapter 8);
* :func:`cap_onednn_kernels` keeps few of the kernels oneDNN compiles for bf16 products, one
  per product shape (chapter 9).
"""
from __future__ import annotations

import ctypes
import gc
import os
from typing import Callable

import torch
from torch import nn

from ._checks import check_instance, check_int, check_keys
from .attention import inspect_attention

__all__ = ["saved_for_backward", "activation_formula", "activation_bytes", "release_memory", "unmap_large_blocks",
           "cap_onednn_kernels"]


def saved_for_backward(model: nn.Module, step_fn: Callable, batch) -> int:
    """Bytes of the tensors one training step of ``step_fn(model, batch)`` keeps for its
    backward pass: the activations (the parameters, which are kept anyway, are not counted).

    Runs the forward pass as :class:`~bertcourse.training.Trainer` does (train mode, fused
    attention, dropout on, on a fork of the random state) and no backward; the model is left
    as it was (its mode and its buffers, such as a step counter the forward increments). In
    float32, unless called inside an autocast context. Tensors that share memory count once."""
    check_instance("model", model, nn.Module, hint="torch.nn.Module, e.g. a BERTClassifier")
    if not callable(step_fn):
        raise TypeError(f"step_fn must be a function (model, batch) -> dict, got {type(step_fn).__name__}")
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            kept[storage.data_ptr()] = storage     # held here, so that its address is not reused
        # give autograd nothing: returning t would tie t to its own graph in a cycle that is
        # never freed
        return None

    def unpack(_):
        raise RuntimeError("saved_for_backward runs the forward pass only (no backward)")

    buffers = [(b, b.clone()) for b in model.buffers()]
    with torch.random.fork_rng(), inspect_attention(model, keep_weights=False, eval_mode=False):
        model.train()
        try:
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                step_fn(model, batch)
        finally:
            with torch.no_grad():
                for b, before in buffers:
                    b.copy_(before)
    return sum(storage.nbytes() for storage in kept.values())


# The four batches (sequences, tokens) activation_formula measures: three lengths for the three
# coefficients of a quadratic in s, and a second sequence for what does not grow with b.
_FORMULA_SHAPES = ((1, 8), (1, 16), (1, 32), (2, 8))


def activation_formula(model: nn.Module, step_fn: Callable, make_batch: Callable) -> dict:
    """The bytes :func:`saved_for_backward` counts for a batch of ``b`` sequences of ``s``
    tokens, as ``b * (per_token * s + per_pair * s**2 + per_sequence) + fixed``; the four
    integer coefficients (a dict with those keys) are solved from four small batches,
    ``make_batch(b, s)`` for ``(b, s)`` in (1, 8), (1, 16), (1, 32), (2, 8).

    Why a formula and not a fit: every tensor a step keeps is made per sequence and is a row
    per token (the inputs of the linear layers, the GELU's, the dropout masks), an entry per
    pair of tokens (the attention weights, when they are kept) or one vector per sequence (the
    pooled vector), plus a few numbers per step (the loss); so the sum is exactly this
    polynomial. Raises ``ValueError`` when the four measurements do not fit one (``step_fn``
    keeps something else, e.g. a shape-dependent path): the formula would then be wrong."""
    if not callable(make_batch):
        raise TypeError(f"make_batch must be a function (batch_size, seq_len) -> batch, got "
                        f"{type(make_batch).__name__}")
    m = {bs: saved_for_backward(model, step_fn, make_batch(*bs)) for bs in _FORMULA_SHAPES}
    fixed = 2 * m[1, 8] - m[2, 8]                # b = 1 and b = 2 at the same length
    g8, g16, g32 = (m[1, s] - fixed for s in (8, 16, 32))
    # g(s) = per_token * s + per_pair * s^2 + per_sequence: from 8 to 16 to 32 tokens the
    # differences are 8a + 192p and 16a + 768p, so twice the first from the second leaves 384p.
    pair_384, rest = divmod((g32 - g16) - 2 * (g16 - g8), 384)
    per_pair = pair_384
    per_token, rest_token = divmod(g16 - g8 - 192 * per_pair, 8)
    if rest or rest_token or min(per_pair, per_token, fixed) < 0:
        raise ValueError(f"the bytes kept by step_fn do not grow as b * (a s + p s^2 + c) + d "
                         f"(measured {m}): activation_formula would be wrong for this step")
    return {"per_token": per_token, "per_pair": per_pair, "per_sequence": g8 - 8 * per_token - 64 * per_pair,
            "fixed": fixed}


def activation_bytes(formula: dict, batch_size: int, seq_len: int) -> int:
    """Bytes kept for the backward pass of ``batch_size`` sequences of ``seq_len`` tokens, by
    ``formula`` (from :func:`activation_formula`)."""
    check_keys("formula", formula, ("per_token", "per_pair", "per_sequence", "fixed"), "activation_formula")
    check_int("batch_size", batch_size, low=1)
    check_int("seq_len", seq_len, low=1)
    f = formula
    return batch_size * (f["per_token"] * seq_len + f["per_pair"] * seq_len ** 2 + f["per_sequence"]) + f["fixed"]


def _glibc_function(name: str):
    """glibc's function ``name``, or None where the C library is not glibc (macOS, Windows, musl)."""
    try:
        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def release_memory() -> None:
    """Collect garbage and hand freed memory back to the operating system (glibc keeps it
    otherwise; on Binder's 1 GB that decides whether the next cell fits). Does nothing
    where the C library has no ``malloc_trim``."""
    gc.collect()
    malloc_trim = _glibc_function("malloc_trim")
    if malloc_trim is not None:
        malloc_trim(0)


_M_MMAP_THRESHOLD = -3      # glibc's malloc.h: blocks of at least this many bytes get their own mapping
_MMAP_THRESHOLD_MAX = 32 * 2**20    # the largest such limit glibc accepts on a 64-bit machine


def unmap_large_blocks(min_bytes: int = 2**20) -> bool:
    """From now on, let glibc give every block of at least ``min_bytes`` (default 1 MiB) its
    own memory mapping, returned to the operating system the moment it is freed.

    By default glibc raises that limit as a program frees large blocks (up to 32 MiB) and
    serves the blocks below it from its heap, where a freed block between two live ones stays
    with the process. How much stays varies from run to run: chapter 8 (hundreds of tensors of
    a few MiB) peaked anywhere between 824 and 933 MB over ten runs; with 1 MiB blocks mapped,
    at 824-825 MB in every run (benchmarks/README.md). The price is a system call and fresh
    pages per large block: chapter 8 takes 12-13 s instead of 11 s.
    Returns whether it took effect (False where the C library is not glibc)."""
    check_int("min_bytes", min_bytes, low=1, high=_MMAP_THRESHOLD_MAX)
    mallopt = _glibc_function("mallopt")
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, min_bytes))


_ONEDNN_CACHE = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"     # oneDNN's setting: how many compiled kernels it keeps


def cap_onednn_kernels(capacity: int = 16) -> bool:
    """Let oneDNN keep at most ``capacity`` compiled kernels (default 16) instead of its 1,024.

    On x86 CPUs PyTorch computes bfloat16 products with oneDNN, which compiles a kernel for
    every new product shape and keeps it (a fraction of a MB each). Fine-tuning on batches
    padded to their longest sentence meets hundreds of shapes: chapter 9 on a CPU with fast
    bf16 peaked at 1,068 MB with oneDNN's default and at 942 MB with 16 kernels kept, in the
    same time (benchmarks/README.md); a kernel dropped is compiled again when its shape comes
    back, with the same numbers. oneDNN reads the setting at its first product in the process,
    so call this before any bf16 product (chapter 9's setup cell, ``python -m bertcourse.finetune``).
    A setting already in the environment stays. Returns whether this call set it."""
    check_int("capacity", capacity, low=0, high=1024)
    if _ONEDNN_CACHE in os.environ:
        return False
    os.environ[_ONEDNN_CACHE] = str(capacity)
    return True

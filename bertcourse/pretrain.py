"""Chapter 7: pretraining a tiny BERT with masked language modelling + next sentence prediction.

The loss of one batch is the MLM loss (mean cross-entropy over the *real* predictions)
plus the NSP loss (mean cross-entropy of the ``[CLS]`` classifier)::

    loss = mlm_loss(mlm_logits, mlm_labels, mlm_weights) + nsp_loss(nsp_logits, nsp_labels)

What this module adds around that one line:

* :func:`training_step` — forward, both losses, backward, gradient clipping, AdamW step.
  Two optional speed-ups keep the same model and loss: bf16 autocast (matrix products in
  bfloat16, the loss in float32) and a *fused* MLM cross-entropy
  (:func:`fused_mlm_loss`) that never materialises the full ``(predictions, vocab)``
  logits and their gradient at once.
* :class:`Trainer` / :func:`pretrain` — the loop: AdamW with linear warm-up and linear
  decay, a step count or a time budget in seconds, a tqdm progress bar, a live loss plot
  (a figure in a notebook, text lines elsewhere), periodic evaluation, Ctrl-C that stops
  cleanly after the current step.
* :func:`evaluate` — held-out MLM top-1 accuracy and NSP accuracy, in ``eval()`` mode.
* Baselines for honest evaluation: :func:`most_frequent_token_accuracy`,
  :func:`count_based_accuracy`, :func:`nsp_chance_accuracy`.
* :func:`save_checkpoint` / :func:`load_checkpoint` — safetensors weights, ``config.json``
  and ``tokenizer.json``, plus the optimizer and loop state to resume a run.

Command line::

    python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_positive_int, check_tensor, shape_str
from .bert import CONFIGS, BERTConfig, BERTModel, MaskLM, get_config
from .data import IS_NEXT, NOT_NEXT, SPECIAL_TOKENS, WordPieceTokenizer, load_pretrain_data

__all__ = [
    "mlm_loss", "nsp_loss",
    "TrainConfig", "History", "Trainer", "pretrain", "init_bert_weights", "training_step",
    "pretraining_losses", "fused_mlm_loss", "trim_batch", "LengthBucketSampler", "bucketed_loader",
    "lr_factor", "make_optimizer", "mlm_accuracy", "evaluate", "nsp_predictions",
    "most_frequent_token_accuracy", "count_based_accuracy", "nsp_chance_accuracy", "baselines",
    "plot_history", "save_checkpoint", "load_checkpoint", "main",
]

BATCH_KEYS = ("tokens", "segments", "valid_lens", "pred_positions", "mlm_weights", "mlm_labels",
              "nsp_labels")


# ---------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------

@dataclass
class TrainConfig:
    """How to train. Give ``steps``, ``seconds`` or both (training stops at whichever
    comes first). The time budget covers the training steps and the periodic evaluations;
    the final evaluation (and saving, on the command line) comes after it.

    * ``lr``: peak learning rate of AdamW (the default suits the course's tiny models;
      larger models want less); it rises linearly from 0 over ``warmup_steps`` steps, then
      falls linearly to ``final_lr_ratio * lr`` at the end of the run (the end is the step
      count or the time budget, whichever is nearer).
    * ``weight_decay``: AdamW's decoupled weight decay, not applied to biases and layer
      norms (as in BERT). ``clip``: maximal gradient norm (``None``: no clipping).
    * ``eval_every``: evaluate on the eval loader every that many steps (and at the end);
      ``eval_batches`` limits how many eval batches are used (``None``: all).
    * ``amp``: bf16 autocast for the matrix products (``"auto"``: when the CPU has fast
      bfloat16). ``fused_loss``: the chunked MLM cross-entropy of :func:`fused_mlm_loss`.
    * ``seed``: seeds torch's generator when training starts (dropout).
    """
    steps: int | None = 1000
    seconds: float | None = None
    lr: float = 5e-3
    warmup_steps: int = 50
    final_lr_ratio: float = 0.0
    weight_decay: float = 0.01
    clip: float | None = 1.0
    eval_every: int | None = 200
    eval_batches: int | None = None
    amp: bool | str = "auto"
    fused_loss: bool = True
    seed: int = 0

    def __post_init__(self):
        if self.steps is None and self.seconds is None:
            raise ValueError("give steps or seconds (or both): training needs a budget")
        if self.steps is not None:
            check_positive_int("steps", self.steps)
        if self.seconds is not None:
            if isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float)):
                raise TypeError(f"seconds must be a number, got {type(self.seconds).__name__}")
            if not (self.seconds > 0 and math.isfinite(self.seconds)):
                raise ValueError(f"seconds must be > 0, got {self.seconds}")
        for name in ("lr", "final_lr_ratio", "weight_decay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        if self.clip is not None and (isinstance(self.clip, bool) or not isinstance(self.clip, (int, float))
                                      or self.clip <= 0):
            raise ValueError(f"clip must be a number > 0 or None, got {self.clip!r}")
        check_positive_int("warmup_steps", self.warmup_steps, allow_zero=True)
        for name in ("eval_every", "eval_batches"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.amp not in (True, False, "auto"):
            raise ValueError(f"amp must be True, False or 'auto', got {self.amp!r}")
        check_positive_int("seed", self.seed, allow_zero=True)

    def use_amp(self) -> bool:
        """Whether bf16 autocast is on (``"auto"``: when the CPU has fast bfloat16)."""
        if self.amp == "auto":
            return _cpu_has_fast_bf16()
        return bool(self.amp)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _cpu_has_fast_bf16() -> bool:
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:         # an older or unusual build: stay in float32
        return False


def _autocast(amp: bool):
    return torch.autocast("cpu", dtype=torch.bfloat16) if amp else contextlib.nullcontext()


# ---------------------------------------------------------------------------------------
# Batches and losses
# ---------------------------------------------------------------------------------------

def _check_batch(batch) -> None:
    if not isinstance(batch, dict):
        raise TypeError(f"batch must be a dict with the keys {list(BATCH_KEYS)}, got {type(batch).__name__}")
    missing = [k for k in BATCH_KEYS if k not in batch]
    if missing:
        raise ValueError(f"batch is missing the key(s) {missing}; a pretraining batch has {list(BATCH_KEYS)}")


def mlm_loss(mlm_logits: torch.Tensor, mlm_labels: torch.Tensor, mlm_weights: torch.Tensor) -> torch.Tensor:
    """Masked-LM loss: the mean cross-entropy over the *real* predictions only.

    ``mlm_logits`` (batch, max_preds, vocab), ``mlm_labels`` (batch, max_preds) integer,
    ``mlm_weights`` (batch, max_preds) float, 1 for a real prediction and 0 for a padding
    slot. The per-slot losses (``reduction='none'``) are multiplied by the weights, summed
    and divided by the sum of the weights (at least 1e-8, so a batch without predictions
    gives 0, not NaN). Pitfall: ``reduction='mean'`` first and *then* multiplying by the
    weights does nothing useful — the padding slots have already been averaged in.
    """
    check_tensor("mlm_logits", mlm_logits, ndim=3, expected="(batch, max_preds, vocab)", floating=True)
    batch, max_preds, vocab = mlm_logits.shape
    exp = f"(batch={batch}, max_preds={max_preds})"
    check_tensor("mlm_labels", mlm_labels, ndim=2, expected=exp, floating=False)
    check_tensor("mlm_weights", mlm_weights, ndim=2, expected=exp, floating=True)
    for name, x in (("mlm_labels", mlm_labels), ("mlm_weights", mlm_weights)):
        if tuple(x.shape) != (batch, max_preds):
            raise ValueError(f"{name} must have shape {exp} like mlm_logits' first two dimensions, "
                             f"got shape {shape_str(x)}")
    if mlm_labels.numel() and (mlm_labels.min() < 0 or mlm_labels.max() >= vocab):
        raise ValueError(f"mlm_labels must be ids in 0..{vocab - 1} (vocab={vocab} from mlm_logits), "
                         f"got values from {int(mlm_labels.min())} to {int(mlm_labels.max())}")
    per_slot = F.cross_entropy(mlm_logits.reshape(-1, vocab), mlm_labels.reshape(-1), reduction="none")
    weights = mlm_weights.reshape(-1).to(per_slot.dtype)
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


def nsp_loss(nsp_logits: torch.Tensor, nsp_labels: torch.Tensor) -> torch.Tensor:
    """Next-sentence loss: mean cross-entropy of ``nsp_logits`` (batch, 2) against
    ``nsp_labels`` (batch,) with 0 = IsNext, 1 = NotNext."""
    check_tensor("nsp_logits", nsp_logits, ndim=2, expected="(batch, 2)", floating=True)
    if nsp_logits.shape[1] != 2:
        raise ValueError(f"nsp_logits must have shape (batch, 2), got shape {shape_str(nsp_logits)}")
    batch = nsp_logits.shape[0]
    check_tensor("nsp_labels", nsp_labels, ndim=1, expected=f"(batch={batch},)", floating=False)
    if nsp_labels.shape[0] != batch:
        raise ValueError(f"nsp_labels must have shape (batch={batch},), got shape {shape_str(nsp_labels)}")
    if nsp_labels.numel() and not bool(((nsp_labels == IS_NEXT) | (nsp_labels == NOT_NEXT)).all()):
        raise ValueError(f"nsp_labels must be 0 (IsNext) or 1 (NotNext), got {sorted(set(nsp_labels.tolist()))}")
    return F.cross_entropy(nsp_logits, nsp_labels)


def trim_batch(batch: dict) -> dict:
    """Cut the padding columns that no sequence of the batch uses.

    The dataset pads every pair to ``max_len``; the corpus' pairs are much shorter, so a
    batch whose longest pair has 30 tokens can drop the other 34 columns: padded keys get
    attention weight 0 and padded positions are never predicted, so every real position
    computes exactly the same thing — only faster. ``tokens``/``segments`` become
    ``(batch, longest)``; the other entries are unchanged.
    """
    _check_batch(batch)
    longest = int(batch["valid_lens"].max()) if batch["valid_lens"].numel() else 1
    longest = max(longest, 1)
    if longest >= batch["tokens"].shape[1]:
        return batch
    out = dict(batch)
    out["tokens"] = batch["tokens"][:, :longest]
    out["segments"] = batch["segments"][:, :longest]
    return out


class LengthBucketSampler(torch.utils.data.Sampler):
    """Batches of indices in which the pairs have similar lengths.

    Each epoch: shuffle all indices, cut them into pools of ``pool_batches * batch_size``,
    sort each pool by length, cut it into batches, and shuffle the batches. Every pair is
    still seen once per epoch in a random batch, but a batch of short pairs no longer pays
    for the padding of one long pair (see :func:`trim_batch`). ``lengths[i]`` is the
    length of example ``i``; ``generator`` makes the order repeatable.
    """

    def __init__(self, lengths, batch_size: int, pool_batches: int = 50, generator=None):
        check_positive_int("batch_size", batch_size)
        check_positive_int("pool_batches", pool_batches)
        self.lengths = torch.as_tensor(lengths)
        if self.lengths.dim() != 1 or len(self.lengths) == 0:
            raise ValueError(f"lengths must be a non-empty 1-D sequence, got shape {shape_str(self.lengths)}")
        self.batch_size, self.pool_batches = batch_size, pool_batches
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        n, pool = len(self.lengths), self.batch_size * self.pool_batches
        order = torch.randperm(n, generator=self.generator)
        batches = []
        for s in range(0, n, pool):
            idx = order[s:s + pool]
            idx = idx[torch.argsort(self.lengths[idx], stable=True)]
            batches += [idx[i:i + self.batch_size].tolist() for i in range(0, len(idx), self.batch_size)]
        for b in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[b]


def bucketed_loader(dataset, batch_size: int, seed: int = 0, pool_batches: int = 50):
    """A training DataLoader over a :class:`~bertcourse.data.PretrainDataset` whose batches
    hold pairs of similar length (:class:`LengthBucketSampler`), seeded by ``seed``."""
    lengths = getattr(dataset, "lengths", None)   # a PretrainDataset knows them; others are read
    if lengths is None:
        lengths = [int(dataset[i]["valid_lens"]) for i in range(len(dataset))]
    sampler = LengthBucketSampler(lengths, batch_size, pool_batches, torch.Generator().manual_seed(seed))
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler)


class _FusedLinearCrossEntropy(torch.autograd.Function):
    """Cross-entropy of ``H @ W.T + b`` against ``labels``, weighted by ``coef``, without
    keeping the ``(N, vocab)`` logits.

    Forward works on ``chunk`` rows at a time: logits (in the input dtype, converted to
    float32), log-sum-exp, the loss, and already the gradient of the loss with respect to
    the logits, ``coef * (softmax - one_hot)``. Those gradients are collected for
    ``block`` rows (in the input dtype) and turned into the gradients of ``H``, ``W`` and
    ``b`` with three matrix products per block. Backward only scales them.
    Memory: ``chunk x vocab`` float32 + ``block x vocab`` values instead of several
    ``N x vocab`` tensors; time: about half, because every pass over the logits happens
    while they are still in the cache.
    """

    @staticmethod
    def forward(ctx, H, W, b, labels, coef, chunk: int, block: int):
        N, V = H.shape[0], W.shape[0]
        need_grad = any(ctx.needs_input_grad[:3])
        loss = torch.zeros((), dtype=torch.float32)
        if need_grad:
            grad_H = torch.empty_like(H)
            grad_W = torch.zeros(W.shape, dtype=torch.float32)
            grad_b = torch.zeros(V, dtype=torch.float32)
            P = torch.empty(min(block, N), V, dtype=H.dtype)       # d loss / d logits, one block
        z_buf = torch.empty(min(chunk, N), V, dtype=torch.float32)
        bias = b.float()
        Wt = W.t()
        for b0 in range(0, N, block):
            b1 = min(b0 + block, N)
            for s in range(b0, b1, chunk):
                e = min(s + chunk, b1)
                z = z_buf[:e - s]
                if H.dtype == torch.float32:
                    torch.addmm(bias, H[s:e], Wt, out=z)
                else:                       # bf16 product, then float32 for the softmax
                    z.copy_(torch.mm(H[s:e], Wt)).add_(bias)
                z.sub_(z.amax(dim=1, keepdim=True))                  # stable softmax
                lab = labels[s:e]
                picked = z.gather(1, lab[:, None]).squeeze(1)
                torch.exp(z, out=z)
                total = z.sum(dim=1)
                c = coef[s:e]
                loss += ((total.log() - picked) * c).sum()           # -log softmax[label]
                if need_grad:
                    z.mul_((c / total)[:, None])                     # c * softmax
                    z[torch.arange(e - s), lab] -= c                 # c * (softmax - one_hot)
                    grad_b += z.sum(dim=0)
                    P[s - b0:e - b0].copy_(z)
            if need_grad:
                Pb = P[:b1 - b0]
                torch.mm(Pb, W, out=grad_H[b0:b1])
                if H.dtype == torch.float32:
                    grad_W.addmm_(Pb.t(), H[b0:b1])
                else:
                    grad_W += torch.mm(Pb.t(), H[b0:b1])
        if need_grad:
            ctx.save_for_backward(grad_H, grad_W.to(W.dtype), grad_b.to(b.dtype))
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_H, grad_W, grad_b = ctx.saved_tensors
        return (grad_H * grad_loss.to(grad_H.dtype), grad_W * grad_loss.to(grad_W.dtype),
                grad_b * grad_loss.to(grad_b.dtype), None, None, None, None)


def fused_mlm_loss(features: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   mlm_labels: torch.Tensor, mlm_weights: torch.Tensor,
                   chunk: int = 128, block: int = 1024) -> torch.Tensor:
    """The MLM loss of :func:`mlm_loss`, computed from the features the
    MLM head feeds into its decoder, without building the full logits.

    ``features`` ``(batch, num_preds, num_hiddens)`` (what :class:`~bertcourse.bert.MaskLM`
    computes before ``decoder``), ``weight`` ``(vocab, num_hiddens)`` and ``bias``
    ``(vocab,)`` of the decoder, ``mlm_labels`` ``(batch, num_preds)`` ids, ``mlm_weights``
    ``(batch, num_preds)``, 1 for real predictions and 0 for padding slots.

    Same value and gradients as ``mlm_loss(features @ weight.T + bias, labels, weights)``
    (float32: up to rounding; bfloat16 features: the logits are rounded to bfloat16 as
    autocast would, the softmax and the loss are float32). Padding slots are dropped
    before any work is done.
    """
    check_tensor("features", features, ndim=3, expected="(batch, num_preds, num_hiddens)", floating=True)
    batch, num_preds, d = features.shape
    check_tensor("weight", weight, ndim=2, expected=f"(vocab, num_hiddens={d})", floating=True)
    if weight.shape[1] != d:
        raise ValueError(f"weight must have shape (vocab, num_hiddens={d}), got shape {shape_str(weight)}")
    vocab = weight.shape[0]
    check_tensor("bias", bias, ndim=1, expected=f"(vocab={vocab},)", floating=True)
    if bias.shape[0] != vocab:
        raise ValueError(f"bias must have shape (vocab={vocab},), got shape {shape_str(bias)}")
    exp = f"(batch={batch}, num_preds={num_preds})"
    check_tensor("mlm_labels", mlm_labels, ndim=2, expected=exp, floating=False)
    check_tensor("mlm_weights", mlm_weights, ndim=2, expected=exp, floating=True)
    for name, x in (("mlm_labels", mlm_labels), ("mlm_weights", mlm_weights)):
        if tuple(x.shape) != (batch, num_preds):
            raise ValueError(f"{name} must have shape {exp}, got shape {shape_str(x)}")
    if mlm_labels.numel() and (mlm_labels.min() < 0 or mlm_labels.max() >= vocab):
        raise ValueError(f"mlm_labels must be ids in 0..{vocab - 1}, got values from "
                         f"{int(mlm_labels.min())} to {int(mlm_labels.max())}")
    check_positive_int("chunk", chunk)
    check_positive_int("block", block)
    w = mlm_weights.reshape(-1).float()
    real = (w != 0).nonzero().squeeze(1)
    if real.numel() == 0:           # no prediction in the batch: loss 0, still differentiable
        return (features.sum() + weight.sum() + bias.sum()) * 0.0
    H = features.reshape(-1, d).index_select(0, real)
    W = weight.to(H.dtype)
    coef = w[real] / w.sum().clamp(min=1e-8)
    return _FusedLinearCrossEntropy.apply(H, W, bias, mlm_labels.reshape(-1)[real], coef,
                                          chunk, max(block, chunk))


def pretraining_losses(model: BERTModel, batch: dict, amp: bool = False,
                       fused: bool = True) -> dict:
    """Forward a batch and return ``{"loss", "mlm_loss", "nsp_loss"}`` (0-d tensors).

    ``loss = mlm_loss + nsp_loss``: the MLM loss averages over real predictions only
    (``mlm_weights``), the NSP loss over the pairs. ``amp``: bf16 autocast for the
    model, the losses in float32. ``fused``: compute the MLM loss with
    :func:`fused_mlm_loss` (same value) instead of materialising the logits.
    """
    _check_batch(batch)
    if not isinstance(model, BERTModel) or model.mlm is None or model.nsp is None:
        raise TypeError("model must be a BERTModel with its pretraining heads (with_heads=True)")
    batch = trim_batch(batch)
    with _autocast(amp):
        if fused:
            encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
            features = model.mlm.features(encoded, batch["pred_positions"])
            nsp_logits = model.nsp(model.pooler(encoded))
        else:
            _, mlm_logits, nsp_logits = model(batch["tokens"], batch["segments"],
                                              batch["valid_lens"], batch["pred_positions"])
    if fused:
        mlm = fused_mlm_loss(features, model.mlm.decoder.weight, model.mlm.decoder.bias,
                             batch["mlm_labels"], batch["mlm_weights"])
    else:
        mlm = mlm_loss(mlm_logits.float(), batch["mlm_labels"], batch["mlm_weights"])
    nsp = nsp_loss(nsp_logits.float(), batch["nsp_labels"])
    return {"loss": mlm + nsp, "mlm_loss": mlm, "nsp_loss": nsp}


@torch.no_grad()
def init_bert_weights(model: nn.Module, std: float = 0.02) -> nn.Module:
    """BERT's initialisation: every linear and embedding weight from N(0, std²) (std 0.02),
    biases 0, layer norms weight 1 and bias 0. Returns ``model``.

    Why it matters here: ``nn.Embedding`` starts at N(0, 1), and the MLM decoder shares
    that matrix, so an untouched model's logits have a standard deviation of about
    ``sqrt(num_hiddens)`` and the first MLM loss is far above ``ln(vocab)``. With std 0.02
    the first predictions are nearly uniform and the loss starts at ``ln(vocab)``.
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.normal_(0.0, std)
            if getattr(module, "bias", None) is not None:
                module.bias.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
    from .positional import LearnedPositionalEmbedding
    for module in model.modules():
        if isinstance(module, LearnedPositionalEmbedding):
            module.weight.normal_(0.0, std)
    return model


def make_optimizer(model: nn.Module, lr: float = 1e-3, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW with weight decay on the weight matrices (and embeddings) only; biases and
    layer-norm parameters are not decayed (as in BERT)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():     # a tied weight appears once
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6)


def training_step(model: BERTModel, optimizer: torch.optim.Optimizer, batch: dict,
                  amp: bool = False, clip: float | None = 1.0, fused: bool = True) -> dict:
    """One full training step: forward, both losses, backward, clip, optimizer step.
    Returns the losses as floats ``{"loss", "mlm_loss", "nsp_loss", "grad_norm"}``."""
    losses = pretraining_losses(model, batch, amp=amp, fused=fused)
    optimizer.zero_grad(set_to_none=True)
    losses["loss"].backward()
    params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    if clip is not None:
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, clip))
    else:
        grad_norm = float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])))
    optimizer.step()
    out = {k: float(v.detach()) for k, v in losses.items()}
    out["grad_norm"] = grad_norm
    return out


def lr_factor(step: int, progress: float, warmup_steps: int, final_ratio: float = 0.0) -> float:
    """Learning-rate multiplier: linear warm-up from 0 over ``warmup_steps`` steps, then
    linear decay from 1 to ``final_ratio`` as ``progress`` goes from 0 to 1.

    ``progress`` is the fraction of the budget used (``step / steps`` or ``elapsed /
    seconds``). Warm-up protects Adam's first steps, whose moment estimates are still
    noisy; the decay lets the model settle at the end.
    """
    warm = 1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps)
    progress = min(max(progress, 0.0), 1.0)
    return warm * (1.0 - (1.0 - final_ratio) * progress)


# ---------------------------------------------------------------------------------------
# Evaluation and baselines
# ---------------------------------------------------------------------------------------

def _take(loader: Iterable, max_batches: int | None):
    for i, batch in enumerate(loader):
        if max_batches is not None and i >= max_batches:
            return
        yield batch


def mlm_accuracy(mlm_logits: torch.Tensor, mlm_labels: torch.Tensor, mlm_weights: torch.Tensor) -> torch.Tensor:
    """Top-1 MLM accuracy over the *real* predictions: the fraction of slots with
    ``mlm_weights > 0`` whose highest logit is the label (a 0-d float tensor; 0 when there
    is no real prediction). ``mlm_logits`` (batch, num_preds, vocab), ``mlm_labels`` and
    ``mlm_weights`` (batch, num_preds). Padding slots must not count: their label 0 is
    ``[PAD]``, which the model learns never to predict, so they would look like errors."""
    check_tensor("mlm_logits", mlm_logits, ndim=3, expected="(batch, num_preds, vocab)", floating=True)
    exp = f"(batch={mlm_logits.shape[0]}, num_preds={mlm_logits.shape[1]})"
    for name, x in (("mlm_labels", mlm_labels), ("mlm_weights", mlm_weights)):
        check_tensor(name, x, ndim=2, expected=exp)
        if tuple(x.shape) != tuple(mlm_logits.shape[:2]):
            raise ValueError(f"{name} must have shape {exp}, got shape {shape_str(x)}")
    real = mlm_weights > 0
    correct = ((mlm_logits.argmax(dim=-1) == mlm_labels) & real).sum()
    return correct.float() / real.sum().clamp(min=1)


@torch.no_grad()
def evaluate(model: BERTModel, loader: Iterable, max_batches: int | None = None,
             amp: bool = False) -> dict:
    """Held-out metrics: ``{"mlm_acc", "nsp_acc", "mlm_loss", "nsp_loss", "num_preds",
    "num_pairs"}``.

    MLM accuracy is top-1 over the real predictions (``mlm_weights > 0``); NSP accuracy
    over the pairs; the losses are averages per prediction / per pair. The model runs in
    ``eval()`` mode (no dropout: training mode would make the numbers noisy) and its mode
    is restored afterwards.
    """
    if not isinstance(model, BERTModel) or model.mlm is None or model.nsp is None:
        raise TypeError("model must be a BERTModel with its pretraining heads (with_heads=True)")
    if max_batches is not None:
        check_positive_int("max_batches", max_batches)
    was_training = model.training
    model.eval()
    mlm_correct = mlm_total = mlm_loss_sum = 0.0
    nsp_correct = nsp_total = nsp_loss_sum = 0.0
    try:
        for batch in _take(loader, max_batches):
            _check_batch(batch)
            batch = trim_batch(batch)
            with _autocast(amp):
                _, mlm_logits, nsp_logits = model(batch["tokens"], batch["segments"],
                                                  batch["valid_lens"], batch["pred_positions"])
            mlm_logits, nsp_logits = mlm_logits.float(), nsp_logits.float()
            w = batch["mlm_weights"].float()
            real = w > 0
            labels = batch["mlm_labels"]
            per_slot = F.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]), labels.reshape(-1),
                                       reduction="none").reshape(labels.shape)
            mlm_loss_sum += float((per_slot * w).sum())
            mlm_correct += float(((mlm_logits.argmax(-1) == labels) & real).sum())
            mlm_total += float(w.sum())
            nsp_labels = batch["nsp_labels"]
            nsp_loss_sum += float(F.cross_entropy(nsp_logits, nsp_labels, reduction="sum"))
            nsp_correct += float((nsp_logits.argmax(-1) == nsp_labels).sum())
            nsp_total += len(nsp_labels)
    finally:
        model.train(was_training)
    if mlm_total == 0 or nsp_total == 0:
        raise ValueError("loader gave no predictions to evaluate (is it empty?)")
    return {"mlm_acc": mlm_correct / mlm_total, "nsp_acc": nsp_correct / nsp_total,
            "mlm_loss": mlm_loss_sum / mlm_total, "nsp_loss": nsp_loss_sum / nsp_total,
            "num_preds": int(mlm_total), "num_pairs": int(nsp_total)}


@torch.no_grad()
def nsp_predictions(model: BERTModel, loader: Iterable) -> torch.Tensor:
    """The model's NSP label (0 = IsNext, 1 = NotNext) for every pair of ``loader``, in the
    loader's order: ``(num_pairs,)`` long. With an unshuffled loader over a
    :class:`~bertcourse.data.PretrainDataset`, entry ``i`` belongs to ``dataset.pairs[i]``.
    Runs in ``eval()`` mode and restores the model's mode afterwards."""
    if not isinstance(model, BERTModel) or model.nsp is None:
        raise TypeError("model must be a BERTModel with its pretraining heads (with_heads=True)")
    was_training = model.training
    model.eval()
    out = []
    try:
        for batch in loader:
            _check_batch(batch)
            batch = trim_batch(batch)
            encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
            out.append(model.nsp(model.pooler(encoded)).argmax(-1))
    finally:
        model.train(was_training)
    if not out:
        raise ValueError("loader gave no batches (is it empty?)")
    return torch.cat(out)


def _original_tokens(batch: dict) -> torch.Tensor:
    """The unmasked input: ``tokens`` with every real prediction slot's label put back."""
    tokens = batch["tokens"].clone()
    real = batch["mlm_weights"] > 0
    rows = torch.arange(tokens.shape[0])[:, None].expand_as(real)
    tokens[rows[real], batch["pred_positions"][real]] = batch["mlm_labels"][real]
    return tokens


class _Counts:
    """Token statistics of the training text (the original, unmasked tokens of every
    training pair, ``[CLS]`` and ``[SEP]`` included as context).

    * ``unigram[t]``: how often token ``t`` occurs (special tokens excluded);
    * for each left neighbour ``l``: the most frequent token right after it;
    * for each (left, right) pair of neighbours: the most frequent token between them.
    """

    def __init__(self, train_loader: Iterable, num_special: int = len(SPECIAL_TOKENS)):
        rows, vocab = [], 0
        for batch in train_loader:
            _check_batch(batch)
            toks = _original_tokens(batch)
            for t, n in zip(toks, batch["valid_lens"].tolist()):
                rows.append(t[:n])
            vocab = max(vocab, int(batch["tokens"].max()) + 1, int(batch["mlm_labels"].max()) + 1)
        if not rows:
            raise ValueError("train_loader is empty")
        self.num_special = num_special
        self.mask_id = SPECIAL_TOKENS.index("[MASK]")
        self.vocab = vocab
        center = torch.cat([r[1:-1] for r in rows])
        left = torch.cat([r[:-2] for r in rows])
        right = torch.cat([r[2:] for r in rows])
        keep = center >= num_special            # predict ordinary tokens only
        center, left, right = center[keep], left[keep], right[keep]
        self.unigram = torch.bincount(center, minlength=vocab)
        self.most_frequent = int(self.unigram.argmax())
        self.by_left = self._argmax_by_key(left, center)
        self.by_both = self._argmax_by_key(left * vocab + right, center)

    def _argmax_by_key(self, keys: torch.Tensor, values: torch.Tensor) -> dict:
        """For every key, the most frequent value (ties: the smaller id)."""
        pairs, counts = torch.unique(keys * self.vocab + values, return_counts=True)
        k, v = pairs // self.vocab, pairs % self.vocab
        # sort by key, then count descending, then value ascending; take the first per key
        order = torch.argsort(v, stable=True)
        order = order[torch.argsort(-counts[order], stable=True)]
        order = order[torch.argsort(k[order], stable=True)]
        k, v = k[order], v[order]
        first = torch.ones_like(k, dtype=torch.bool)
        first[1:] = k[1:] != k[:-1]
        return dict(zip(k[first].tolist(), v[first].tolist()))

    def predict(self, tokens: torch.Tensor, valid_len: int, pos: int, context: str) -> int:
        """Predict the token at ``pos`` from the *input* the model sees (its neighbours
        may themselves be ``[MASK]``): the (left, right) table, else the left table, else
        the most frequent token."""
        def usable(i):        # a neighbour we have statistics for
            return i is not None and i != self.mask_id and i < self.vocab
        left = int(tokens[pos - 1]) if pos > 0 else None
        right = int(tokens[pos + 1]) if pos + 1 < valid_len else None
        if context == "both" and usable(left) and usable(right):
            guess = self.by_both.get(left * self.vocab + right)
            if guess is not None:
                return guess
        if usable(left):
            guess = self.by_left.get(left)
            if guess is not None:
                return guess
        return self.most_frequent


def _iter_predictions(eval_loader: Iterable):
    """Yield ``(input_tokens, valid_len, position, label)`` for every real prediction."""
    for batch in eval_loader:
        _check_batch(batch)
        for b in range(batch["tokens"].shape[0]):
            n = int(batch["valid_lens"][b])
            for pos, lab, w in zip(batch["pred_positions"][b].tolist(), batch["mlm_labels"][b].tolist(),
                                   batch["mlm_weights"][b].tolist()):
                if w > 0:
                    yield batch["tokens"][b], n, pos, lab


def most_frequent_token_accuracy(train_loader: Iterable, eval_loader: Iterable,
                                 counts: _Counts | None = None) -> float:
    """MLM accuracy of always predicting the most frequent ordinary token of the
    training text (in this corpus: the full stop ``.`` or ``the``)."""
    counts = counts or _Counts(train_loader)
    hits = total = 0
    for _, _, _, label in _iter_predictions(eval_loader):
        hits += label == counts.most_frequent
        total += 1
    if total == 0:
        raise ValueError("eval_loader has no real predictions")
    return hits / total


def count_based_accuracy(train_loader: Iterable, eval_loader: Iterable, context: str = "both",
                         counts: _Counts | None = None) -> float:
    """MLM accuracy of a count-based predictor built from the training text.

    ``context="left"`` (a bigram model): predict the token that most often follows the
    token to the left of the blank. ``context="both"``: predict the token that most often
    stands between the same left and right neighbours; when that pair was never seen (or a
    neighbour is ``[MASK]``) fall back to the left-neighbour rule, then to the most
    frequent token. It reads the same masked input as the model does.
    """
    if context not in ("left", "both"):
        raise ValueError(f"context must be 'left' or 'both', got {context!r}")
    counts = counts or _Counts(train_loader)
    hits = total = 0
    for tokens, n, pos, label in _iter_predictions(eval_loader):
        hits += counts.predict(tokens, n, pos, context) == label
        total += 1
    if total == 0:
        raise ValueError("eval_loader has no real predictions")
    return hits / total


def nsp_chance_accuracy(eval_loader: Iterable) -> float:
    """NSP accuracy of guessing without reading the sentences: always the more frequent
    label of the eval set (about 0.5, since the pairs are half IsNext, half NotNext)."""
    ones = total = 0
    for batch in eval_loader:
        _check_batch(batch)
        ones += int(batch["nsp_labels"].sum())
        total += len(batch["nsp_labels"])
    if total == 0:
        raise ValueError("eval_loader is empty")
    return max(ones, total - ones) / total


def baselines(train_loader: Iterable, eval_loader: Iterable) -> dict:
    """All baselines at once (the training text is counted once):
    ``{"mlm_most_frequent", "mlm_bigram", "mlm_both_neighbours", "nsp_chance"}``."""
    counts = _Counts(train_loader)
    return {"mlm_most_frequent": most_frequent_token_accuracy(None, eval_loader, counts),
            "mlm_bigram": count_based_accuracy(None, eval_loader, "left", counts),
            "mlm_both_neighbours": count_based_accuracy(None, eval_loader, "both", counts),
            "nsp_chance": nsp_chance_accuracy(eval_loader)}


# ---------------------------------------------------------------------------------------
# History, progress bar and live plot
# ---------------------------------------------------------------------------------------

@dataclass
class History:
    """What happened during training: one entry per step in ``step``, ``loss``,
    ``mlm_loss``, ``nsp_loss``, ``lr``, ``time`` (seconds since the start), and one dict
    per evaluation in ``evals`` (``step`` plus the keys of :func:`evaluate`).
    ``stopped_by`` is ``"steps"``, ``"seconds"`` or ``"interrupt"``."""
    step: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    mlm_loss: list = field(default_factory=list)
    nsp_loss: list = field(default_factory=list)
    lr: list = field(default_factory=list)
    time: list = field(default_factory=list)
    evals: list = field(default_factory=list)
    stopped_by: str | None = None

    @property
    def interrupted(self) -> bool:
        return self.stopped_by == "interrupt"

    @property
    def final_eval(self) -> dict | None:
        return self.evals[-1] if self.evals else None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "History":
        return cls(**{f.name: d.get(f.name, f.default_factory() if callable(f.default_factory) else None)
                      for f in dataclasses.fields(cls)})

    def frame(self):
        """The per-step records as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame({k: getattr(self, k) for k in ("step", "loss", "mlm_loss", "nsp_loss", "lr", "time")})


def _smooth(values: list, window: int) -> list:
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def plot_history(history: History, smooth: int = 20):
    """Loss curves (left) and held-out accuracies (right) as a matplotlib Figure."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 3.6))
    ax1, ax2 = fig.subplots(1, 2)
    if history.step:
        for key, label in (("loss", "total"), ("mlm_loss", "MLM"), ("nsp_loss", "NSP")):
            ax1.plot(history.step, _smooth(getattr(history, key), smooth), label=label)
    ax1.set(xlabel="step", ylabel=f"training loss (mean of {smooth} steps)", title="Training loss")
    ax1.legend(loc="upper right")
    ax1.grid(alpha=0.3)
    if history.evals:
        steps = [e["step"] for e in history.evals]
        ax2.plot(steps, [e["mlm_acc"] for e in history.evals], "o-", label="MLM top-1 accuracy")
        ax2.plot(steps, [e["nsp_acc"] for e in history.evals], "s-", label="NSP accuracy")
        ax2.legend(loc="lower right")
    ax2.set(xlabel="step", ylabel="accuracy", title="Held-out accuracy", ylim=(0, 1))
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _LivePlot:
    """In a notebook: one figure that is redrawn in place (at most every ``every_s``
    seconds, and at the end). Elsewhere: a text line per evaluation."""

    def __init__(self, enabled: bool, every_s: float = 3.0):
        self.enabled = enabled
        self.notebook = enabled and _in_notebook()
        self.every_s, self.last = every_s, -math.inf
        self.handle = None

    def update(self, history: History, force: bool = False) -> None:
        if not self.notebook or (not force and time.perf_counter() - self.last < self.every_s):
            return
        from IPython.display import display
        fig = plot_history(history)
        if self.handle is None:
            self.handle = display(fig, display_id=True)
        else:
            self.handle.update(fig)
        self.last = time.perf_counter()

    def text(self, line: str, bar=None) -> None:
        if self.enabled and not self.notebook:
            (bar.write if bar is not None else print)(line)


def _format_eval(step: int, ev: dict) -> str:
    return (f"step {step}: held-out MLM accuracy {ev['mlm_acc']:.3f} (loss {ev['mlm_loss']:.3f}), "
            f"NSP accuracy {ev['nsp_acc']:.3f} (loss {ev['nsp_loss']:.3f})")


# ---------------------------------------------------------------------------------------
# The training loop
# ---------------------------------------------------------------------------------------

class _StopFlag:
    """Ctrl-C (SIGINT) during training sets a flag; the loop stops after the current step,
    so that parameters and optimizer state are never left half-updated. A second Ctrl-C
    interrupts at once."""

    def __init__(self):
        self.stop = False
        self.previous = None

    def __enter__(self):
        try:
            self.previous = signal.signal(signal.SIGINT, self._handler)
        except ValueError:       # not the main thread: Ctrl-C raises KeyboardInterrupt as usual
            self.previous = None
        return self

    def _handler(self, signum, frame):
        self.stop = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def _loader_parts(loader):
    """``(batch_sampler, dataset, collate_fn)`` of a map-style DataLoader without workers,
    which lets the trainer skip batches cheaply when it resumes; ``None`` otherwise."""
    from torch.utils.data import DataLoader
    if (isinstance(loader, DataLoader) and loader.num_workers == 0 and loader.batch_sampler is not None
            and hasattr(loader.dataset, "__getitem__")):
        return loader.batch_sampler, loader.dataset, loader.collate_fn
    return None


class Trainer:
    """The pretraining loop, with everything it needs to stop and resume.

    ``Trainer(model, train_loader, eval_loader=None, cfg=TrainConfig())``; ``fit()``
    trains until the budget of ``cfg`` (a total over all ``fit`` calls, so a resumed run
    continues towards the same end) and returns the :class:`History`.
    ``state_dict()`` / ``load_state_dict()`` hold the optimizer, the step, the elapsed
    time, the history, the random generator and the position in the data.
    """

    def __init__(self, model: BERTModel, train_loader: Iterable, eval_loader: Iterable | None = None,
                 cfg: TrainConfig | None = None):
        if not isinstance(model, BERTModel) or model.mlm is None or model.nsp is None:
            raise TypeError("model must be a BERTModel with its pretraining heads (with_heads=True)")
        cfg = TrainConfig() if cfg is None else cfg
        if not isinstance(cfg, TrainConfig):
            raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
        self.model, self.train_loader, self.eval_loader, self.cfg = model, train_loader, eval_loader, cfg
        self.amp = cfg.use_amp()
        self.optimizer = make_optimizer(model, cfg.lr, cfg.weight_decay)
        self.history = History()
        self.step = 0                 # optimizer steps done
        self.elapsed = 0.0            # seconds spent in fit() so far
        self.epoch = 0
        self.batch_in_epoch = 0       # batches of the current epoch already used
        self._epoch_rng = None        # (torch RNG, sampler RNG) at the start of the epoch
        self._rng_state = None        # torch RNG to restore when fit() starts (after resume)
        self._started = False

    # -- budget --------------------------------------------------------------------------
    def progress(self) -> float:
        """Fraction of the budget used (the larger of steps and seconds)."""
        parts = []
        if self.cfg.steps is not None:
            parts.append(self.step / self.cfg.steps)
        if self.cfg.seconds is not None:
            parts.append(self.elapsed / self.cfg.seconds)
        return max(parts)

    def _done(self) -> str | None:
        if self.cfg.steps is not None and self.step >= self.cfg.steps:
            return "steps"
        if self.cfg.seconds is not None and self.elapsed >= self.cfg.seconds:
            return "seconds"
        return None

    # -- data ----------------------------------------------------------------------------
    def _sampler_generator(self):
        parts = _loader_parts(self.train_loader)
        if parts is None:
            return None
        batch_sampler = parts[0]
        if getattr(batch_sampler, "generator", None) is not None:      # LengthBucketSampler
            return batch_sampler.generator
        return getattr(getattr(batch_sampler, "sampler", None), "generator", None)

    def _batches(self):
        """Endless batches: epoch after epoch, starting at ``(epoch, batch_in_epoch)``.

        The order of an epoch is drawn from the random generators as they were when the
        epoch started; a resumed run sets them back to that state, draws the same order,
        skips the batches already used and then restores the generators."""
        parts = _loader_parts(self.train_loader)
        while True:
            gen = self._sampler_generator()
            resuming = self._epoch_rng is not None
            if resuming:
                current = torch.get_rng_state()
                torch.set_rng_state(self._epoch_rng[0])
                if gen is not None and self._epoch_rng[1] is not None:
                    gen.set_state(self._epoch_rng[1])
            else:                                 # a fresh epoch: remember how it starts
                self._epoch_rng = (torch.get_rng_state(), None if gen is None else gen.get_state())
            if hasattr(getattr(self.train_loader, "dataset", None), "set_epoch"):
                self.train_loader.dataset.set_epoch(self.epoch)
            if parts is not None:
                batch_sampler, dataset, collate = parts
                index_batches = list(batch_sampler)          # draws the epoch's order now
                source = (collate([dataset[i] for i in idx])
                          for idx in index_batches[self.batch_in_epoch:])
            else:                                 # any iterable of batches: skip by reading
                source = iter(self.train_loader)
                for _ in range(self.batch_in_epoch):
                    next(source, None)
            if resuming:
                torch.set_rng_state(current)
            any_batch = False
            for batch in source:
                any_batch = True
                self.batch_in_epoch += 1
                yield batch
            if not any_batch and self.batch_in_epoch == 0:
                raise ValueError("train_loader gave no batches")
            self.epoch += 1
            self.batch_in_epoch = 0
            self._epoch_rng = None

    # -- the loop ------------------------------------------------------------------------
    def _evaluate(self) -> None:
        if self.eval_loader is None:
            return
        ev = evaluate(self.model, self.eval_loader, self.cfg.eval_batches, amp=self.amp)
        self.history.evals.append({"step": self.step, **ev})

    def fit(self, progress: bool = True, plot: bool = True) -> History:
        """Train until the budget is used up or Ctrl-C; return the history.

        ``progress``: a tqdm progress bar (a widget in notebooks). ``plot``: a live loss
        plot in a notebook, text lines with the evaluations elsewhere. Training uses the
        fused attention kernel (see :func:`bertcourse.attention.store_attention_weights`);
        the model's setting is restored afterwards.
        """
        cfg, model = self.cfg, self.model
        if not self._started:
            torch.manual_seed(cfg.seed)
            self._started = True
        if self._rng_state is not None:
            torch.set_rng_state(self._rng_state)
            self._rng_state = None
        model.train()
        # the fused attention kernel while training (no attention weights kept): faster and
        # lighter; the previous setting of every attention layer is put back at the end
        from .attention import DotProductAttention
        attention_layers = [m for m in model.modules() if isinstance(m, DotProductAttention)]
        kept = [m.store_weights for m in attention_layers]
        for m in attention_layers:
            m.store_weights = False
        try:
            return self._fit(progress, plot)
        finally:
            for m, on in zip(attention_layers, kept):
                m.store_weights = on

    def _fit(self, progress: bool, plot: bool) -> History:
        from tqdm.auto import tqdm
        cfg, model = self.cfg, self.model
        live = _LivePlot(plot)
        total = cfg.steps if cfg.steps is not None else None
        bar = tqdm(total=total, initial=self.step if total else 0, disable=not progress,
                   unit="step", desc="pretraining", dynamic_ncols=True, leave=True)
        batches = self._batches()
        self.history.stopped_by = None
        start = time.perf_counter() - self.elapsed
        with _StopFlag() as flag:
            try:
                while True:
                    reason = self._done()
                    if reason is None and flag.stop:
                        reason = "interrupt"
                    if reason is not None:
                        self.history.stopped_by = reason
                        break
                    for group in self.optimizer.param_groups:
                        group["lr"] = cfg.lr * lr_factor(self.step, self.progress(), cfg.warmup_steps,
                                                         cfg.final_lr_ratio)
                    batch = next(batches)
                    out = training_step(model, self.optimizer, batch, amp=self.amp, clip=cfg.clip,
                                        fused=cfg.fused_loss)
                    self.step += 1
                    self.elapsed = time.perf_counter() - start
                    h = self.history
                    h.step.append(self.step)
                    h.loss.append(out["loss"])
                    h.mlm_loss.append(out["mlm_loss"])
                    h.nsp_loss.append(out["nsp_loss"])
                    h.lr.append(self.optimizer.param_groups[0]["lr"])
                    h.time.append(self.elapsed)
                    bar.update(1)
                    bar.set_postfix(loss=f"{out['loss']:.3f}", mlm=f"{out['mlm_loss']:.3f}",
                                    nsp=f"{out['nsp_loss']:.3f}", refresh=False)
                    if cfg.eval_every and self.step % cfg.eval_every == 0 and self._done() is None:
                        self._evaluate()
                        live.text(_format_eval(self.step, h.evals[-1]), bar if progress else None)
                        self.elapsed = time.perf_counter() - start
                    live.update(h)
            finally:
                self.elapsed = time.perf_counter() - start
                bar.close()
        if self.eval_loader is not None and (not self.history.evals or self.history.evals[-1]["step"] != self.step):
            self._evaluate()
            live.text(_format_eval(self.step, self.history.evals[-1]))
        live.update(self.history, force=True)
        return self.history

    # -- state for resuming --------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything but the model's weights: ``{"tensors": {...}, "info": {...}}``
        (tensors for safetensors, the rest JSON-friendly)."""
        opt = self.optimizer.state_dict()
        tensors, state_keys = {}, {}
        for idx, st in opt["state"].items():
            state_keys[str(idx)] = {}
            for k, v in st.items():
                if isinstance(v, torch.Tensor):
                    tensors[f"optimizer.{idx}.{k}"] = v.contiguous()
                    state_keys[str(idx)][k] = "tensor"
                else:
                    state_keys[str(idx)][k] = v
        tensors["rng.torch"] = torch.get_rng_state()
        if self._epoch_rng is not None:
            tensors["rng.epoch_torch"] = self._epoch_rng[0]
            if self._epoch_rng[1] is not None:
                tensors["rng.epoch_sampler"] = self._epoch_rng[1]
        info = {"step": self.step, "elapsed": self.elapsed, "epoch": self.epoch,
                "batch_in_epoch": self.batch_in_epoch, "started": self._started,
                "optimizer_param_groups": opt["param_groups"], "optimizer_state": state_keys,
                "history": self.history.to_dict(), "train_config": self.cfg.to_dict()}
        return {"tensors": tensors, "info": info}

    def load_state_dict(self, state: dict) -> None:
        tensors, info = state["tensors"], state["info"]
        opt_state = {}
        for idx, keys in info["optimizer_state"].items():
            opt_state[int(idx)] = {k: (tensors[f"optimizer.{idx}.{k}"] if v == "tensor" else v)
                                   for k, v in keys.items()}
        self.optimizer.load_state_dict({"state": opt_state, "param_groups": info["optimizer_param_groups"]})
        self.step, self.elapsed = int(info["step"]), float(info["elapsed"])
        self.epoch, self.batch_in_epoch = int(info["epoch"]), int(info["batch_in_epoch"])
        self._started = bool(info["started"])
        self.history = History.from_dict(info["history"])
        self._rng_state = tensors["rng.torch"]
        if "rng.epoch_torch" in tensors:
            self._epoch_rng = (tensors["rng.epoch_torch"], tensors.get("rng.epoch_sampler"))
        else:
            self._epoch_rng = None


def pretrain(model: BERTModel, train_loader: Iterable, eval_loader: Iterable | None = None,
             cfg: TrainConfig | None = None, progress: bool = True, plot: bool = True) -> History:
    """Pretrain ``model`` with MLM + NSP; see :class:`TrainConfig` and :class:`Trainer`.

    ``train_loader`` yields batches (dicts from :func:`bertcourse.data.load_pretrain_data`);
    ``eval_loader`` (optional) is evaluated every ``cfg.eval_every`` steps and at the end.
    Returns the :class:`History`. Ctrl-C stops after the current step (the model keeps
    what it learned; ``history.stopped_by == "interrupt"``).
    """
    return Trainer(model, train_loader, eval_loader, cfg).fit(progress=progress, plot=plot)


# ---------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------

MODEL_FILE, CONFIG_FILE, TOKENIZER_FILE = "model.safetensors", "config.json", "tokenizer.json"
STATE_FILE, STATE_INFO_FILE = "trainer_state.safetensors", "trainer_state.json"


def _unique_state_dict(model: nn.Module) -> tuple[dict, dict]:
    """The state dict without the tied copies (safetensors refuses shared tensors):
    ``(tensors, tied)`` where ``tied[name] = name_kept``."""
    tensors, tied, seen = {}, {}, {}
    for name, t in model.state_dict().items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
        if key in seen:
            tied[name] = seen[key]
            continue
        seen[key] = name
        tensors[name] = t.detach().contiguous()
    return tensors, tied


def _write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)


def save_checkpoint(path, model: BERTModel, tokenizer=None, trainer: Trainer | None = None,
                    extra: dict | None = None) -> str:
    """Save a model (and what is needed to use or resume it) into the folder ``path``.

    Files: ``model.safetensors`` (the weights; the MLM decoder weight is tied to the token
    embedding, so it is stored once), ``config.json`` (the :class:`BERTConfig`, the tied
    names and ``extra``), ``tokenizer.json`` (when ``tokenizer`` is given) and, with a
    ``trainer``, ``trainer_state.safetensors`` + ``trainer_state.json`` (optimizer, step,
    elapsed time, history, random state, position in the data). Returns ``path``.
    Files are written to temporary names and renamed, so an interrupted save never leaves
    a half-written checkpoint behind.
    """
    from safetensors.torch import save_file
    if not isinstance(model, BERTModel):
        raise TypeError(f"model must be a BERTModel, got {type(model).__name__}")
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    tensors, tied = _unique_state_dict(model)
    config = {"bert": model.config.to_dict(), "with_heads": model.mlm is not None,
              "tied": tied, "extra": extra or {}}
    writes = [(MODEL_FILE, lambda p: save_file(tensors, p, metadata={"format": "pt"})),
              (CONFIG_FILE, lambda p: _write_json(p, config))]
    if tokenizer is not None:
        writes.append((TOKENIZER_FILE, tokenizer.save))
    if trainer is not None:
        state = trainer.state_dict()
        writes.append((STATE_FILE, lambda p: save_file(state["tensors"], p)))
        writes.append((STATE_INFO_FILE, lambda p: _write_json(p, state["info"])))
    for name, write in writes:
        tmp = os.path.join(path, name + ".tmp")
        write(tmp)
        os.replace(tmp, os.path.join(path, name))
    return path


def load_checkpoint(path) -> tuple:
    """Load a checkpoint written by :func:`save_checkpoint`: ``(model, tokenizer, state)``.

    ``model`` is a :class:`BERTModel` in ``eval()`` mode with identical weights (ties
    restored), ``tokenizer`` a :class:`~bertcourse.data.WordPieceTokenizer` or ``None``,
    ``state`` the trainer state (for :meth:`Trainer.load_state_dict`) or ``None``.
    """
    from safetensors.torch import load_file
    path = os.fspath(path)
    if not os.path.isfile(os.path.join(path, CONFIG_FILE)):
        raise FileNotFoundError(f"no checkpoint in {path!r} (expected {CONFIG_FILE} and {MODEL_FILE})")
    with open(os.path.join(path, CONFIG_FILE), encoding="utf-8") as f:
        config = json.load(f)
    model = BERTModel(BERTConfig(**config["bert"]), with_heads=config.get("with_heads", True))
    tensors = load_file(os.path.join(path, MODEL_FILE))
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if unexpected or set(missing) - set(config.get("tied", {})):
        raise ValueError(f"checkpoint {path!r} does not fit the model: missing "
                         f"{sorted(set(missing) - set(config.get('tied', {})))}, unexpected {sorted(unexpected)}")
    model.eval()
    tokenizer = None
    if os.path.isfile(os.path.join(path, TOKENIZER_FILE)):
        tokenizer = WordPieceTokenizer.load(os.path.join(path, TOKENIZER_FILE))
    state = None
    if os.path.isfile(os.path.join(path, STATE_FILE)):
        with open(os.path.join(path, STATE_INFO_FILE), encoding="utf-8") as f:
            info = json.load(f)
        state = {"tensors": load_file(os.path.join(path, STATE_FILE)), "info": info}
    return model, tokenizer, state


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------

class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr and exit code 2 (no usage dump)."""

    def error(self, message):
        # "argument --seconds: --seconds must be > 0" -> "--seconds must be > 0"
        raise _UsageError(re.sub(r"^argument (--[\w-]+): \1 ", r"\1 ", message))


def _positive_float(name):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {text}")
        return value
    return parse


def _positive_int(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {text}")
        return value
    return parse


def _parser() -> _Parser:
    p = _Parser(prog="python -m bertcourse.pretrain",
                description="Pretrain a BERT (MLM + NSP) on the course's generated corpus and save a "
                            "checkpoint (safetensors weights, config.json, tokenizer.json).",
                epilog="Example: python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny. "
                       "Ctrl-C stops after the current step and saves a checkpoint; run again with "
                       "--resume to continue.")
    p.add_argument("--config", default="tiny",
                   help=f"model size, one of {', '.join(CONFIGS)} (default: tiny); the vocabulary size "
                        "is set to the tokenizer's")
    p.add_argument("--seconds", type=_positive_float("--seconds"), default=None,
                   help="time budget in seconds (default: 90 when --steps is not given)")
    p.add_argument("--steps", type=_positive_int("--steps"), default=None,
                   help="number of optimizer steps (if given with --seconds, whichever ends first)")
    p.add_argument("--out", required=True, help="output folder for the checkpoint (created if needed)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run saved in --out (same budget: it trains what is left)")
    p.add_argument("--batch-size", type=_positive_int("--batch-size"), default=128,
                   help="sentence pairs per batch (default: 128)")
    p.add_argument("--max-len", type=_positive_int("--max-len"), default=64,
                   help="maximal tokens per pair (default: 64)")
    p.add_argument("--lr", type=_positive_float("--lr"), default=5e-3, help="peak learning rate (default: 5e-3)")
    p.add_argument("--warmup-steps", type=int, default=50, help="linear warm-up steps (default: 50)")
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay (default: 0.01)")
    p.add_argument("--clip", type=_positive_float("--clip"), default=1.0, help="gradient-norm clip (default: 1.0)")
    p.add_argument("--eval-every", type=_positive_int("--eval-every"), default=200,
                   help="evaluate on the held-out split every N steps (default: 200)")
    p.add_argument("--seed", type=int, default=0, help="seed of the corpus, tokenizer, masks and model (default: 0)")
    p.add_argument("--num-paragraphs", type=_positive_int("--num-paragraphs"), default=None,
                   help="use only the first N training paragraphs (smaller, faster; default: all)")
    p.add_argument("--amp", choices=("auto", "on", "off"), default="auto",
                   help="bf16 autocast for the matrix products (default: auto = when the CPU has fast bf16)")
    p.add_argument("--threads", type=_positive_int("--threads"), default=None,
                   help="torch threads (default: torch's choice; 1 is best on a busy machine)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _check_writable(folder: str) -> None:
    """Create ``folder`` if needed and make sure a file can be written into it."""
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".write-test-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as e:
        raise _UsageError(f"--out {folder!r} is not a writable folder ({e.strerror or e})") from None


def _parse_args(argv) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    if args.config not in CONFIGS:
        raise _UsageError(f"--config must be one of {', '.join(CONFIGS)}, got {args.config!r}")
    if args.warmup_steps < 0:
        raise _UsageError(f"--warmup-steps must be >= 0, got {args.warmup_steps}")
    if args.weight_decay < 0:
        raise _UsageError(f"--weight-decay must be >= 0, got {args.weight_decay}")
    if args.seed < 0:
        raise _UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.max_len < 5:
        raise _UsageError(f"--max-len must be >= 5, got {args.max_len}")
    if args.seconds is None and args.steps is None:
        args.seconds = 90.0
    _check_writable(args.out)
    if args.resume and not os.path.isfile(os.path.join(args.out, STATE_INFO_FILE)):
        raise _UsageError(f"--resume: no saved run in {args.out!r} (expected {STATE_INFO_FILE})")
    return args


def main(argv=None) -> int:
    """The command line; returns the exit code (0 done, 2 bad options, 130 interrupted)."""
    try:
        args = _parse_args(sys.argv[1:] if argv is None else argv)
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        return _run(args)
    except KeyboardInterrupt:      # Ctrl-C before training started (while loading): nothing to save
        print("interrupted before training started; nothing was saved", file=sys.stderr)
        return 130


def _run(args) -> int:
    from .utils import set_seed
    set_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"loading the corpus and the tokenizer (seed {args.seed}) ...", flush=True)
    train_loader, tokenizer = load_pretrain_data(args.batch_size, args.max_len, "train", seed=args.seed,
                                                 num_paragraphs=args.num_paragraphs)
    train_loader = bucketed_loader(train_loader.dataset, args.batch_size, seed=args.seed)
    eval_loader, _ = load_pretrain_data(128, args.max_len, "held_out", seed=args.seed)
    cfg = TrainConfig(steps=args.steps, seconds=args.seconds, lr=args.lr, warmup_steps=args.warmup_steps,
                      weight_decay=args.weight_decay, clip=args.clip, eval_every=args.eval_every,
                      amp={"auto": "auto", "on": True, "off": False}[args.amp], seed=args.seed)
    if args.resume:
        model, _, state = load_checkpoint(args.out)
        trainer = Trainer(model, train_loader, eval_loader, cfg)
        trainer.load_state_dict(state)
        print(f"resuming from step {trainer.step} ({trainer.elapsed:.1f} s trained)", flush=True)
    else:
        torch.manual_seed(args.seed)
        model = BERTModel(get_config(args.config, vocab_size=len(tokenizer.vocab), max_len=args.max_len))
        init_bert_weights(model)
        trainer = Trainer(model, train_loader, eval_loader, cfg)
    n_params = sum(p.numel() for p in model.parameters())
    name = "the saved" if args.resume else f"a {args.config}"
    print(f"training {name} BERT ({n_params:,} parameters) on {len(train_loader.dataset):,} pairs; "
          f"budget: {args.steps or '-'} steps / {args.seconds or '-'} s; bf16 autocast: {trainer.amp}",
          flush=True)
    history = trainer.fit(progress=not args.quiet, plot=True)
    extra = {"config_name": args.config, "seed": args.seed, "max_len": args.max_len}
    save_checkpoint(args.out, model, tokenizer, trainer, extra=extra)
    ev = history.final_eval
    summary = f" held-out MLM accuracy {ev['mlm_acc']:.3f}, NSP accuracy {ev['nsp_acc']:.3f};" if ev else ""
    if history.interrupted:
        print(f"interrupted at step {trainer.step};{summary} checkpoint saved to {args.out} "
              f"(continue with --resume)", flush=True)
        return 130
    print(f"done: {trainer.step} steps in {trainer.elapsed:.1f} s;{summary} checkpoint saved to {args.out}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Chapter 7: pretraining a tiny BERT with masked language modelling + next sentence prediction.

The loss of one batch is the MLM loss (mean cross-entropy over the *real* predictions)
plus the NSP loss (mean cross-entropy of the ``[CLS]`` classifier)::

    loss = mlm_loss(mlm_logits, mlm_labels, mlm_weights) + nsp_loss(nsp_logits, nsp_labels)

What this module adds around that one line:

* :func:`nsp_loss` and :func:`pretraining_losses` (both heads, one batch; :func:`mlm_loss`,
  chapter 5's, lives with the MLM head in :mod:`bertcourse.bert` and is re-exported here);
* :func:`init_bert_weights` — BERT's N(0, 0.02) initialisation;
* :func:`training_step` — forward, both losses, backward, clipping, AdamW step;
* :func:`evaluate` — held-out MLM top-1 accuracy and NSP accuracy, in ``eval()`` mode;
* :func:`pretrain` — the run, on the course's one training loop
  (:class:`bertcourse.training.Trainer`, with :func:`~bertcourse.training.make_optimizer`
  and :func:`~bertcourse.training.lr_factor`, re-exported here).

Elsewhere: the layers' fast paths (``@fast_path`` methods, :mod:`bertcourse.kernels`), the
batching that trims padding (:mod:`bertcourse.batching`), the baselines
(:mod:`bertcourse.baselines`), checkpoints (:mod:`bertcourse.checkpoints`) and the command
line (:mod:`bertcourse.cli`)::

    python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny
"""
from __future__ import annotations

from typing import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (check_bool, check_finite_number, check_instance, check_optimizer,
                       check_tensor, shape_str)
from ..batching import trim_batch
from ..bert import BERTModel, mlm_loss
from ..data import IS_NEXT, NOT_NEXT, check_batch
from ..distributed import device_of
from ..positional import LearnedPositionalEmbedding
from ..precision import autocast
from ..training import History, TrainConfig, Trainer, evaluation_batches, lr_factor, make_optimizer, optimizer_step

__all__ = ["mlm_loss", "nsp_loss", "pretraining_losses", "init_bert_weights", "training_step",
           "pretraining_step", "mlm_accuracy", "evaluate", "nsp_predictions", "pretrain",
           # the shared loop, re-exported for chapter 7
           "TrainConfig", "Trainer", "History", "make_optimizer", "lr_factor"]


# ---------------------------------------------------------------------------------------
# The losses
# ---------------------------------------------------------------------------------------

def nsp_loss(nsp_logits: torch.Tensor, nsp_labels: torch.Tensor) -> torch.Tensor:
    """Next-sentence loss: mean cross-entropy of ``nsp_logits`` (batch, 2) against
    ``nsp_labels`` (batch,) with 0 = IsNext, 1 = NotNext."""
    check_tensor("nsp_logits", nsp_logits, ndim=2, expected="(batch, 2)", floating=True)
    if nsp_logits.shape[1] != 2:
        raise ValueError(f"nsp_logits must have shape (batch, 2), got shape {shape_str(nsp_logits)}")
    batch = nsp_logits.shape[0]
    if batch == 0:
        raise ValueError("nsp_logits must hold at least one pair: got an empty batch, shape (0, 2)")
    check_tensor("nsp_labels", nsp_labels, ndim=1, expected=f"(batch={batch},)", floating=False)
    if nsp_labels.shape[0] != batch:
        raise ValueError(f"nsp_labels must have shape (batch={batch},), got shape {shape_str(nsp_labels)}")
    if nsp_labels.numel() and not bool(((nsp_labels == IS_NEXT) | (nsp_labels == NOT_NEXT)).all()):
        raise ValueError(f"nsp_labels must be 0 (IsNext) or 1 (NotNext), got {sorted(set(nsp_labels.tolist()))}")
    return F.cross_entropy(nsp_logits, nsp_labels)


def _check_pretraining_model(model) -> None:
    if not isinstance(model, BERTModel) or model.mlm is None or model.nsp is None:
        raise TypeError("model must be a BERTModel with its pretraining heads (with_heads=True), "
                        f"got {type(model).__name__}")


def pretraining_losses(model: BERTModel, batch: dict, amp: bool = False,
                       fused: bool = True) -> dict:
    """Forward a batch and return ``{"loss", "mlm_loss", "nsp_loss"}`` (0-d tensors).

    ``loss = mlm_loss + nsp_loss``: the MLM loss averages over real predictions only
    (``mlm_weights``), the NSP loss over the pairs. ``amp``: bf16 autocast for the
    model, the losses in float32. ``fused``: the layers' fast paths (same values, up to
    rounding): :meth:`~bertcourse.bert.BERTModel.pretraining_features` computes the encoder
    only where the losses read it, and :meth:`~bertcourse.bert.MaskLM.loss` with
    ``fused=True`` never materialises the ``(predictions, vocab)`` logits. ``fused=False``:
    the plain forwards and :func:`mlm_loss` of the full logits.
    """
    check_bool("amp", amp)
    check_bool("fused", fused)
    check_batch(batch)
    _check_pretraining_model(model)
    batch = trim_batch(batch)
    with autocast(amp, batch["tokens"].device.type):
        features, nsp_logits = model.pretraining_features(batch["tokens"], batch["segments"], batch["valid_lens"],
                                                          batch["pred_positions"], fast=fused)
        mlm = model.mlm.loss(features, batch["mlm_labels"], batch["mlm_weights"], fused=fused)
    nsp = nsp_loss(nsp_logits.float(), batch["nsp_labels"])
    return {"loss": mlm + nsp, "mlm_loss": mlm, "nsp_loss": nsp}


# ---------------------------------------------------------------------------------------
# Initialisation and one training step
# ---------------------------------------------------------------------------------------

@torch.no_grad()
def init_bert_weights(model: nn.Module, std: float = 0.02) -> nn.Module:
    """BERT's initialisation: every linear and embedding weight from N(0, std²) (std 0.02),
    biases 0, layer norms weight 1 and bias 0. Returns ``model``.

    Why it matters here: ``nn.Embedding`` starts at N(0, 1), and the MLM decoder shares
    that matrix, so an untouched model's logits have a standard deviation of about
    ``sqrt(num_hiddens)`` and the first MLM loss is far above ``ln(vocab)``. With std 0.02
    the first predictions are nearly uniform and the loss starts at ``ln(vocab)``.
    """
    check_instance("model", model, nn.Module, "e.g. a bertcourse BERTModel")
    check_finite_number("std", std, low=0, low_open=True)
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.normal_(0.0, std)
            if getattr(module, "bias", None) is not None:
                module.bias.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
    for module in model.modules():
        if isinstance(module, LearnedPositionalEmbedding):
            module.weight.normal_(0.0, std)
    return model


def training_step(model: BERTModel, optimizer: torch.optim.Optimizer, batch: dict,
                  amp: bool = False, clip: float | None = 1.0, fused: bool = True) -> dict:
    """One full training step: forward, both losses, backward, clip, optimizer step.
    Returns the losses as floats ``{"loss", "mlm_loss", "nsp_loss", "grad_norm"}``."""
    check_bool("amp", amp)
    check_bool("fused", fused)
    check_optimizer("optimizer", optimizer)     # before the forward pass, not deep inside the step
    losses = pretraining_losses(model, batch, amp=amp, fused=fused)
    grad_norm = optimizer_step(optimizer, losses["loss"], clip)     # backward, clip, step
    return {**{k: float(v.detach()) for k, v in losses.items()}, "grad_norm": grad_norm}


def pretraining_step(fused: bool = True):
    """The step function the shared :class:`~bertcourse.training.Trainer` calls:
    ``step(model, batch) -> {"loss", "mlm_loss", "nsp_loss"}`` (the Trainer does the
    backward pass, the clipping and the optimizer step, and autocast when ``amp`` is on)."""
    check_bool("fused", fused)
    def step(model, batch):
        return pretraining_losses(model, batch, fused=fused)
    return step


# ---------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------

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


def _trimmed(batch: dict) -> dict:
    """A checked batch without its unused padding columns (what the evaluation loops read)."""
    check_batch(batch)
    return trim_batch(batch)


def evaluate(model: BERTModel, loader: Iterable, max_batches: int | None = None,
             amp: bool = False) -> dict:
    """Held-out metrics: ``{"mlm_acc", "nsp_acc", "mlm_loss", "nsp_loss", "num_preds",
    "num_pairs"}``.

    MLM accuracy is top-1 over the real predictions (``mlm_weights > 0``); NSP accuracy
    over the pairs; the losses are averages per prediction / per pair. The model runs in
    ``eval()`` mode (no dropout: training mode would make the numbers noisy) and its mode
    is restored afterwards.
    """
    check_bool("amp", amp)
    _check_pretraining_model(model)
    mlm_correct = mlm_total = mlm_loss_sum = 0.0
    nsp_correct = nsp_total = nsp_loss_sum = 0.0
    for batch in evaluation_batches(model, map(_trimmed, loader), max_batches, amp):
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
    if mlm_total == 0 or nsp_total == 0:
        raise ValueError("loader gave no predictions to evaluate (is it empty?)")
    return {"mlm_acc": mlm_correct / mlm_total, "nsp_acc": nsp_correct / nsp_total,
            "mlm_loss": mlm_loss_sum / mlm_total, "nsp_loss": nsp_loss_sum / nsp_total,
            "num_preds": int(mlm_total), "num_pairs": int(nsp_total)}


def nsp_predictions(model: BERTModel, loader: Iterable) -> torch.Tensor:
    """The model's NSP label (0 = IsNext, 1 = NotNext) for every pair of ``loader``, in the
    loader's order: ``(num_pairs,)`` long. With an unshuffled loader over a
    :class:`~bertcourse.data.PretrainDataset`, entry ``i`` belongs to ``dataset.pairs[i]``.
    Runs in ``eval()`` mode and restores the model's mode afterwards."""
    _check_pretraining_model(model)
    out = []
    for batch in evaluation_batches(model, map(_trimmed, loader)):
        encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
        out.append(model.nsp(model.pooler(encoded)).argmax(-1))
    if not out:
        raise ValueError("loader gave no batches (is it empty?)")
    return torch.cat(out).cpu()


# ---------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------

def pretrain(model: BERTModel, train_loader: Iterable, eval_loader: Iterable | None = None,
             cfg: TrainConfig | None = None, progress: bool = True, plot: bool = True,
             fused: bool = True) -> History:
    """Pretrain ``model`` with MLM + NSP on the shared loop; see
    :class:`~bertcourse.training.TrainConfig` and :class:`~bertcourse.training.Trainer`.

    ``train_loader`` yields batches (dicts from :func:`bertcourse.data.load_pretrain_data`);
    ``eval_loader`` (optional) is evaluated with :func:`evaluate` every ``cfg.eval_every``
    steps and at the end. Returns the :class:`~bertcourse.training.History` (metrics
    ``loss``, ``mlm_loss``, ``nsp_loss``, ``grad_norm``). Ctrl-C stops after the current step
    (the model keeps what it learned; ``history.stopped_by == "interrupt"``). It trains on
    ``cfg.device`` and comes back to where it was.
    """
    check_bool("progress", progress)
    check_bool("plot", plot)
    check_bool("fused", fused)
    _check_pretraining_model(model)
    eval_fn = None if eval_loader is None else evaluate
    home = device_of(model)
    trainer = Trainer(model, train_loader, pretraining_step(fused), cfg, eval_loader=eval_loader,
                      eval_fn=eval_fn, desc="pretraining")
    try:
        return trainer.fit(progress=progress, plot=plot)
    finally:
        model.to(home)

"""Chapter 7: pretraining a tiny BERT with masked language modelling + next sentence prediction.

The loss of one batch is the MLM loss (mean cross-entropy over the *real* predictions)
plus the NSP loss (mean cross-entropy of the ``[CLS]`` classifier)::

    loss = mlm_loss(mlm_logits, mlm_labels, mlm_weights) + nsp_loss(nsp_logits, nsp_labels)

What this module adds around that one line:

* :func:`pretraining_losses` (both heads, one batch; the losses :func:`mlm_loss` and
  :func:`nsp_loss` and :func:`mlm_accuracy` live with their heads in :mod:`bertcourse.bert`
  and are re-exported here);
* :func:`init_bert_weights` — BERT's initialisation, as Hugging Face's: weights N(0, 0.02²), biases 0, layer norms 1;
* :func:`training_step` — forward, both losses, backward, clipping, AdamW step;
* :func:`evaluate` — held-out MLM top-1 accuracy and NSP accuracy, in ``eval()`` mode;
* :func:`pretrain` — the run, on the course's one training loop
  (:class:`bertcourse.training.Trainer`, with :func:`~bertcourse.training.make_optimizer`
  and :func:`~bertcourse.training.lr_factor`, re-exported here), resumable and saved as a
  checkpoint: the one way a run is built, by chapter 7, the command line and torchrun.

Elsewhere: the layers' fast paths (``@fast_path`` methods, :mod:`bertcourse.fast_paths`), the
batching that trims padding (:mod:`bertcourse.batching`), the baselines
(:mod:`bertcourse.pretraining_baselines`), checkpoints (:mod:`bertcourse.checkpoints`) and the command
line (this package's ``__main__.py``)::

    python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny
"""
from __future__ import annotations

from typing import Iterable

import torch
from torch import nn

from .._checks import check_bool, check_finite_number, check_instance, check_optimizer, check_path
from ..batching import trim_batch
from ..bert import BERTModel, accuracy, mlm_accuracy, mlm_loss, nsp_loss
from ..checkpoints import save_checkpoint
from ..distributed import device_of, is_main_process
from ..i18n import gettext_noop as N_
from ..positional import LearnedPositionalEmbedding
from ..precision import autocast
from ..training import History, TrainConfig, Trainer, evaluation_batches, lr_factor, make_optimizer, optimizer_step

__all__ = ["mlm_loss", "nsp_loss", "pretraining_losses", "init_bert_weights", "training_step",
           "pretraining_step", "mlm_accuracy", "evaluate", "nsp_predictions", "pretrain",
           # the shared loop, re-exported for chapter 7
           "TrainConfig", "Trainer", "History", "make_optimizer", "lr_factor"]


# ---------------------------------------------------------------------------------------
# The losses of one batch
# ---------------------------------------------------------------------------------------

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
    _check_pretraining_model(model)
    batch = trim_batch(batch)                   # checks the batch (once per step)
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
    """BERT's initialisation as Hugging Face writes it: every linear and embedding weight from
    N(0, std²) (std 0.02), biases 0, layer norms weight 1 and bias 0. (Google's original code draws
    from a normal truncated at 2 std, whose standard deviation is about 0.88 std.) Returns ``model``.

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
    for batch in evaluation_batches(model, map(trim_batch, loader), max_batches, amp):
        _, mlm_logits, nsp_logits = model(batch["tokens"], batch["segments"],
                                          batch["valid_lens"], batch["pred_positions"])
        mlm_logits, nsp_logits = mlm_logits.float(), nsp_logits.float()
        labels, weights = batch["mlm_labels"], batch["mlm_weights"]
        mlm_loss_sum += float(mlm_loss(mlm_logits, labels, weights, reduction="sum"))
        mlm_correct += float(mlm_accuracy(mlm_logits, labels, weights, reduction="sum"))
        mlm_total += float(weights.float().sum())
        nsp_labels = batch["nsp_labels"]
        nsp_loss_sum += float(nsp_loss(nsp_logits, nsp_labels, reduction="sum"))
        nsp_correct += float(accuracy(nsp_logits, nsp_labels, reduction="sum"))
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
    for batch in evaluation_batches(model, map(trim_batch, loader)):
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
             fused: bool = True, *, state: dict | None = None, save_to: str | None = None,
             tokenizer=None, extra: dict | None = None) -> History:
    """Pretrain ``model`` with MLM + NSP on the shared loop; see
    :class:`~bertcourse.training.TrainConfig` and :class:`~bertcourse.training.Trainer`.

    ``train_loader`` yields batches (dicts from :func:`bertcourse.data.load_pretrain_data`);
    ``eval_loader`` (optional) is evaluated with :func:`evaluate` every ``cfg.eval_every``
    steps and at the end. Returns the :class:`~bertcourse.training.History` (metrics
    ``loss``, ``mlm_loss``, ``nsp_loss``, ``grad_norm``). Ctrl-C stops after the current step
    (the model keeps what it learned; ``history.stopped_by == "interrupt"``). It trains on
    ``cfg.device`` and comes back to where it was.

    ``state``: a saved trainer state (the third value of
    :func:`~bertcourse.checkpoints.load_checkpoint`): the run resumes where it stopped (step,
    optimizer moments, schedule, data order, history) and trains what is left of the budget.
    ``save_to``: a folder where the run is saved when it ends, interrupted or not (the model,
    ``tokenizer``, the trainer state to resume from and ``extra`` in ``config.json``); under
    torchrun only the first process writes it.
    """
    check_bool("progress", progress)
    check_bool("plot", plot)
    check_bool("fused", fused)
    _check_pretraining_model(model)
    if state is not None:
        check_instance("state", state, dict, "a trainer state, the third value of load_checkpoint")
    if save_to is not None:
        check_path("save_to", save_to, kind="folder", what="checkpoint folder")
    eval_fn = None if eval_loader is None else evaluate
    home = device_of(model)
    trainer = Trainer(model, train_loader, pretraining_step(fused), cfg, eval_loader=eval_loader,
                      eval_fn=eval_fn, desc=N_("pretraining"))
    if state is not None:
        trainer.load_state_dict(state)
    try:
        history = trainer.fit(progress=progress, plot=plot)
    finally:
        model.to(home)
    if save_to is not None and is_main_process():
        save_checkpoint(save_to, model, tokenizer, trainer, extra=extra)
    return history

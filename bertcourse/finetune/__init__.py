"""Chapter 9: fine-tune BERT on real review sentences, offline.

What pretraining is for. The data (:mod:`bertcourse.reviews`) are 3,000 review sentences
shipped with the package; the baselines (:mod:`bertcourse.finetuning_baselines`) are a bag of words and a
linear probe on frozen features. This module is the fine-tuning itself, one section each:

1. **The classifier.** :class:`BERTClassifier`: a BERT encoder, a pooled sentence vector
   (the ``[CLS]`` state through the pooler, or the mean over the real tokens), dropout and
   one linear layer to ``num_classes`` logits; :func:`build_classifier` puts it on the
   pretrained all-MiniLM-L6-v2 of chapter 8 or on random weights of the same shape.
2. **Training and evaluation** on the course's shared loop (:mod:`bertcourse.training`):
   :func:`classification_step`, :func:`evaluate_classifier`, :func:`finetune` (BERT's
   recipe: AdamW, a small learning rate, warm-up, 2 to 4 epochs in the paper; one epoch here,
   for time) and
   :func:`init_head_from_probe` (start the head from a fitted linear probe) and the recipe that
   does both, :func:`probe_then_finetune`; how far training moved the encoder:
   :func:`~bertcourse.inspection.sentence_vectors` (compare them before and after) and
   :func:`weights_moved`.
3. **Looking at predictions.** :func:`predict_proba`, :func:`token_contributions`
   (occlusion: remove one token, see how the probability moves), :func:`misclassified`.
4. **The model family** (:data:`MODEL_FAMILY`): BERT, RoBERTa, ALBERT, ELECTRA, DistilBERT
   with the figures of their papers, and :func:`encoder_parameters` to count them.
5. **Command line** (this package's ``__main__.py``):
   ``python -m bertcourse.finetune --model minilm --epochs 1 --out runs/sentiment``; chapters
   10-12's tasks with ``--task nli``, ``--task ner`` or ``--task qa``.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Sequence

import torch
from tokenizers import Tokenizer
from torch import nn
from torch.utils.data import DataLoader

from .._checks import (check_bool, check_choice, check_finite_number, check_instance, check_labels, check_list_of,
                       check_positive_int, check_tensor, check_texts, check_tokenizer_fits, shape_str)
from ..bert import BERTConfig, BERTEncoder, Pooler, accuracy, mean_pool
from ..checkpoints import TOKENIZER_FILE, load_weights, read_config, save_checkpoint
from ..distributed import device_of, move_to
from ..i18n import gettext as _, gettext_noop as N_
from ..inspection import POOLINGS, sentence_vectors
from ..pretrained_bert import starting_model
from ..memory import release_memory
from ..pretrain import init_bert_weights
from ..finetuning_baselines import WEIGHT_DECAYS, LogisticRegression, select_weight_decay
from ..reviews import Review, SentimentDataset, collate_reviews, encode_texts, review_loader, special_ids
from ..sentence_pairs import Pair, PairDataset, collate_pairs, pair_loader
from ..answer_spans import Question, WindowDataset, window_loader
from ..task_heads import SpanPredictor, TokenTagger, evaluate_spans, evaluate_tagger, span_step, tagging_step
from ..token_tags import TaggedDataset, TaggedSentence, tagged_loader
from ..training import TrainConfig, Trainer, evaluation_batches, evaluation_mode
from ..wordpiece import hf_tokenizer

__all__ = [
    # the classifier
    "POOLINGS", "ClassifierConfig", "BERTClassifier", "UntrainedClassifierError", "build_classifier",
    "save_classifier", "load_classifier",
    # training and evaluation
    "RECIPE", "classification_loss", "classification_step", "evaluate_classifier", "finetune", "release_memory",
    "init_head_from_probe", "fit_probe", "probe_then_finetune",
    # how far training moved the encoder (the pitfall "fine-tuning at a pretraining-sized learning rate")
    "weights_moved",
    # predictions
    "predict_proba", "token_contributions", "misclassified",
    # the model family
    "MODEL_FAMILY", "model_family_table", "encoder_parameters",
]

# ----------------------------------------------------------------------------------------
# 1. The classifier
# ----------------------------------------------------------------------------------------



@dataclass
class ClassifierConfig:
    """What :class:`BERTClassifier` needs to be rebuilt (it is saved in ``config.json``)."""
    bert: BERTConfig
    num_classes: int = 2
    pooling: str = "mean"
    dropout: float = 0.1

    def __post_init__(self):
        if isinstance(self.bert, dict):          # read back from config.json
            self.bert = BERTConfig(**self.bert)
        if not isinstance(self.bert, BERTConfig):
            raise TypeError(f"bert must be a BERTConfig, got {type(self.bert).__name__}")
        _check_head(self.num_classes, self.pooling, self.dropout)


def _check_head(num_classes, pooling, dropout) -> None:
    """The head's settings, checked where a classifier is configured and before
    :func:`build_classifier` loads any weights (a wrong value fails at once)."""
    check_positive_int("num_classes", num_classes)
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    check_choice("pooling", pooling, POOLINGS)
    check_finite_number("dropout", dropout, low=0, high=1, high_open=True)


class UntrainedClassifierError(ValueError):
    """A prediction was asked of a classifier whose head has never been trained."""


def _mask_from(valid_lens, tokens: torch.Tensor) -> torch.Tensor:
    """``valid_lens`` (``None``, ``(batch,)`` lengths or a ``(batch, seq)`` bool mask) as a
    ``(batch, seq)`` bool mask, with named errors."""
    batch, seq = tokens.shape
    if valid_lens is None:
        return torch.ones(batch, seq, dtype=torch.bool, device=tokens.device)
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(f"valid_lens must be a (batch,) tensor of lengths or a (batch={batch}, seq={seq}) bool "
                        f"mask, got {type(valid_lens).__name__}")
    if valid_lens.dim() == 2:
        if tuple(valid_lens.shape) != (batch, seq):
            raise ValueError(f"valid_lens as a mask must have the shape of tokens (batch={batch}, seq={seq}), "
                             f"got shape {shape_str(valid_lens)}")
        if valid_lens.dtype != torch.bool:
            raise TypeError(f"valid_lens as a (batch, seq) mask must be bool (True on real tokens), got dtype "
                            f"{valid_lens.dtype}; convert a 0/1 attention_mask with .bool()")
        return valid_lens
    if valid_lens.dim() == 1 and valid_lens.shape[0] == batch and not valid_lens.is_floating_point():
        if valid_lens.numel() and (valid_lens.min() < 1 or valid_lens.max() > seq):
            raise ValueError(f"valid_lens must lie in 1..seq={seq}, got values from {int(valid_lens.min())} "
                             f"to {int(valid_lens.max())}")
        return torch.arange(seq, device=tokens.device) < valid_lens[:, None]
    raise ValueError(f"valid_lens must be (batch={batch},) integer lengths or a (batch={batch}, seq={seq}) bool "
                     f"mask, got shape {shape_str(valid_lens)} and dtype {valid_lens.dtype}")


class BERTClassifier(nn.Module):
    """A sentence classifier on a BERT encoder.

    ``forward(tokens, *, segments=None, valid_lens=None)`` with ``tokens`` ``(batch, seq)``
    and ``valid_lens`` ``(batch,)`` lengths or a ``(batch, seq)`` bool mask (``True`` on real
    tokens) returns logits ``(batch, num_classes)``:

    1. the encoder: ``(batch, seq, num_hiddens)``;
    2. pooling to ``(batch, num_hiddens)``: ``"mean"`` averages the hidden states of the real
       tokens (padding excluded); ``"cls"`` takes the ``[CLS]`` state through the pooler
       (dense + tanh): BERT's paper classifies from the final ``[CLS]`` state, and Google's
       code (like Hugging Face's ``BertPooler``) puts this pooler in between;
    3. dropout, then a linear layer to ``num_classes`` logits.

    ``segments`` and ``valid_lens`` are keyword-only: passing the mask as the second
    positional argument (``model(input_ids, attention_mask)``) would make it the segment
    ids, a classic silent bug, so it raises ``TypeError``.

    ``trained_steps`` (a buffer, saved with the weights) counts the training steps of
    :func:`classification_step`; :func:`predict_proba` refuses a classifier with 0.
    """

    def __init__(self, config: ClassifierConfig, encoder: BERTEncoder | None = None, pooler: Pooler | None = None):
        super().__init__()
        if not isinstance(config, ClassifierConfig):
            raise TypeError(f"config must be a ClassifierConfig, got {type(config).__name__}")
        self.config = config
        c = config.bert
        if encoder is None:
            encoder = BERTEncoder(c)
        if not isinstance(encoder, BERTEncoder):
            raise TypeError(f"encoder must be a BERTEncoder, got {type(encoder).__name__}")
        if encoder.config.num_hiddens != c.num_hiddens:
            raise ValueError(f"encoder has num_hiddens={encoder.config.num_hiddens} but config.bert has "
                             f"{c.num_hiddens}")
        self.encoder = encoder
        # The pooler exists only with pooling="cls" (MiniLM's pooler is not used otherwise).
        if config.pooling == "cls":
            if pooler is None:
                pooler = Pooler(c.num_hiddens)
                _init_normal(pooler)
            check_instance("pooler", pooler, Pooler, "e.g. a pretrained model's pooler, or None for a new one")
            self.pooler = pooler
        else:
            self.pooler = None
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(c.num_hiddens, config.num_classes)
        _init_normal(self.head)
        self.register_buffer("trained_steps", torch.zeros((), dtype=torch.long))

    def pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, num_hiddens)`` -> ``(batch, num_hiddens)`` by ``config.pooling``."""
        if self.config.pooling == "cls":
            return self.pooler(hidden)
        return mean_pool(hidden, mask)

    def features(self, tokens, *args, segments=None, valid_lens=None) -> torch.Tensor:
        """The pooled sentence vectors, ``(batch, num_hiddens)`` (before dropout)."""
        if args:
            raise TypeError("pass the mask by name: model(tokens, valid_lens=mask). A second positional "
                            "argument would be taken as segment ids (the bug encoder(input_ids, "
                            "attention_mask) runs and silently ignores the padding)")
        check_tensor("tokens", tokens, ndim=2, expected="(batch, seq)", floating=False)
        mask = _mask_from(valid_lens, tokens)
        hidden = self.encoder(tokens, segments, mask)
        return self.pool(hidden, mask)

    def forward(self, tokens, *args, segments=None, valid_lens=None) -> torch.Tensor:
        return self.head(self.dropout(self.features(tokens, *args, segments=segments, valid_lens=valid_lens)))


def _init_normal(module: nn.Module, std: float = 0.02) -> None:
    """Hugging Face BERT's initialisation of a new layer: weights N(0, 0.02²), biases 0 (Google's code
    cuts the normal at ±2σ)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                m.weight.normal_(0.0, std)
                if m.bias is not None:
                    m.bias.zero_()


def build_classifier(source="minilm", num_classes: int = 2, pooling: str = "mean", dropout: float = 0.1,
                     seed: int = 0):
    """A :class:`BERTClassifier` and its tokenizer: ``(classifier, tokenizer)``.

    ``source``:

    * ``"minilm"``: the pretrained all-MiniLM-L6-v2 encoder (and its pooler for
      ``pooling="cls"``) of chapter 8, loaded offline;
    * ``"scratch"``: the same architecture and tokenizer with random weights (BERT's
      initialisation, seeded by ``seed``): what the network can learn from our sentences alone;
    * a :class:`~bertcourse.pretrained_bert.Pretrained` (from ``load_pretrained``), whose model is
      copied (the original is left untouched).

    The new head is initialised from ``seed``. The classifier is in training mode.
    """
    check_positive_int("seed", seed, allow_zero=True)
    _check_head(num_classes, pooling, dropout)      # before loading 90 MB of weights
    model, tokenizer = starting_model(source)
    bert_config = dataclasses.replace(model.config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if source == "scratch":
            init_bert_weights(model)
        pooler = getattr(model, "pooler", None) if pooling == "cls" else None
        clf = BERTClassifier(ClassifierConfig(bert_config, num_classes, pooling, dropout),
                             encoder=model.encoder, pooler=pooler)
    return clf.train(), tokenizer


def save_classifier(path, model: BERTClassifier, tokenizer=None, trainer=None, extra: dict | None = None) -> str:
    """Save a classifier (and its tokenizer and trainer state) with the course's
    :func:`~bertcourse.checkpoints.save_checkpoint`: ``model.safetensors`` + ``config.json``
    (+ ``tokenizer.json``, trainer state). Returns ``path``."""
    if not isinstance(model, BERTClassifier):
        raise TypeError(f"model must be a BERTClassifier, got {type(model).__name__}")
    return save_checkpoint(path, model, hf_tokenizer(tokenizer) if tokenizer is not None else None,
                           trainer, extra)


def load_classifier(path) -> tuple:
    """Load what :func:`save_classifier` wrote: ``(classifier in eval mode, tokenizer or None)``."""
    config = read_config(path)
    if config.get("model_class") != "BERTClassifier":
        raise ValueError(f"checkpoint {os.fspath(path)!r} holds a {config.get('model_class')}, not a BERTClassifier")
    try:
        model = BERTClassifier(ClassifierConfig(**config["config"]))
    except (TypeError, KeyError) as e:
        raise ValueError(f"checkpoint {os.fspath(path)!r} does not describe a ClassifierConfig: {e}") from None
    load_weights(path, model)
    tokenizer = None
    file = os.path.join(os.fspath(path), TOKENIZER_FILE)
    if os.path.isfile(file):
        tokenizer = Tokenizer.from_file(file)
    return model.eval(), tokenizer


# ----------------------------------------------------------------------------------------
# 2. Training and evaluation
# ----------------------------------------------------------------------------------------

RECIPE = dict(lr=5e-5, epochs=1, batch_size=16, warmup_ratio=0.1, weight_decay=0.01, clip=1.0, dropout=0.1)
"""The fine-tuning recipe of this chapter. From BERT's paper (appendix A.3): a learning rate of
2e-5 to 5e-5 and batches of 16 or 32; from Google's BERT code: AdamW-style decoupled weight
decay 0.01 (not on biases and layer norms), warm-up over the first 10 % of the steps, gradient
clipping at 1. Not from the paper: **one** epoch, the course's time budget; the paper
fine-tuned for 2 to 4 epochs (3 for GLUE). Batch 16 rather than 32 halves the activations a
step keeps for the backward pass: with MiniLM's gradients and AdamW's two moments, training
stays near 1 GB on a CPU."""


def _check_batch(batch, keys=("tokens", "mask", "labels")) -> None:
    if not isinstance(batch, dict) or not set(keys) <= set(batch):
        wanted = ", ".join(repr(k) for k in keys[:-1]) + f" and {keys[-1]!r}"
        raise TypeError(f"batch must be a dict with {wanted} (see collate_reviews), got "
                        + (f"keys {sorted(batch)}" if isinstance(batch, dict) else type(batch).__name__))


def classification_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """A sentence classifier's loss: the cross-entropy of ``logits`` ``(batch, num_classes)``
    against ``labels`` ``(batch,)`` (class indices), averaged (or summed, ``reduction="sum"``)."""
    check_choice("reduction", reduction, ("mean", "sum"))
    check_tensor("logits", logits, ndim=2, expected="(batch, num_classes)", floating=True)
    check_labels("labels", labels, logits.shape[-1], n=logits.shape[0])
    return nn.functional.cross_entropy(logits, labels, reduction=reduction)


def classification_step(model: BERTClassifier, batch: dict) -> dict:
    """Forward and loss of one batch, for :class:`~bertcourse.training.Trainer`:
    ``{"loss": mean cross-entropy (0-d tensor), "acc": batch accuracy}``. A batch of sentence
    pairs (:func:`~bertcourse.sentence_pairs.collate_pairs`) brings its ``"segments"``. Counts
    the step in ``model.trained_steps`` when gradients are on."""
    _check_batch(batch)
    logits = model(batch["tokens"], segments=batch.get("segments"), valid_lens=batch["mask"]).float()
    check_labels("batch['labels']", batch["labels"], logits.shape[-1], n=logits.shape[0])
    loss = classification_loss(logits, batch["labels"])
    if torch.is_grad_enabled() and model.training:
        model.trained_steps += 1
    acc = accuracy(logits, batch["labels"])
    return {"loss": loss, "acc": acc.detach()}


def evaluate_classifier(model: nn.Module, loader: Iterable, amp: bool | None = None) -> dict:
    """Accuracy and mean cross-entropy over ``loader``: ``{"acc": ..., "loss": ..., "n": ...}``.

    Runs in ``eval()`` mode (dropout off) without gradients and puts the model's mode back
    afterwards. ``amp``: ``True``/``False`` to switch bf16 autocast on or off here; ``None``
    keeps whatever the caller set (the Trainer sets it)."""
    check_bool("amp", amp, allow_none=True)
    check_instance("model", model, nn.Module, "e.g. a BERTClassifier")
    check_instance("loader", loader, Iterable, "batches of collate_reviews, e.g. review_loader(...)")
    correct, total, loss_sum = 0, 0, 0.0
    try:
        for batch in evaluation_batches(model, map(_checked, loader), amp=amp):
            logits = model(batch["tokens"], segments=batch.get("segments"), valid_lens=batch["mask"]).float()
            check_labels("batch['labels']", batch["labels"], logits.shape[-1], n=logits.shape[0])
            loss_sum += float(classification_loss(logits, batch["labels"], reduction="sum"))
            correct += int(accuracy(logits, batch["labels"], reduction="sum"))
            total += len(batch["labels"])
    finally:
        release_memory()
    if total == 0:
        raise ValueError("loader gave no batches")
    return {"acc": correct / total, "loss": loss_sum / total, "n": total}


def _checked(batch: dict) -> dict:
    _check_batch(batch)
    return batch


# What finetune trains on, by the kind of example: the loader that batches it, the step that
# computes its loss and the evaluation that reads a validation split (one loop for every task).
_TASKS = {Review: (review_loader, classification_step, evaluate_classifier, BERTClassifier),
          Pair: (pair_loader, classification_step, evaluate_classifier, BERTClassifier),
          TaggedSentence: (tagged_loader, tagging_step, evaluate_tagger, TokenTagger),
          Question: (window_loader, span_step, evaluate_spans, SpanPredictor)}
_DATASETS = {SentimentDataset: Review, PairDataset: Pair, TaggedDataset: TaggedSentence, WindowDataset: Question}


def _kind_of(examples, name: str) -> type:
    """What ``examples`` holds: Review (chapter 9), Pair (chapter 10), TaggedSentence (chapter 11) or
    Question (chapter 12)."""
    for dataset, kind in _DATASETS.items():
        if isinstance(examples, dataset):
            return kind
    check_list_of(name, examples, tuple(_TASKS), "Review (see load_sentiment()), Pair (see load_snli()), "
                  "TaggedSentence (see read_named_entities()), Question (see read_questions()) or their "
                  "datasets")
    kinds = {type(x) for x in examples}
    if len(kinds) > 1:
        raise TypeError(f"{name} must hold one kind of example, got {', '.join(sorted(k.__name__ for k in kinds))}")
    return kinds.pop()


def finetune(model: BERTClassifier | TokenTagger | SpanPredictor, tokenizer, train, validation=None, *,
             epochs: int = RECIPE["epochs"],
             lr: float = RECIPE["lr"], batch_size: int = RECIPE["batch_size"],
             warmup_ratio: float = RECIPE["warmup_ratio"], weight_decay: float = RECIPE["weight_decay"],
             clip: float | None = RECIPE["clip"], evals_per_epoch: int = 1, seed: int = 0, amp="auto",
             train_word_embeddings: bool = True, checkpointing: bool = False, progress: bool = True,
             plot: bool = True, desc: str = N_("fine-tuning"), device: str = "cpu"):
    """Train ``model`` on ``train`` with the shared loop: a :class:`BERTClassifier` on reviews
    (chapter 9) or sentence pairs (chapter 10's :class:`~bertcourse.sentence_pairs.Pair`, with
    their segment ids), a :class:`~bertcourse.task_heads.TokenTagger` on tagged sentences
    (chapter 11's :class:`~bertcourse.token_tags.TaggedSentence`), a
    :class:`~bertcourse.task_heads.SpanPredictor` on questions (chapter 12's
    :class:`~bertcourse.answer_spans.Question`, cut into windows of 192 pieces with an overlap
    of 64; pass a :class:`~bertcourse.answer_spans.WindowDataset` for others); returns the
    :class:`~bertcourse.training.Trainer` (its ``history`` has the losses and the validation
    accuracies, ``elapsed`` the seconds).

    One epoch is ``ceil(len(train) / batch_size)`` steps; the learning rate is ``lr`` times a
    linear warm-up ramp over the first ``warmup_ratio`` of all steps times a linear decay from
    1 at step 0 to 0 at the end (:func:`~bertcourse.training.lr_factor`), so it peaks a little
    below ``lr`` at the end of the warm-up (about ``0.91 * lr`` for chapter 9). ``validation``
    is evaluated ``evals_per_epoch`` times per epoch (and at the end).

    ``train_word_embeddings=False`` keeps the ``(vocab_size, num_hiddens)`` word-embedding
    table as it is (for MiniLM half of the parameters; our sentences use a few thousand of its
    30,522 rows): no gradient and no AdamW moments for it (for MiniLM 3 x 47 MB less memory).

    ``checkpointing=True`` recomputes each encoder block's activations in the backward pass
    instead of keeping them (see :class:`~bertcourse.bert.BERTEncoder`): the same gradients,
    a fraction of the activation memory, one more forward pass per step.

    ``device``: where to train (``"auto"``: a GPU when there is one); the model comes back to
    where it was, so the cells and functions that use it afterwards need not know. The returned
    trainer's optimizer state stays on the training device: to train further, call
    ``finetune`` again (or move the model back to ``trainer.device`` before ``trainer.fit()``)."""
    check_instance("model", model, (BERTClassifier, TokenTagger, SpanPredictor),
                   "see build_classifier(), build_tagger() or build_span_predictor()")
    check_tokenizer_fits(tokenizer, model)
    check_positive_int("epochs", epochs)
    check_positive_int("evals_per_epoch", evals_per_epoch)
    check_bool("train_word_embeddings", train_word_embeddings)
    check_bool("checkpointing", checkpointing)
    check_finite_number("warmup_ratio", warmup_ratio, low=0, high=1)
    check_positive_int("seed", seed, allow_zero=True)
    check_bool("progress", progress)
    check_bool("plot", plot)
    check_instance("desc", desc, str, "the progress bar's label")
    kind = _kind_of(train, "train")
    if validation is not None and _kind_of(validation, "validation") is not kind:
        raise TypeError(f"validation must hold what train holds ({kind.__name__}), got "
                        f"{_kind_of(validation, 'validation').__name__}")
    loader, step, evaluate, head = _TASKS[kind]
    if not isinstance(model, head):
        raise TypeError(f"model must be a {head.__name__} to train on {kind.__name__} examples, got "
                        f"{type(model).__name__}")
    train_loader = loader(train, tokenizer, batch_size, shuffle=True, seed=seed)
    steps = epochs * len(train_loader)
    # evaluation in batches of the training size, shortest sentences first: little padding,
    # and its activations fit in the memory a training step has just given back
    eval_loader = None if validation is None else loader(validation, tokenizer, batch_size, by_length=True)
    cfg = TrainConfig(steps=steps, lr=lr, warmup_steps=round(warmup_ratio * steps), final_lr_ratio=0.0,
                      weight_decay=weight_decay, clip=clip,
                      eval_every=max(1, len(train_loader) // evals_per_epoch), seed=seed, amp=amp,
                      device=device)
    home = device_of(model)
    table = model.encoder.token_embedding.weight
    table.requires_grad_(train_word_embeddings)
    was_checkpointing, model.encoder.checkpointing = model.encoder.checkpointing, checkpointing
    try:
        trainer = Trainer(model, train_loader, step, cfg, eval_loader=eval_loader,
                          eval_fn=None if eval_loader is None else evaluate, desc=desc)
        trainer.fit(progress=progress, plot=plot)
    finally:
        table.requires_grad_(True)
        model.encoder.checkpointing = was_checkpointing
        model.to(home)
    model.eval()
    model.zero_grad(set_to_none=True)        # the last step's gradients: as large as the model
    release_memory()
    return trainer


# ----------------------------------------------------------------------------------------
# 3. Predictions: probabilities, token contributions, mistakes
# ----------------------------------------------------------------------------------------

def _check_trained(model, allow_untrained: bool) -> None:
    """``model`` must be a :class:`BERTClassifier`, trained unless ``allow_untrained``."""
    check_instance("model", model, BERTClassifier, "see build_classifier or load_classifier")
    steps = getattr(model, "trained_steps", None)
    if not allow_untrained and steps is not None and int(steps) == 0:
        raise UntrainedClassifierError(
            "this classifier has never been trained (trained_steps == 0): its head is random, so its "
            "'prediction' is noise. Fine-tune it first, or pass allow_untrained=True to look at it anyway")


@torch.no_grad()
def predict_proba(model: BERTClassifier, tokenizer, texts: Sequence[str] | Sequence[Pair], batch_size: int = 64,
                  allow_untrained: bool = False, amp: bool = False) -> torch.Tensor:
    """Class probabilities ``(len(texts), num_classes)`` in the order of ``texts``, in eval mode:
    ``texts`` holds sentences (chapter 9: column 1 = P(positive)) or sentence pairs (chapter 10's
    :class:`~bertcourse.sentence_pairs.Pair`, columns in the order of its ``LABELS``; the pair's
    label is not read). Raises :class:`UntrainedClassifierError` for a classifier that was never trained."""
    check_positive_int("batch_size", batch_size)
    check_bool("allow_untrained", allow_untrained)
    check_bool("amp", amp)
    pairs = isinstance(texts, (list, tuple)) and bool(texts) and all(isinstance(t, Pair) for t in texts)
    if not pairs:
        check_texts("texts", texts)
    _check_trained(model, allow_untrained)
    check_tokenizer_fits(tokenizer, model)
    if pairs:
        dataset, collate = PairDataset(list(texts), tokenizer), collate_pairs
    else:
        dataset, collate = SentimentDataset([Review(t, 0, "") for t in texts], tokenizer), collate_reviews
    # shortest first: similar lengths pad little (a third less time for chapter 10's test pairs); the last
    # batch holds the longest, so batch_size still bounds the memory. The rows are put back in order below.
    order = torch.argsort(dataset.lengths, stable=True)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=order.tolist(),
                        collate_fn=functools.partial(collate, pad_id=dataset.pad_id, pad_to_multiple=16))
    try:
        out = [model(batch["tokens"], segments=batch.get("segments"), valid_lens=batch["mask"]).float()
               .softmax(-1).cpu()
               for batch in evaluation_batches(model, loader, amp=bool(amp))]
    finally:
        release_memory()
    probs = torch.empty(len(dataset), out[0].shape[-1])
    probs[order] = torch.cat(out)
    return probs


@torch.no_grad()
def token_contributions(model: BERTClassifier, tokenizer, text: str, target: int = 1,
                        allow_untrained: bool = False) -> dict:
    """Why did the classifier say that? Occlusion, one token at a time.

    For each word piece ``i`` of ``text`` (``[CLS]``/``[SEP]`` excluded) the sentence is run
    again *without* that piece; its contribution is ``p - p_without[i]``, where ``p`` is the
    probability of class ``target`` (default 1 = positive) for the whole sentence. Positive:
    the piece pushed towards ``target``; negative: away from it.

    Returns ``{"pieces": [str], "p": float, "p_without": (n,) tensor, "contributions": (n,) tensor}``.
    One batch of ``n + 1`` sentences, in eval mode and float32.
    """
    check_bool("allow_untrained", allow_untrained)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    _check_trained(model, allow_untrained)
    check_tokenizer_fits(tokenizer, model)
    n_classes = model.config.num_classes if hasattr(model, "config") else 2
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < n_classes:
        raise ValueError(f"target must be a class index in 0..{n_classes - 1}, got {target!r}")
    (ids,), (pieces,) = encode_texts(tokenizer, [text])
    body = list(range(1, len(ids) - 1))
    variants = [ids] + [ids[:i] + ids[i + 1:] for i in body]
    pad = special_ids(tokenizer)["[PAD]"]
    batch = move_to(collate_reviews([(torch.tensor(v), 0) for v in variants], pad), device_of(model))
    with evaluation_mode(model):
        probs = model(batch["tokens"], valid_lens=batch["mask"]).float().softmax(-1)[:, target].cpu()
    p, p_without = float(probs[0]), probs[1:]
    return {"pieces": pieces[1:-1], "p": p, "p_without": p_without, "contributions": p - p_without}


def misclassified(model: BERTClassifier, tokenizer, reviews: Sequence[Review]) -> list:
    """The reviews the classifier gets wrong, most confident mistakes first:
    a list of ``(review, p_positive)``."""
    check_list_of("reviews", reviews, Review, "Review (see load_sentiment())")
    probs = predict_proba(model, tokenizer, [r.text for r in reviews])[:, 1]
    wrong = [(r, float(p)) for r, p in zip(reviews, probs) if int(p > 0.5) != r.label]
    return sorted(wrong, key=lambda rp: -abs(rp[1] - 0.5))


def init_head_from_probe(model: BERTClassifier, probe: LogisticRegression) -> BERTClassifier:
    """Start the classifier's head from a linear probe fitted on the same pooled features
    (``model.head`` <- ``probe.linear``): "linear probing, then fine-tuning" (LP-FT,
    Kumar et al., ICLR 2022). A random head would send random gradients into the pretrained
    encoder during the first steps; a fitted one does not. Returns ``model``."""
    if not isinstance(model, BERTClassifier):
        raise TypeError(f"model must be a BERTClassifier, got {type(model).__name__}")
    if not isinstance(probe, LogisticRegression):
        raise TypeError(f"probe must be a LogisticRegression (fit_logistic_regression), got {type(probe).__name__}")
    if probe.linear.weight.shape != model.head.weight.shape:
        raise ValueError(f"probe has weight shape {tuple(probe.linear.weight.shape)} but the classifier's head "
                         f"(num_classes, num_hiddens) is {tuple(model.head.weight.shape)}")
    with torch.no_grad():
        model.head.weight.copy_(probe.linear.weight)
        model.head.bias.copy_(probe.linear.bias)
    return model


def fit_probe(model: BERTClassifier, tokenizer, train, validation, amp: bool = False):
    """A linear probe for ``model``'s head: a logistic regression on the frozen pooled features
    (:func:`~bertcourse.inspection.sentence_vectors`, the classifier's pooling) of the reviews
    ``train``, its weight decay chosen among :data:`~bertcourse.finetuning_baselines.WEIGHT_DECAYS` on
    ``validation``. Returns ``(probe, weight_decay, validation_accuracies)``; nothing is trained
    in ``model``."""
    check_instance("model", model, BERTClassifier, "see build_classifier")
    check_bool("amp", amp)
    features, labels = {}, {}
    for name, reviews in (("train", train), ("validation", validation)):
        check_list_of(name, reviews, Review, "Review (see load_sentiment())")
        features[name] = sentence_vectors(model, tokenizer, [r.text for r in reviews], model.config.pooling, amp=amp)
        labels[name] = torch.tensor([r.label for r in reviews])
    return select_weight_decay(features["train"], labels["train"], features["validation"], labels["validation"],
                               WEIGHT_DECAYS)


def probe_then_finetune(model: BERTClassifier, tokenizer, train, validation, *, probe: LogisticRegression | None = None,
                        amp="auto", **options):
    """Chapter 9's recipe, "linear probing, then fine-tuning" (LP-FT): start the head from a
    linear probe (``probe``, or one fitted here by :func:`fit_probe`), then :func:`finetune`
    everything (``options`` are its keyword arguments). Returns the trainer. The command line
    (``python -m bertcourse.finetune``) and chapter 9 both train this way."""
    check_instance("model", model, BERTClassifier, "see build_classifier")
    if probe is None:
        probe = fit_probe(model, tokenizer, train, validation, amp=TrainConfig(amp=amp).use_amp())[0]
    init_head_from_probe(model, probe)
    return finetune(model, tokenizer, train, validation, amp=amp, **options)


# How far training moved the encoder (the pitfall "fine-tuning at a pretraining-sized learning rate")

def weights_moved(model: nn.Module, reference: nn.Module) -> float:
    """How far training moved ``model`` from ``reference`` (the same architecture, as it was
    before training): the largest relative change ``||W - W0|| / ||W0||`` of any weight matrix
    (the two-dimensional parameters; biases and LayerNorm's scales are left out)."""
    check_instance("model", model, nn.Module)
    check_instance("reference", reference, nn.Module)
    before = dict(reference.named_parameters())
    moved = []
    with torch.no_grad():
        for name, w in model.named_parameters():
            if w.dim() != 2:
                continue
            w0 = before.get(name)
            if w0 is None or w0.shape != w.shape:
                raise ValueError(f"reference must have model's weight matrices: model's {name} is "
                                 f"{shape_str(w)}, reference's is "
                                 f"{'missing' if w0 is None else shape_str(w0)}")
            norm = w0.norm()
            if norm == 0:
                raise ValueError(f"reference's {name} is all zeros: a change relative to it is undefined")
            moved.append(((w - w0).norm() / norm).item())
    if not moved:
        raise ValueError(f"model must have weight matrices (two-dimensional parameters); "
                         f"{type(model).__name__} has none")
    return max(moved)

# ----------------------------------------------------------------------------------------
# 4. The model family, with the figures of the papers
# ----------------------------------------------------------------------------------------

MODEL_FAMILY = [
    dict(model="BERT-base", layers=12, hidden=768, heads=12, parameters="110M",
         objective=N_("MLM + NSP"), data=N_("BooksCorpus + English Wikipedia (3.3B words)"),
         paper="Devlin et al., 2019 (NAACL)"),
    dict(model="BERT-large", layers=24, hidden=1024, heads=16, parameters="340M",
         objective=N_("MLM + NSP"), data=N_("BooksCorpus + English Wikipedia (3.3B words)"),
         paper="Devlin et al., 2019 (NAACL)"),
    dict(model="RoBERTa-large", layers=24, hidden=1024, heads=16, parameters="355M",
         objective=N_("MLM, dynamic masking, no NSP"),
         data=N_("160GB: BooksCorpus + Wikipedia, CC-News, OpenWebText, Stories"),
         paper="Liu et al., 2019 (arXiv:1907.11692)"),
    dict(model="ALBERT-base", layers=12, hidden=768, heads=12, parameters="12M",
         objective=N_("MLM (n-gram masking) + sentence-order prediction; shared layers, 128-d embeddings"),
         data=N_("BooksCorpus + English Wikipedia"), paper="Lan et al., 2020 (ICLR)"),
    dict(model="ELECTRA-base", layers=12, hidden=768, heads=12, parameters="110M",
         objective=N_("replaced-token detection (a small MLM generator corrupts the input)"),
         data=N_("BooksCorpus + English Wikipedia (3.3B tokens)"), paper="Clark et al., 2020 (ICLR)"),
    dict(model="DistilBERT", layers=6, hidden=768, heads=12, parameters="66M",
         objective=N_("distillation from BERT-base (soft targets + MLM + cosine loss), no NSP"),
         data=N_("BooksCorpus + English Wikipedia"), paper="Sanh et al., 2019 (arXiv:1910.01108)"),
]
"""One row per model: sizes and pretraining as reported in each model's paper."""


def model_family_table():
    """:data:`MODEL_FAMILY` as a pandas DataFrame indexed by model; its pretraining objectives and
    data described in the language of :func:`bertcourse.i18n.set_language` (the columns keep
    their names: code reads them)."""
    import pandas as pd          # lazy: a heavy import (CONTRIBUTING.md, "Imports")
    table = pd.DataFrame(MODEL_FAMILY).set_index("model")
    for column in ("objective", "data"):
        table[column] = table[column].map(_)
    return table


def encoder_parameters(vocab_size: int, hidden: int, layers: int, ffn: int | None = None,
                       max_positions: int = 512, type_vocab: int = 2, embedding_size: int | None = None,
                       shared_layers: bool = False, pooler: bool = True) -> int:
    """Parameters of a BERT-style encoder, counted from its sizes (no model is built).

    Embeddings (token, position, segment; ``embedding_size`` < ``hidden`` adds ALBERT's
    projection) + layer norm, ``layers`` blocks (four ``hidden²`` attention projections,
    two FFN layers, two layer norms; one block if ``shared_layers``) and the pooler."""
    for name, v in (("ffn", ffn), ("embedding_size", embedding_size)):
        if v is not None:
            check_positive_int(name, v)
    check_bool("shared_layers", shared_layers)
    check_bool("pooler", pooler)
    for name, v in (("vocab_size", vocab_size), ("hidden", hidden), ("layers", layers),
                    ("max_positions", max_positions)):
        check_positive_int(name, v)
    check_positive_int("type_vocab", type_vocab, allow_zero=True)
    ffn = 4 * hidden if ffn is None else ffn
    e = hidden if embedding_size is None else embedding_size
    emb = (vocab_size + max_positions + type_vocab) * e + 2 * e
    if e != hidden:
        emb += e * hidden + hidden                          # ALBERT: project embeddings up to hidden
    block = 4 * (hidden * hidden + hidden) + 2 * hidden + (hidden * ffn + ffn) + (ffn * hidden + hidden) + 2 * hidden
    total = emb + block * (1 if shared_layers else layers)
    if pooler:
        total += hidden * hidden + hidden
    return total

"""BERT's other task shapes as heads on the one encoder: a tag per token, an answer span.

The BERT paper fine-tunes one pretrained encoder for four shapes of task (its Figure 4). Two
are a class per input, one sentence or a pair: :class:`~bertcourse.finetune.BERTClassifier`
with or without segment ids. The other two read every position's final hidden state:

* :class:`TokenTagger`: one linear layer maps each hidden state to tag logits (named entities:
  ``B-PER``, ``I-PER``, ``O``, ...), ``(batch, seq, num_tags)``; :func:`tagging_loss` is the
  cross-entropy over the labelled pieces only (``-100`` elsewhere: special tokens, padding and
  a word's later pieces, :func:`~bertcourse.token_tags.align_labels`).
* :class:`SpanPredictor`: one linear layer maps each hidden state to two numbers, "the answer
  starts here" and "it ends here": ``(batch, seq)`` start and end logits; :func:`span_loss` is
  the mean of the two cross-entropies over the positions, as in BERT's SQuAD code.

Each head is one small class, trained by the one :class:`~bertcourse.training.Trainer` through
a step function (:func:`tagging_step`, :func:`span_step`) and evaluated by the one evaluation
loop (:func:`~bertcourse.training.evaluation_batches`): :func:`evaluate_tagger`,
:func:`evaluate_spans`; :func:`predict_tags` and :func:`predict_answers` give what the scores
of :mod:`bertcourse.token_tags` and :mod:`bertcourse.answer_spans` read: a tag per word, an
answer text per question. :func:`build_tagger` and :func:`build_span_predictor` put them on the
pretrained all-MiniLM-L6-v2 of chapter 8 (or on random weights of the same shape).
:mod:`bertcourse.hf_export` writes them as ``BertForTokenClassification`` and
``BertForQuestionAnswering``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import torch
from torch import nn

from ._checks import (check_bool, check_choice, check_instance, check_positive_int, check_probability,
                      check_tensor, shape_str)
from .answer_spans import WindowDataset, best_answer, collate_windows
from .bert import BERTConfig, BERTEncoder
from .memory import release_memory
from .pretrain import init_bert_weights
from .pretrained_bert import starting_model
from .token_tags import TaggedDataset, collate_tagged, word_tags
from .training import evaluation_batches

__all__ = ["IGNORE_INDEX", "TokenTagger", "SpanPredictor", "build_tagger", "build_span_predictor",
           "tagging_loss", "span_loss", "tagging_step", "span_step", "evaluate_tagger", "evaluate_spans",
           "predict_piece_tags", "predict_tags", "predict_answers"]

IGNORE_INDEX = -100
"""The label of a position that takes no part in the loss (``cross_entropy``'s default
``ignore_index``): special tokens, padding, the later pieces of a word."""


def _init_normal(module: nn.Module, std: float = 0.02) -> None:
    # Hugging Face BERT's initialisation of a new layer: weights N(0, 0.02^2), biases 0.
    with torch.no_grad():
        module.weight.normal_(0.0, std)
        module.bias.zero_()


class _OnEncoder(nn.Module):
    """What both heads share: the encoder, and its inputs taken by name."""

    def __init__(self, config: BERTConfig, encoder: BERTEncoder | None):
        super().__init__()
        check_instance("config", config, BERTConfig)
        encoder = BERTEncoder(config) if encoder is None else encoder
        check_instance("encoder", encoder, BERTEncoder, "e.g. a pretrained model's encoder, or None for a new one")
        if encoder.config.num_hiddens != config.num_hiddens:
            raise ValueError(f"encoder has num_hiddens={encoder.config.num_hiddens} but config has "
                             f"{config.num_hiddens}")
        self.config, self.encoder = config, encoder

    def hidden(self, tokens, args, segments, valid_lens) -> torch.Tensor:
        """The final hidden states ``(batch, seq, num_hiddens)``."""
        if args:
            raise TypeError("pass the mask by name: model(tokens, valid_lens=mask). A second positional "
                            "argument would be taken as segment ids (the bug encoder(input_ids, "
                            "attention_mask) runs and silently ignores the padding)")
        return self.encoder(tokens, segments, valid_lens)


class TokenTagger(_OnEncoder):
    """A tag for every position: ``forward(tokens, *, segments=None, valid_lens=None)`` ->
    logits ``(batch, seq, num_tags)``.

    The encoder's final hidden states, dropout, one linear layer ``head`` (``num_hiddens ->
    num_tags``), the same at every position: Hugging Face's ``BertForTokenClassification``.
    Inputs are taken by name, as :class:`~bertcourse.finetune.BERTClassifier` takes them."""

    def __init__(self, config: BERTConfig, num_tags: int, dropout: float = 0.1, encoder: BERTEncoder | None = None):
        check_positive_int("num_tags", num_tags)
        check_probability("dropout", dropout)
        super().__init__(config, encoder)
        self.num_tags = num_tags
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(config.num_hiddens, num_tags)
        _init_normal(self.head)

    def forward(self, tokens, *args, segments=None, valid_lens=None) -> torch.Tensor:
        return self.head(self.dropout(self.hidden(tokens, args, segments, valid_lens)))


class SpanPredictor(_OnEncoder):
    """Where an answer starts and ends: ``forward(tokens, *, segments=None, valid_lens=None)`` ->
    ``(start_logits, end_logits)``, each ``(batch, seq)``.

    One linear layer ``head`` (``num_hiddens -> 2``) on every final hidden state; column 0 is
    the start score, column 1 the end score: BERT's SQuAD head and Hugging Face's
    ``BertForQuestionAnswering`` (``qa_outputs``), which has no dropout there. Which positions
    may hold an answer (the paragraph's, not the question's) is the decoder's business
    (:func:`~bertcourse.answer_spans.best_span`)."""

    def __init__(self, config: BERTConfig, encoder: BERTEncoder | None = None):
        super().__init__(config, encoder)
        self.head = nn.Linear(config.num_hiddens, 2)
        _init_normal(self.head)

    def forward(self, tokens, *args, segments=None, valid_lens=None) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.head(self.hidden(tokens, args, segments, valid_lens)).unbind(-1)
        return start, end


def _on_start(source, seed: int, make):
    """``(head on the starting encoder, tokenizer)``: the encoder of
    :func:`~bertcourse.pretrained_bert.starting_model` (re-initialised from ``seed`` for ``"scratch"``)
    and a new head from ``seed``, in training mode."""
    bert, tokenizer = starting_model(source)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if source == "scratch":
            init_bert_weights(bert)
        model = make(dataclasses.replace(bert.config), bert.encoder)
    return model.train(), tokenizer


def build_tagger(source="minilm", num_tags: int = 7, dropout: float = 0.1, seed: int = 0):
    """A :class:`TokenTagger` on the pretrained all-MiniLM-L6-v2 encoder (``"minilm"``), on
    random weights of the same shape (``"scratch"``) or on a copy of a ``Pretrained``'s encoder,
    and its tokenizer: ``(tagger, tokenizer)``, in training mode. The new head (and the
    scratch encoder) are initialised from ``seed``. ``num_tags``: 7 for
    :data:`~bertcourse.token_tags.TAGS`."""
    check_positive_int("num_tags", num_tags)
    check_probability("dropout", dropout)
    check_positive_int("seed", seed, allow_zero=True)
    return _on_start(source, seed, lambda config, encoder: TokenTagger(config, num_tags, dropout, encoder=encoder))


def build_span_predictor(source="minilm", seed: int = 0):
    """A :class:`SpanPredictor` on the pretrained all-MiniLM-L6-v2 encoder (``"minilm"``), on
    random weights of the same shape (``"scratch"``) or on a copy of a ``Pretrained``'s encoder,
    and its tokenizer: ``(model, tokenizer)``, in training mode, the new head from ``seed``."""
    check_positive_int("seed", seed, allow_zero=True)
    return _on_start(source, seed, lambda config, encoder: SpanPredictor(config, encoder=encoder))


# ----------------------------------------------------------------------------------------
# Losses, steps and evaluation
# ----------------------------------------------------------------------------------------

def _check_piece_labels(name: str, labels, batch: int, seq: int, num_classes: int) -> None:
    """``labels`` ``(batch, seq)``: class indices, or IGNORE_INDEX where a position takes no part."""
    check_tensor(name, labels, ndim=2, expected=f"(batch={batch}, seq={seq}) integer labels", floating=False)
    if tuple(labels.shape) != (batch, seq):
        raise ValueError(f"{name} must have shape (batch={batch}, seq={seq}), one label per position, got "
                         f"shape {shape_str(labels)}")
    used = labels[labels != IGNORE_INDEX]
    if used.numel() == 0:
        raise ValueError(f"{name} must label at least one position; every one is {IGNORE_INDEX} (ignored)")
    lo, hi = int(used.min()), int(used.max())
    if lo < 0 or hi >= num_classes:
        raise ValueError(f"{name} must hold labels in 0..{num_classes - 1} or {IGNORE_INDEX}, got values from "
                         f"{lo} to {hi}; labels shifted by the [CLS] piece, or -100 forgotten?")


def tagging_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """A tagger's loss: the cross-entropy of ``logits`` ``(batch, seq, num_tags)`` against
    ``labels`` ``(batch, seq)`` over the labelled positions only (``IGNORE_INDEX`` elsewhere),
    averaged over them (or summed, ``reduction="sum"``): every word counts once, however many
    pieces it has and however long its sentence's padding."""
    check_choice("reduction", reduction, ("mean", "sum"))
    check_tensor("logits", logits, ndim=3, expected="(batch, seq, num_tags)", floating=True)
    batch, seq, num_tags = logits.shape
    _check_piece_labels("labels", labels, batch, seq, num_tags)
    return nn.functional.cross_entropy(logits.reshape(-1, num_tags), labels.reshape(-1),
                                       ignore_index=IGNORE_INDEX, reduction=reduction)


def span_loss(start_logits: torch.Tensor, end_logits: torch.Tensor, starts: torch.Tensor,
              ends: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """A span head's loss: the mean of the cross-entropy of the start logits ``(batch, seq)``
    against the true start positions ``(batch,)`` and of the end logits against the true ends,
    as BERT's ``run_squad.py`` computes it; averaged over the batch (or summed). A window that
    does not hold the answer has start = end = 0: it is trained to point at ``[CLS]``."""
    check_choice("reduction", reduction, ("mean", "sum"))
    check_tensor("start_logits", start_logits, ndim=2, expected="(batch, seq)", floating=True)
    batch, seq = start_logits.shape
    check_tensor("end_logits", end_logits, ndim=2, expected=f"(batch={batch}, seq={seq})", floating=True)
    if end_logits.shape != start_logits.shape:
        raise ValueError(f"end_logits must have the shape of start_logits {shape_str(start_logits)}, got "
                         f"{shape_str(end_logits)}")
    for name, positions in (("starts", starts), ("ends", ends)):
        check_tensor(name, positions, ndim=1, expected=f"(batch={batch},) positions", floating=False)
        if positions.shape[0] != batch or int(positions.min()) < 0 or int(positions.max()) >= seq:
            raise ValueError(f"{name} must be (batch={batch},) positions in 0..{seq - 1}, got shape "
                             f"{shape_str(positions)} with values from {int(positions.min())} to {int(positions.max())}")
    if bool((ends < starts).any()):
        i = int((ends < starts).nonzero()[0])
        raise ValueError(f"ends must not come before starts: example {i} ends at {int(ends[i])} but starts at "
                         f"{int(starts[i])}")
    ce = nn.functional.cross_entropy
    return (ce(start_logits, starts, reduction=reduction) + ce(end_logits, ends, reduction=reduction)) / 2


def _check_batch(batch, keys: tuple) -> None:
    if not isinstance(batch, dict) or not set(keys) <= set(batch):
        raise TypeError(f"batch must be a dict with the keys {list(keys)}, got "
                        + (f"keys {sorted(batch)}" if isinstance(batch, dict) else type(batch).__name__))


def tagging_step(model: TokenTagger, batch: dict) -> dict:
    """Forward and loss of one batch ``{"tokens", "mask", "labels"}`` (as
    :func:`~bertcourse.token_tags.encode_tagged` makes it), for the one
    :class:`~bertcourse.training.Trainer`: ``{"loss": mean over the labelled pieces, "acc":
    the share of labelled pieces tagged right}``."""
    _check_batch(batch, ("tokens", "mask", "labels"))
    logits = model(batch["tokens"], segments=batch.get("segments"), valid_lens=batch["mask"]).float()
    loss = tagging_loss(logits, batch["labels"])
    used = batch["labels"] != IGNORE_INDEX
    acc = (logits.argmax(-1)[used] == batch["labels"][used]).float().mean()
    return {"loss": loss, "acc": acc.detach()}


def span_step(model: SpanPredictor, batch: dict) -> dict:
    """Forward and loss of one batch of windows ``{"tokens", "segments", "mask", "starts",
    "ends"}``, for the one :class:`~bertcourse.training.Trainer`: ``{"loss": span_loss}``."""
    _check_batch(batch, ("tokens", "segments", "mask", "starts", "ends"))
    start, end = model(batch["tokens"], segments=batch["segments"], valid_lens=batch["mask"])
    return {"loss": span_loss(start.float(), end.float(), batch["starts"], batch["ends"])}


def evaluate_tagger(model: nn.Module, loader: Iterable, amp: bool | None = None) -> dict:
    """The mean loss and the piece accuracy over the labelled pieces of ``loader``'s batches:
    ``{"loss", "acc", "n"}`` (``n``: labelled pieces). In eval mode, without gradients (the one
    evaluation loop). The scores a reader compares are word- and entity-level
    (:func:`~bertcourse.token_tags.entity_scores`); this is what training watches."""
    check_bool("amp", amp, allow_none=True)
    check_instance("model", model, nn.Module, "e.g. a TokenTagger")
    check_instance("loader", loader, Iterable, "batches of encode_tagged(...)")
    loss_sum, correct, total = 0.0, 0, 0
    try:
        for batch in evaluation_batches(model, loader, amp=amp):
            _check_batch(batch, ("tokens", "mask", "labels"))
            logits = model(batch["tokens"], segments=batch.get("segments"), valid_lens=batch["mask"]).float()
            used = batch["labels"] != IGNORE_INDEX
            loss_sum += float(tagging_loss(logits, batch["labels"], reduction="sum"))
            correct += int((logits.argmax(-1)[used] == batch["labels"][used]).sum())
            total += int(used.sum())
    finally:
        release_memory()
    if total == 0:
        raise ValueError("loader gave no labelled pieces")
    return {"loss": loss_sum / total, "acc": correct / total, "n": total}


def evaluate_spans(model: nn.Module, loader: Iterable, amp: bool | None = None) -> dict:
    """The mean span loss over ``loader``'s windows and the share whose most likely start and
    end (each on its own) are the true ones: ``{"loss", "start_acc", "end_acc", "n"}``. In eval
    mode, without gradients. Exact match and F1 on the questions are
    :func:`~bertcourse.answer_spans.squad_scores` of the decoded answers."""
    check_bool("amp", amp, allow_none=True)
    check_instance("model", model, nn.Module, "e.g. a SpanPredictor")
    check_instance("loader", loader, Iterable, "batches of windows")
    loss_sum, starts_right, ends_right, total = 0.0, 0, 0, 0
    try:
        for batch in evaluation_batches(model, loader, amp=amp):
            _check_batch(batch, ("tokens", "segments", "mask", "starts", "ends"))
            start, end = (x.float() for x in model(batch["tokens"], segments=batch["segments"],
                                                   valid_lens=batch["mask"]))
            loss_sum += float(span_loss(start, end, batch["starts"], batch["ends"], reduction="sum"))
            starts_right += int((start.argmax(-1) == batch["starts"]).sum())
            ends_right += int((end.argmax(-1) == batch["ends"]).sum())
            total += len(batch["starts"])
    finally:
        release_memory()
    if total == 0:
        raise ValueError("loader gave no windows")
    return {"loss": loss_sum / total, "start_acc": starts_right / total, "end_acc": ends_right / total, "n": total}


def _in_order(dataset, collate, batch_size: int):
    """The dataset's examples in their order, in padded batches."""
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, collate_fn=collate)


def predict_piece_tags(model: TokenTagger, dataset: TaggedDataset, batch_size: int = 32) -> list[torch.Tensor]:
    """The most probable tag id at every piece of every sentence of ``dataset``, in its order:
    one 1-D long tensor per sentence, as long as its pieces (``[CLS]`` and ``[SEP]`` included).
    In eval mode, without gradients; the sentences are batched shortest first (little padding;
    the last batch holds the longest sentences, so ``batch_size`` bounds the peak memory) and
    put back in order."""
    check_instance("model", model, TokenTagger, "see build_tagger()")
    check_instance("dataset", dataset, TaggedDataset, "see bertcourse.token_tags.TaggedDataset")
    check_positive_int("batch_size", batch_size)
    order = sorted(range(len(dataset)), key=lambda i: (len(dataset.ids[i]), i))
    pieces = [None] * len(dataset)
    loader = _in_order(torch.utils.data.Subset(dataset, order), lambda b: collate_tagged(b, pad_id=dataset.pad_id),
                       batch_size)
    rows = iter(order)
    try:
        for batch in evaluation_batches(model, loader):
            best = model(batch["tokens"], valid_lens=batch["mask"]).argmax(-1).cpu()
            for r in range(len(best)):
                pieces[next(rows)] = best[r, :int(batch["mask"][r].sum())]
    finally:
        release_memory()
    return pieces


def predict_tags(model: TokenTagger, dataset: TaggedDataset, batch_size: int = 32) -> list[list[str]]:
    """A tag per word of every sentence of ``dataset``, in its order: the tag predicted at the
    word's first piece (:func:`predict_piece_tags`, then :func:`~bertcourse.token_tags.word_tags`;
    a word cut off by ``max_len`` gets ``"O"``). In eval mode, without gradients."""
    pieces = predict_piece_tags(model, dataset, batch_size)
    return [word_tags(ids, best, len(s.words)) for ids, best, s in zip(dataset.word_ids, pieces, dataset.sentences)]


def predict_answers(model: SpanPredictor, dataset: WindowDataset, batch_size: int = 64,
                    max_answer_len: int = 30) -> dict[str, str]:
    """The answer text of every question of ``dataset``: question id -> text, the best valid span
    over all its windows (:func:`~bertcourse.answer_spans.best_answer`). In eval mode, without
    gradients. Score it with :func:`~bertcourse.answer_spans.squad_scores`."""
    check_instance("model", model, SpanPredictor, "see build_span_predictor()")
    check_instance("dataset", dataset, WindowDataset, "see bertcourse.answer_spans.WindowDataset")
    check_positive_int("batch_size", batch_size)
    check_positive_int("max_answer_len", max_answer_len)
    starts, ends = [], []
    loader = _in_order(dataset, lambda b: collate_windows(b, pad_id=dataset.pad_id), batch_size)
    for batch in evaluation_batches(model, loader):
        start, end = model(batch["tokens"], segments=batch["segments"], valid_lens=batch["mask"])
        for r in range(len(start)):
            n = int(batch["mask"][r].sum())
            starts.append(start[r, :n].float().cpu())
            ends.append(end[r, :n].float().cpu())
    by_question: dict[int, list[int]] = {}
    for i, q in enumerate(dataset.question_of):
        by_question.setdefault(q, []).append(i)
    answers = {}
    for q, rows in by_question.items():
        question = dataset.questions[q]
        best = best_answer([dataset.windows[i] for i in rows], [starts[i] for i in rows], [ends[i] for i in rows],
                           question.context, max_answer_len=max_answer_len)
        answers[question.id] = best.text
    return answers

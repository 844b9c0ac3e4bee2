"""Honest yardsticks for chapter 7's pretrained tiny BERT.

A held-out accuracy means little on its own. These baselines read the same masked input as
the model and predict from counts of the training text: the most frequent token, the token
that most often follows the left neighbour (a bigram model), or that most often stands
between the same two neighbours. NSP's baseline is chance. :func:`nsp_cues` sorts NSP pairs
by what could give a random sentence B away, to see *which* pairs the model gets right.
"""
from __future__ import annotations

from typing import Iterable

import torch

from .corpus import Corpus
from .data import SPECIAL_TOKENS, check_batch

__all__ = ["most_frequent_token_accuracy", "count_based_accuracy", "nsp_chance_accuracy", "baselines",
           "NSP_CUES", "nsp_cues"]


def _original_tokens(batch: dict) -> torch.Tensor:
    """The unmasked input: ``tokens`` with every real prediction slot's label put back."""
    tokens = batch["tokens"].clone()
    real = batch["mlm_weights"] > 0
    rows = torch.arange(tokens.shape[0], device=tokens.device)[:, None].expand_as(real)
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
            check_batch(batch)
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
        check_batch(batch)
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
        check_batch(batch)
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


# What gives a random second sentence away (see nsp_cues)
NSP_CUES = ("B follows A", "B opens a paragraph", "B is about another kind of thing",
            "B is about the same kind of thing")


def nsp_cues(corpus: Corpus, pairs, split: str = "held_out") -> list:
    """For NSP pairs ``(sentence_a, sentence_b, label)`` made from the paragraphs of
    ``split`` (e.g. ``PretrainDataset.pairs``), name what could give a random B away.

    One of :data:`NSP_CUES` per pair:

    * ``"B follows A"``: label 0 (IsNext), nothing to give away;
    * ``"B opens a paragraph"``: B is the first sentence of a paragraph (it names its
      entity and introduces it), so it follows nothing — visible in B alone;
    * ``"B is about another kind of thing"``: no paragraph that contains A is about the
      same kind of entity (country, town, animal, person) as a paragraph that contains B
      — visible by comparing the words of A and B (``he``/``she`` against ``it``, a
      currency against legs);
    * ``"B is about the same kind of thing"``: a random sentence about another entity of
      the same kind. Only names, a pronoun of the other gender, or knowing the facts can
      catch it ("its capital is tarnum." after a sentence about another country).
    """
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (from generate_corpus()), got {type(corpus).__name__}")
    paragraphs = corpus.split(split)
    infos = corpus.train_info if split == "train" else corpus.held_out_info
    kinds: dict = {}        # sentence -> kinds of the paragraphs that contain it
    openers = set()         # first sentences of paragraphs
    for par, info in zip(paragraphs, infos):
        if par:
            openers.add(par[0])
        for sentence in par:
            kinds.setdefault(sentence, set()).add(info.kind)
    out = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 3):
            raise TypeError(f"pairs must hold (sentence_a, sentence_b, label) triples; pair {i} is {pair!r}")
        a, b, label = pair
        if label not in (0, 1):
            raise ValueError(f"pair {i}: label must be 0 (IsNext) or 1 (NotNext), got {label!r}")
        for name, sentence in (("sentence_a", a), ("sentence_b", b)):
            if sentence not in kinds:
                raise ValueError(f"pair {i}: {name} {sentence!r} is not a sentence of the "
                                 f"{split!r} split (were the pairs made from another split?)")
        if label == 0:
            out.append(NSP_CUES[0])
        elif b in openers:
            out.append(NSP_CUES[1])
        elif not kinds[a] & kinds[b]:
            out.append(NSP_CUES[2])
        else:
            out.append(NSP_CUES[3])
    return out

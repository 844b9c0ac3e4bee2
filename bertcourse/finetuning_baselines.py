"""Chapter 9's baselines: classifiers on fixed features, in plain torch (no scikit-learn).

* a **bag of words**: :func:`words`, :func:`build_vocabulary`, :func:`bag_of_words` (0/1
  word-presence features);
* **logistic regression** on any fixed features: :class:`LogisticRegression`,
  :func:`fit_logistic_regression` (full-batch L-BFGS), :func:`select_weight_decay` (on the
  validation split);
* chapter 10's **one-side baselines** (:func:`one_side_baselines`): a bag of words that reads
  only the premise, or only the hypothesis, of a sentence pair;
* a **linear probe** on frozen BERT features (:func:`~bertcourse.inspection.sentence_vectors`):
  :func:`frozen_features` (all-MiniLM-L6-v2's mean-pooled and ``[CLS]`` vectors,
  for the whole data set, cached) and :func:`few_shot_accuracies` (both baselines trained on
  only ``n`` sentences).
"""
from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

from ._checks import (check_bool, check_dim, check_finite_number, check_instance, check_int,
                      check_int_list, check_labels, check_list_of, check_nonempty, check_positive_int, check_tensor,
                      check_texts)
from .bert import accuracy
from .inspection import sentence_vectors
from .pretrained_bert import load_pretrained
from .reviews import load_sentiment, stratified_indices
from .sentence_pairs import PairSplits
from .precision import cpu_has_fast_bf16

__all__ = ["words", "build_vocabulary", "bag_of_words", "LogisticRegression", "fit_logistic_regression",
           "select_weight_decay", "WEIGHT_DECAYS", "FrozenFeatures", "frozen_features",
           "few_shot_accuracies", "PAIR_SIDES", "one_side_baselines"]

# ----------------------------------------------------------------------------------------
# Bag of words and logistic regression
# ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``: runs of letters and digits, with an apostrophe inside
    (``"Don't buy it!"`` -> ``["don't", "buy", "it"]``)."""
    check_instance("text", text, str)
    return _WORD.findall(text.lower())


def build_vocabulary(texts: Sequence[str], min_count: int = 1) -> dict[str, int]:
    """``{word: column}`` for every word of ``texts`` seen at least ``min_count`` times,
    most frequent first (ties alphabetically)."""
    check_texts("texts", texts, allow_blank=True)
    check_positive_int("min_count", min_count)
    counts: dict[str, int] = {}
    for t in texts:
        for w in words(t):
            counts[w] = counts.get(w, 0) + 1
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    if not kept:
        raise ValueError(f"no word of texts occurs min_count={min_count} times: the vocabulary would be empty")
    return {w: i for i, w in enumerate(kept)}


def bag_of_words(texts: Sequence[str], vocab: dict[str, int]) -> torch.Tensor:
    """``(len(texts), len(vocab))`` float tensor: 1 where the text contains the word, else 0
    (word order and counts are thrown away; unknown words are ignored)."""
    check_texts("texts", texts, allow_blank=True)         # an empty text: a row of zeros
    _check_vocab(vocab)
    X = torch.zeros(len(texts), len(vocab))
    for r, t in enumerate(texts):
        cols = [vocab[w] for w in set(words(t)) if w in vocab]
        X[r, cols] = 1.0
    return X


def _check_vocab(vocab) -> None:
    """``vocab`` must be a non-empty dict ``{word: column}`` with columns in ``0..len(vocab)-1``."""
    check_instance("vocab", vocab, dict, "{word: column}, see build_vocabulary")
    if not vocab:
        raise ValueError("vocab must hold at least one word {word: column}, got an empty dict")
    check_int_list("vocab", list(vocab.values()), low=0, high=len(vocab) - 1)


def _check_features(X, y, num_classes: int, num_features: int | None = None, names=("X", "y")) -> None:
    """Features ``X`` ``(n, num_features)``, finite and not empty, and their labels ``y`` ``(n,)``,
    ints in ``0..num_classes-1``; ``names`` are the arguments' names in the messages."""
    expected = "(n, num_features)" if num_features is None else f"(n, num_features={num_features})"
    check_tensor(names[0], X, ndim=2, expected=expected, floating=True, finite=True)
    check_nonempty(names[0], X, expected)
    if num_features is not None:
        check_dim(names[0], X, 1, num_features, expected)
    check_labels(names[1], y, num_classes, n=X.shape[0])


class LogisticRegression(nn.Module):
    """A linear classifier on fixed features: ``(n, num_features) -> (n, num_classes)`` logits."""

    def __init__(self, num_features: int, num_classes: int = 2):
        super().__init__()
        check_positive_int("num_features", num_features)
        check_int("num_classes", num_classes, low=2)
        self.linear = nn.Linear(num_features, num_classes)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        expected = f"(n, num_features={self.linear.in_features})"
        check_tensor("X", X, ndim=2, expected=expected, floating=True, finite=True)
        check_dim("X", X, 1, self.linear.in_features, expected)
        return self.linear(X)

    def loss(self, X: torch.Tensor, y: torch.Tensor, weight_decay: float = 0.0, *, check: bool = True) -> torch.Tensor:
        """What :func:`fit_logistic_regression` minimises: the mean cross-entropy of the rows of
        ``X`` against ``y`` plus ``weight_decay / 2 * ||W||²`` (the bias is not decayed).
        ``check=False`` skips the checks of ``X``, ``y`` and ``weight_decay``: the fit checks them
        once and then calls this at each of L-BFGS's ~50 evaluations (checking a bag of words
        for infinities each time took 70 % of chapter 10's one-side baselines)."""
        check_bool("check", check)
        if check:
            _check_features(X, y, self.linear.out_features, self.linear.in_features)
            check_finite_number("weight_decay", weight_decay, low=0)
        return (nn.functional.cross_entropy(self.linear(X), y)
                + 0.5 * weight_decay * self.linear.weight.pow(2).sum())

    @torch.no_grad()
    def accuracy(self, X: torch.Tensor, y: torch.Tensor) -> float:
        """Share of the rows of ``X`` whose most likely class is ``y``."""
        _check_features(X, y, self.linear.out_features, self.linear.in_features)
        return float(accuracy(self(X), y))


def fit_logistic_regression(X: torch.Tensor, y: torch.Tensor, weight_decay: float = 1e-3,
                            num_classes: int = 2, steps: int = 100) -> LogisticRegression:
    """Fit :class:`LogisticRegression` to features ``X`` ``(n, d)`` and labels ``y`` ``(n,)``:
    minimise the mean cross-entropy ``+ weight_decay / 2 * ||W||²`` with full-batch L-BFGS
    (a convex problem: deterministic, no learning rate to tune, at most ``steps`` iterations)."""
    check_int("num_classes", num_classes, low=2)
    _check_features(X, y, num_classes)
    check_finite_number("weight_decay", weight_decay, low=0)
    check_positive_int("steps", steps)
    X, y = X.detach().float(), y.long()
    model = LogisticRegression(X.shape[1], num_classes)
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=steps, history_size=20,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-6, tolerance_change=1e-9)

    def closure():
        opt.zero_grad()
        loss = model.loss(X, y, weight_decay, check=False)
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return model.eval()


def select_weight_decay(X_train, y_train, X_val, y_val, grid=(1e-3, 1e-2, 1e-1, 1.0), **kwargs):
    """Fit one :func:`fit_logistic_regression` per weight decay in ``grid`` and keep the one
    with the best validation accuracy (the first on ties): ``(model, weight_decay, {wd: acc})``."""
    check_list_of("grid", grid, (int, float), "weight decays, e.g. WEIGHT_DECAYS")
    for i, wd in enumerate(grid):
        check_finite_number(f"grid[{i}]", wd, low=0)
    num_classes = kwargs.get("num_classes", 2)
    check_int("num_classes", num_classes, low=2)
    _check_features(X_train, y_train, num_classes, names=("X_train", "y_train"))
    _check_features(X_val, y_val, num_classes, X_train.shape[1], names=("X_val", "y_val"))
    results, best = {}, None
    for wd in grid:
        m = fit_logistic_regression(X_train, y_train, wd, **kwargs)
        results[wd] = m.accuracy(X_val, y_val)
        if best is None or results[wd] > results[best[1]]:
            best = (m, wd)
    return best[0], best[1], results


# ----------------------------------------------------------------------------------------
# Frozen features
# ----------------------------------------------------------------------------------------


@dataclass
class FrozenFeatures:
    """Frozen all-MiniLM-L6-v2 sentence vectors of the three splits: ``mean[split]`` and
    ``cls[split]`` ``(n, 384)``, ``labels[split]`` ``(n,)``, and the ``seconds`` the one pass
    over the 3,000 sentences took. Shared by the notebook and the exercises: do not modify."""
    mean: dict
    cls: dict
    labels: dict
    seconds: float

    def __post_init__(self):
        for name in ("mean", "cls", "labels"):
            check_instance(name, getattr(self, name), dict, "{split: tensor}")
        check_finite_number("seconds", self.seconds, low=0)


@functools.lru_cache(maxsize=2)
def _frozen_features(seed: int, amp: bool) -> FrozenFeatures:
    splits = load_sentiment(seed)
    pretrained = load_pretrained("minilm")
    names = [name for name, _ in splits.items()]
    texts = [r.text for _, reviews in splits.items() for r in reviews]
    start = time.perf_counter()
    mean, cls = sentence_vectors(pretrained.model, pretrained.tokenizer, texts, pooling="both", amp=amp)
    seconds = time.perf_counter() - start
    out = FrozenFeatures({}, {}, {}, seconds)
    offset = 0
    for name in names:
        n = len(splits[name])
        out.mean[name], out.cls[name] = mean[offset:offset + n], cls[offset:offset + n]
        out.labels[name] = torch.tensor([r.label for r in splits[name]])
        offset += n
    return out


def frozen_features(seed: int = 0, amp: bool | None = None) -> FrozenFeatures:
    """Mean-pooled and ``[CLS]``-pooled frozen all-MiniLM-L6-v2 features of every sentence of
    :func:`load_sentiment` (one pass, cached). ``amp``: bf16 autocast (``None``: when the CPU
    has fast bf16, as the Trainer decides)."""
    check_positive_int("seed", seed, allow_zero=True)
    check_bool("amp", amp, allow_none=True)
    return _frozen_features(seed, cpu_has_fast_bf16() if amp is None else bool(amp))


WEIGHT_DECAYS = (1e-4, 1e-3, 1e-2, 1e-1)
"""The weight decays :func:`select_weight_decay` tries for the chapter's logistic regressions."""


def few_shot_accuracies(n: int, seed: int = 0, amp: bool | None = None) -> dict:
    """Test accuracy of the two cheap methods trained on only ``n`` training sentences
    (balanced over sites and labels, :func:`stratified_indices`): ``{"bag of words": acc,
    "probe": acc}``. The bag-of-words vocabulary comes from those ``n`` sentences only; both
    weight decays are chosen on the validation split."""
    check_positive_int("n", n)
    check_positive_int("seed", seed, allow_zero=True)
    check_bool("amp", amp, allow_none=True)
    splits = load_sentiment(seed)
    idx = stratified_indices(splits.train, n, seed)
    train = [splits.train[i] for i in idx]
    y = {name: torch.tensor([r.label for r in reviews]) for name, reviews in splits.items()}
    vocab = build_vocabulary([r.text for r in train])
    X = {name: bag_of_words([r.text for r in reviews], vocab) for name, reviews in
         (("train", train), ("validation", splits.validation), ("test", splits.test))}
    bow, _, _ = select_weight_decay(X["train"], y["train"][idx], X["validation"], y["validation"], WEIGHT_DECAYS)
    F = frozen_features(seed, amp)
    probe, _, _ = select_weight_decay(F.mean["train"][idx], F.labels["train"][idx], F.mean["validation"],
                                      F.labels["validation"], WEIGHT_DECAYS)
    return {"bag of words": bow.accuracy(X["test"], y["test"]),
            "probe": probe.accuracy(F.mean["test"], F.labels["test"])}


PAIR_SIDES = ("premise", "hypothesis")
"""The two texts of a :class:`~bertcourse.sentence_pairs.Pair` that :func:`one_side_baselines` reads alone."""


def one_side_baselines(splits: PairSplits) -> dict:
    """Chapter 10's annotation-artefact test: for each side of the pairs (:data:`PAIR_SIDES`), a
    bag of words (vocabulary from ``splits.train``'s texts of that side) and a logistic regression
    whose weight decay is chosen on ``splits.validation``: ``{side: {"validation": acc, "test": acc,
    "weight_decay": wd, "model": LogisticRegression, "vocab": {word: column}}}``. A side that beats
    the majority class carries the label without the other text.

    Cached (the same splits give the same fits, and the models are shared: do not train them
    further); the global random state is left as it was."""
    check_instance("splits", splits, PairSplits, "the splits of load_snli()")
    fits = _one_side_fits(*(tuple(part) for _, part in splits.items()))
    return {side: dict(result) for side, result in fits.items()}


@functools.lru_cache(maxsize=2)
def _one_side_fits(train: tuple, validation: tuple, test: tuple) -> dict:
    parts = {"train": train, "validation": validation, "test": test}
    y = {name: torch.tensor([p.label for p in part]) for name, part in parts.items()}
    out = {}
    with torch.random.fork_rng(devices=[]):       # nn.Linear draws before its zero init
        for side in PAIR_SIDES:
            texts = {name: [getattr(p, side) for p in part] for name, part in parts.items()}
            vocab = build_vocabulary(texts["train"])
            X = {name: bag_of_words(t, vocab) for name, t in texts.items()}
            model, wd, _ = select_weight_decay(X["train"], y["train"], X["validation"], y["validation"],
                                               WEIGHT_DECAYS, num_classes=3)
            out[side] = {"validation": model.accuracy(X["validation"], y["validation"]),
                         "test": model.accuracy(X["test"], y["test"]), "weight_decay": wd, "model": model,
                         "vocab": vocab}
    return out

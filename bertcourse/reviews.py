"""Chapter 9's data: 3,000 labelled review sentences, their split, and batches of them.

The sentences are the UCI data set *Sentiment Labelled Sentences* (Kotzias, Denil, de Freitas,
Smyth, KDD 2015; CC BY 4.0), shipped inside the package in ``bertcourse/datasets/sentiment``
(with its ``readme.txt`` and an ``ATTRIBUTION.md``) and read with ``importlib.resources``.

* :func:`read_reviews` reads them; :func:`load_sentiment` splits them 2,400 / 300 / 300
  (train / validation / test), stratified by site and label, without a text in two splits
  (:func:`split_reviews`); :func:`stratified_subset` takes a balanced smaller training set.
* :func:`encode_texts` makes ``[CLS] text [SEP]`` with the special tokens looked up by name
  in the tokenizer (:func:`special_ids`); :class:`SentimentDataset`, :func:`collate_reviews`
  and :func:`review_loader` make padded batches ``{"tokens", "mask", "labels"}``.
"""
from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from typing import ClassVar, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from ._checks import (check_choice, check_instance, check_int, check_list_of, check_nonempty,
                      check_positive_int, check_tensor, check_texts)
from .batching import length_loader
from .i18n import gettext as _
from .utils import stable_order_key
from .wordpiece import hf_tokenizer

__all__ = ["SITES", "LABELS", "SPLIT_SIZES", "Review", "read_reviews", "text_key", "Splits", "SentimentSplits",
           "split_reviews", "load_sentiment", "stratified_indices", "stratified_subset", "special_ids",
           "MAX_LEN", "encode_texts", "SentimentDataset", "collate_reviews", "review_loader"]

# ----------------------------------------------------------------------------------------
# 1. Data
# ----------------------------------------------------------------------------------------

SITES = {"amazon": "amazon_cells_labelled.txt", "imdb": "imdb_labelled.txt", "yelp": "yelp_labelled.txt"}
"""The three sources and their files in ``bertcourse/datasets/sentiment``."""

LABELS = ("negative", "positive")
"""Label ``i`` is ``LABELS[i]``: 0 = negative, 1 = positive (the data set's convention)."""

SPLIT_SIZES = {"train": 2400, "validation": 300, "test": 300}


@dataclass(frozen=True)
class Review:
    """One labelled sentence: ``text``, ``label`` (1 = positive, 0 = negative) and the
    ``site`` it comes from (``"amazon"``, ``"imdb"`` or ``"yelp"``)."""
    text: str
    label: int
    site: str

    def __post_init__(self):
        check_instance("text", self.text, str)
        check_int("label", self.label, low=0, high=len(LABELS) - 1)
        check_instance("site", self.site, str)


def _data_folder():
    return importlib.resources.files("bertcourse").joinpath("datasets", "sentiment")


def read_reviews() -> list[Review]:
    """All 3,000 sentences in file order (Amazon, IMDb, Yelp), read from the package data.

    Each line is ``sentence<TAB>label``; the IMDb lines end with two spaces, which are
    stripped. Raises ``FileNotFoundError`` if the data files are missing (a broken install)
    and ``ValueError`` naming the file and line of a malformed line."""
    folder = _data_folder()
    reviews = []
    for site, name in SITES.items():
        path = folder.joinpath(name)
        if not path.is_file():
            raise FileNotFoundError(f"the sentiment data file {name} is missing from the bertcourse package "
                                    f"(reinstall it: pip install --force-reinstall bertcourse)")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            text, sep, label = line.rpartition("\t")
            if not sep or label.strip() not in ("0", "1") or not text.strip():
                raise ValueError(f"{name} line {number}: expected 'sentence<TAB>0 or 1', got {line[:60]!r}")
            reviews.append(Review(text.strip(), int(label), site))
    return reviews


def text_key(text: str) -> str:
    """What counts as "the same text": lower-cased, runs of white space made one space.
    (The models of this chapter lower-case their input, so ``Great Phone.`` and
    ``great phone.`` are one input for them.)"""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return " ".join(text.lower().split())


@dataclass
class Splits:
    """A labelled data set's three splits (lists of records) and the seed that made them;
    ``splits["test"]`` and ``splits.items()`` read them. A data set's own splits name the
    record class (``ITEM``) and where such records come from (``ITEM_HINT``)."""
    train: list
    validation: list
    test: list
    seed: int = 0
    ITEM: ClassVar[type] = object
    ITEM_HINT: ClassVar[str] = "records"

    def __post_init__(self):
        for name in ("train", "validation", "test"):
            check_list_of(name, getattr(self, name), self.ITEM, self.ITEM_HINT, allow_empty=True)
        check_positive_int("seed", self.seed, allow_zero=True)

    def __getitem__(self, name: str) -> list:
        check_choice("split", name, ("train", "validation", "test"))
        return getattr(self, name)

    def items(self):
        return [("train", self.train), ("validation", self.validation), ("test", self.test)]


@dataclass
class SentimentSplits(Splits):
    """The three splits (lists of :class:`Review`) and the seed that made them."""
    ITEM: ClassVar[type] = Review
    ITEM_HINT: ClassVar[str] = "Review (see split_reviews())"

    def counts(self):
        """A table: how many sentences of each site and label are in each split (its labels in the
        language of :func:`bertcourse.i18n.set_language`)."""
        import pandas as pd          # lazy: a heavy import (CONTRIBUTING.md, "Imports")
        rows = []
        for name, reviews in self.items():
            row = {_("split"): name}
            for site in SITES:
                for label in (0, 1):
                    row[f"{site} {LABELS[label][:3]}"] = sum(r.site == site and r.label == label for r in reviews)
            row[_("total")] = len(reviews)
            rows.append(row)
        return pd.DataFrame(rows).set_index(_("split"))


def split_reviews(reviews: Sequence[Review], seed: int = 0, held_out: int = 50) -> SentimentSplits:
    """Split ``reviews`` into train / validation / test, stratified by site and label.

    From every (site, label) group, ``held_out`` sentences go to validation and another
    ``held_out`` to test; the rest is training data. Texts that occur more than once (by
    :func:`text_key`) always go to training, so no text is in two splits and validation
    and test hold only distinct sentences. The choice depends only on ``seed`` and the
    texts (an order by a hash of both), never on a random generator's state. With the
    3,000 sentences and ``held_out=50``: 2,400 / 300 / 300.
    """
    check_positive_int("held_out", held_out)
    check_positive_int("seed", seed, allow_zero=True)
    check_list_of("reviews", reviews, Review, "Review (see read_reviews())")
    counts: dict[str, int] = {}
    for r in reviews:
        counts[text_key(r.text)] = counts.get(text_key(r.text), 0) + 1
    assigned = ["train"] * len(reviews)
    for site in sorted({r.site for r in reviews}):
        for label in (0, 1):
            single = [i for i, r in enumerate(reviews)
                      if r.site == site and r.label == label and counts[text_key(r.text)] == 1]
            if not single:
                continue
            if len(single) < 2 * held_out:
                raise ValueError(f"site {site!r}, label {label} has {len(single)} distinct sentences; "
                                 f"held_out={held_out} needs at least {2 * held_out}")
            single.sort(key=lambda i: stable_order_key(seed, text_key(reviews[i].text)))
            for i in single[:held_out]:
                assigned[i] = "validation"
            for i in single[held_out:2 * held_out]:
                assigned[i] = "test"
    parts = {name: [r for r, a in zip(reviews, assigned) if a == name] for name in ("train", "validation", "test")}
    return SentimentSplits(parts["train"], parts["validation"], parts["test"], seed)


@functools.lru_cache(maxsize=4)
def _cached_splits(seed: int) -> SentimentSplits:
    return split_reviews(read_reviews(), seed=seed)


def load_sentiment(seed: int = 0) -> SentimentSplits:
    """The course's fixed split of the 3,000 sentences: 2,400 / 300 / 300 (train /
    validation / test), 400 / 50 / 50 of every site and label, no text in two splits
    (see :func:`split_reviews`). The lists are fresh copies; the split is cached."""
    check_positive_int("seed", seed, allow_zero=True)
    s = _cached_splits(seed)
    return SentimentSplits(list(s.train), list(s.validation), list(s.test), seed)


def stratified_indices(reviews: Sequence[Review], n: int, seed: int = 0) -> list[int]:
    """Indices of ``n`` of ``reviews``, as evenly as possible over the (site, label) groups
    (round robin), each group in the hash order of :func:`split_reviews`; so the first 100
    are part of the first 300. Sorted."""
    check_positive_int("seed", seed, allow_zero=True)
    check_positive_int("n", n)
    check_list_of("reviews", reviews, Review, "Review (see load_sentiment())")
    if n > len(reviews):
        raise ValueError(f"n must be at most len(reviews)={len(reviews)}, got {n}")
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(reviews):
        groups.setdefault((r.site, r.label), []).append(i)
    for idx in groups.values():
        idx.sort(key=lambda i: stable_order_key(seed, f"{text_key(reviews[i].text)}\x00{i}"))
    chosen, k = [], 0
    while len(chosen) < n:
        for g in sorted(groups):
            if k < len(groups[g]) and len(chosen) < n:
                chosen.append(groups[g][k])
        k += 1
    return sorted(chosen)


def stratified_subset(reviews: Sequence[Review], n: int, seed: int = 0) -> list[Review]:
    """``n`` of ``reviews``, balanced over sites and labels (see :func:`stratified_indices`)."""
    check_positive_int("seed", seed, allow_zero=True)
    return [reviews[i] for i in stratified_indices(reviews, n, seed)]


# ----------------------------------------------------------------------------------------
# 2. Tokens and batches
# ----------------------------------------------------------------------------------------

def special_ids(tokenizer) -> dict[str, int]:
    """The ids of ``[PAD] [UNK] [CLS] [SEP] [MASK]`` in *this* tokenizer's vocabulary,
    looked up by name. (Pitfall: ids hard-coded from another vocabulary, such as
    ``[0, 101, 102, 103]`` of bert-base-uncased, are ordinary words elsewhere.)"""
    tok = hf_tokenizer(tokenizer)
    ids = {name: tok.token_to_id(name) for name in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    missing = [name for name in ("[PAD]", "[CLS]", "[SEP]") if ids[name] is None]
    if missing:
        raise ValueError(f"the tokenizer's vocabulary has no {', '.join(missing)} token; a BERT input needs "
                         f"[CLS], [SEP] and [PAD]")
    return ids


MAX_LEN = 64
"""Word pieces per sentence, ``[CLS]`` and ``[SEP]`` included. The longest review has 100;
only 4 of the 2,400 training sentences have more than 64 and lose their end. (Training
memory grows with the longest sentence of a batch.)"""


def encode_texts(tokenizer, texts: Sequence[str], max_len: int = MAX_LEN) -> tuple[list, list]:
    """``[CLS] text [SEP]`` for every text: ``(ids, pieces)``, two lists of lists.

    The special tokens are looked up by name (:func:`special_ids`) and added here, so the
    result is the same whether or not the tokenizer adds them itself. A text longer than
    ``max_len`` pieces (specials included) is truncated at the end."""
    check_texts("texts", texts, allow_blank=True)       # an empty text is [CLS] [SEP]
    check_positive_int("max_len", max_len)
    if max_len < 3:
        raise ValueError(f"max_len must be >= 3 ([CLS], one piece, [SEP]), got {max_len}")
    tok = hf_tokenizer(tokenizer)
    sp = special_ids(tokenizer)
    ids, pieces = [], []
    for e in tok.encode_batch(list(texts), add_special_tokens=False):
        body_ids, body_pieces = list(e.ids)[:max_len - 2], list(e.tokens)[:max_len - 2]
        ids.append([sp["[CLS]"], *body_ids, sp["[SEP]"]])
        pieces.append(["[CLS]", *body_pieces, "[SEP]"])
    return ids, pieces


class SentimentDataset(Dataset):
    """Reviews as token ids: ``dataset[i] = (ids, label)``, ``ids`` a 1-D long tensor
    ``[CLS] ... [SEP]`` without padding. ``lengths`` (for length-bucketed batches),
    ``labels`` and ``pad_id`` are attributes."""

    def __init__(self, reviews: Sequence[Review], tokenizer, max_len: int = MAX_LEN):
        check_list_of("reviews", reviews, Review, "Review (see load_sentiment())")
        self.reviews = list(reviews)
        ids = encode_texts(tokenizer, [r.text for r in self.reviews], max_len)[0]
        self.ids = [torch.tensor(x, dtype=torch.long) for x in ids]
        self.labels = torch.tensor([r.label for r in self.reviews], dtype=torch.long)
        self.lengths = torch.tensor([len(x) for x in ids])
        self.pad_id = special_ids(tokenizer)["[PAD]"]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return self.ids[i], self.labels[i]


def collate_reviews(examples, pad_id: int = 0, pad_to_multiple: int = 1) -> dict:
    """Pad a list of ``(ids, label)`` to the longest: ``{"tokens": (batch, seq) long,
    "mask": (batch, seq) bool (True on real tokens), "labels": (batch,) long}``.

    ``pad_to_multiple``: round ``seq`` up to a multiple of it: fewer distinct shapes, for
    callers that encode many batches and would rather not have the allocator and the math
    libraries keep buffers for each (the frozen features of :mod:`~bertcourse.finetuning_baselines` use 16).
    The padding is masked, so a forward's results are the same up to rounding; but a padded
    token still costs its share of every product, and dropout draws its masks over the padded
    shape, so in training the multiple changes which units drop."""
    check_positive_int("pad_id", pad_id, allow_zero=True)
    check_positive_int("pad_to_multiple", pad_to_multiple)
    _check_examples(examples)
    n = max(len(ids) for ids, _label in examples)
    n = -(-n // pad_to_multiple) * pad_to_multiple
    tokens = torch.full((len(examples), n), pad_id, dtype=torch.long)
    mask = torch.zeros(len(examples), n, dtype=torch.bool)
    for r, (ids, _label) in enumerate(examples):
        tokens[r, :len(ids)] = ids
        mask[r, :len(ids)] = True
    labels = torch.stack([torch.as_tensor(y, dtype=torch.long) for _ids, y in examples])
    return {"tokens": tokens, "mask": mask, "labels": labels}


def _check_examples(examples) -> None:
    """``examples`` must be a non-empty list of ``(ids, label)``: ``ids`` a non-empty 1-D integer
    tensor, ``label`` an int >= 0 or a 0-d integer tensor (a float would be truncated silently)."""
    check_list_of("examples", examples, (tuple, list), "(ids, label) pairs (see SentimentDataset)")
    for i, example in enumerate(examples):
        if len(example) != 2:
            raise ValueError(f"examples[{i}] must be a pair (ids, label), got {len(example)} items")
        ids, label = example
        check_tensor(f"examples[{i}] ids", ids, ndim=1, expected="(seq,) of token ids", floating=False)
        check_nonempty(f"examples[{i}] ids", ids, "(seq,)")
        if isinstance(label, torch.Tensor):
            check_tensor(f"examples[{i}] label", label, ndim=0, expected="() (one class label)", floating=False)
        else:
            check_int(f"examples[{i}] label", label, low=0)


def review_loader(reviews, tokenizer, batch_size: int = 32, shuffle: bool = False, seed: int = 0,
                  max_len: int = MAX_LEN, pad_to_multiple: int = 1, by_length: bool = False) -> DataLoader:
    """A DataLoader of padded batches (see :func:`collate_reviews`).

    ``shuffle=True`` (training): every epoch visits each sentence once, in batches of
    sentences of similar length (:class:`~bertcourse.batching.LengthBucketSampler`, seeded by
    ``seed``), so that little time goes into padding. ``shuffle=False`` (evaluation): the
    order of ``reviews``; with ``by_length=True``, shortest first (equal lengths in the given
    order): an accuracy or a mean loss does not depend on the order, and batches of similar
    lengths pad little (chapter 9's validation split in batches of 16: 5,840 tokens instead
    of 11,796). ``reviews`` may also be a :class:`SentimentDataset`. Batches are padded to a
    multiple of ``pad_to_multiple`` tokens (see :func:`collate_reviews`); the default, 1, pads each
    batch to its longest sentence: chapter 9's epoch then holds 44,816 tokens for 40,753 real ones,
    against 61,696 with a multiple of 16, and the chapter runs about a fifth faster
    (``benchmarks/README.md``)."""
    check_positive_int("pad_to_multiple", pad_to_multiple)
    dataset = reviews if isinstance(reviews, SentimentDataset) else SentimentDataset(reviews, tokenizer, max_len)
    collate = functools.partial(collate_reviews, pad_id=dataset.pad_id, pad_to_multiple=pad_to_multiple)
    return length_loader(dataset, collate, batch_size, shuffle=shuffle, seed=seed, by_length=by_length)

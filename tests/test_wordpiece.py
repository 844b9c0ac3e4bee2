"""Tests for WordPiece by hand in bertcourse.wordpiece: the plain-Python encoder
(``bert_pre_tokenize``, ``wordpiece_encode_word``, ``wordpiece_tokenize``), the trainer by the
likelihood score (``train_wordpiece_by_hand``) and ``compare_vocabularies``.

The oracle is Hugging Face ``tokenizers``: with the same vocabulary, the hand-written encoder
gives its tokens one for one on every sentence of the course corpus (the course's tokenizer)
and on the 3,000 review sentences (MiniLM's vocabulary of 30,522 tokens).
"""
from __future__ import annotations

from collections import Counter

import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from bertcourse.corpus import generate_corpus
from bertcourse.pretrained_bert import minilm_folder
from bertcourse.reviews import load_sentiment
from bertcourse.wordpiece import (SPECIAL_TOKENS, Vocab, bert_pre_tokenize, compare_vocabularies, get_tokenizer,
                                  train_wordpiece_by_hand, wordpiece_encode_word, wordpiece_tokenize)


def hf_wordpiece(tokens) -> Tokenizer:
    """A ``tokenizers`` WordPiece tokenizer over ``tokens``, set up like the course's."""
    tok = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(tokens)}, unk_token="[UNK]",
                                     continuing_subword_prefix="##"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def hf_tokens(tok: Tokenizer, texts: list) -> list:
    return [e.tokens for e in tok.encode_batch(list(texts), add_special_tokens=False)]


def first_difference(texts, ours, theirs) -> str:
    i = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    return f"sentence {i} {texts[i]!r}: by hand {ours[i]}, tokenizers {theirs[i]}"


@pytest.fixture(scope="module")
def minilm():
    """MiniLM's tokenizer (truncation and padding off) and its vocabulary as a set."""
    folder = minilm_folder()
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok, set((folder / "vocab.txt").read_text(encoding="utf-8").splitlines())


# ----------------------------------------------------------------------------------------
# The encoder against tokenizers
# ----------------------------------------------------------------------------------------

def test_encoder_equals_tokenizers_on_every_sentence_of_the_course_corpus():
    corpus, tok = generate_corpus(0), get_tokenizer(0)
    texts = corpus.sentences("train") + corpus.sentences("held_out")
    ours = [wordpiece_tokenize(t, tok.vocab) for t in texts]
    theirs = tok.tokenize_batch(texts)
    assert ours == theirs, first_difference(texts, ours, theirs)
    assert len(texts) > 35_000 and sum(map(len, theirs)) > 250_000


def test_encoder_equals_tokenizers_with_minilms_vocabulary_on_the_3000_reviews(minilm):
    tok, vocab = minilm
    splits = load_sentiment()
    texts = [r.text for r in splits.train + splits.validation + splits.test]
    ours = [wordpiece_tokenize(t, vocab) for t in texts]
    theirs = hf_tokens(tok, texts)
    assert ours == theirs, first_difference(texts, ours, theirs)
    assert len(texts) == 3000
    # the reviews exercise the normaliser: capitals, accents, a control character (U+0097)
    assert any(c.isupper() for t in texts for c in t) and any("é" in t for t in texts)
    assert any("\x97" in t for t in texts)


HARD_TEXTS = [
    "Héllo, WÖRLD!", "naïve café Ångström", "a\u0301\u0302b", "ΟΔΟΣ Σίσυφος", "İstanbul ǅemal", "ß ẞ ﬀ ﬁ ½ ²",
    "中文字符test 日本語 한국어", "\U0002B820 \U0002B920 \uF900 \u3400", "ﾊﾟ Ⅻ ⑤ ＡＢＣ",
    "tab\tnew\nline\rcr", "\x00nul\ufffdrep", "zero\u200bwidth\u200dj", "\u00ad soft\u00adhyphen",
    "non\xa0breaking\u3000ideo\u2028ls\u2029ps", "\x1c\x1d\x1e\x1f sep", "\x85next\x0bvt\x0cff", "\ue000 private",
    "$5 + 3^2 = 14 ~ `x` | <a> {b} [c] @d #e %f &g *h _i", "«quotes» — dash – “smart” ‘single’ … ¿qué?",
    "don't can't", "e.g. U.S.A.", "emoji 😀 ok 👍🏽", "x" * 101, "y" * 100, "", "   ",
]


@pytest.mark.parametrize("text", HARD_TEXTS, ids=[ascii(t)[:24] for t in HARD_TEXTS])
def test_normaliser_and_pre_tokeniser_equal_tokenizers_on_hard_text(minilm, text):
    tok, vocab = minilm
    words = [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text))]
    assert bert_pre_tokenize(text) == words
    assert wordpiece_tokenize(text, vocab) == hf_tokens(tok, [text])[0]


# ----------------------------------------------------------------------------------------
# The encoder by hand: small vocabularies
# ----------------------------------------------------------------------------------------

def small(*tokens) -> list:
    return list(SPECIAL_TOKENS) + list(tokens)


def both(text: str, tokens: list, **kwargs) -> list:
    """Our tokens for ``text``, checked equal to tokenizers' with the same vocabulary."""
    ours = wordpiece_tokenize(text, set(tokens), **kwargs)
    assert ours == hf_tokens(hf_wordpiece(tokens), [text])[0]
    return ours


def test_the_longest_piece_first_not_the_shortest():
    tokens = small("u", "un", "##n", "##a", "##f", "##b", "##l", "##e", "##aff", "##able")
    assert both("unaffable", tokens) == ["un", "##aff", "##able"]
    # the shortest match first would have spelt the word out letter by letter
    assert both("unable", tokens) == ["un", "##able"]
    assert both("ufable", tokens) == ["u", "##f", "##able"]


def test_pieces_inside_a_word_need_the_prefix():
    assert both("playing", small("play", "##ing")) == ["play", "##ing"]
    assert both("ing", small("play", "##ing")) == ["[UNK]"]          # ##ing cannot start a word
    assert both("playing", small("play", "ing")) == ["[UNK]"]        # nor can ing continue one
    assert wordpiece_encode_word("playing", {"play", "@@ing"}, prefix="@@", unk="<unk>") == ["play", "@@ing"]
    assert wordpiece_encode_word("plays", {"play", "@@ing"}, prefix="@@", unk="<unk>") == ["<unk>"]


def test_a_word_that_cannot_be_split_is_exactly_one_unk():
    tokens = small("a", "ab", "##bc", "the", "cat")
    # greedy, no backtracking: "ab" is taken, then "##c" is missing; a + ##bc is never tried
    assert both("abc", tokens) == ["[UNK]"]
    assert both("the abd cat", tokens) == ["the", "[UNK]", "cat"]    # not ["ab", "[UNK]"]
    assert both("the café cat", small("the", "cat", "caf")) == ["the", "[UNK]", "cat"]   # é -> e, no ##e
    assert wordpiece_tokenize("the cat", Vocab(small("the", "cat"))) == ["the", "cat"]     # a course Vocab


def test_a_word_over_max_chars_is_unk():
    tokens = small("a", "##a")
    assert both("a" * 100, tokens) == ["a"] + ["##a"] * 99
    assert both("a" * 101, tokens) == ["[UNK]"]
    assert wordpiece_encode_word("aaaa", set(tokens), max_chars=3) == ["[UNK]"]
    assert wordpiece_encode_word("aaa", set(tokens), max_chars=3) == ["a", "##a", "##a"]


def test_no_text_gives_no_tokens():
    assert both("", small("a")) == []
    assert both(" \t\n ", small("a")) == []
    assert wordpiece_encode_word("", {"a"}) == []
    assert bert_pre_tokenize("\x00 \u200b") == []


@pytest.mark.parametrize("call, error, name", [
    (lambda: wordpiece_tokenize(5, {"a"}), TypeError, "text"),
    (lambda: wordpiece_tokenize(["a b"], {"a"}), TypeError, "text"),
    (lambda: wordpiece_tokenize("a", 5), TypeError, "vocab"),
    (lambda: wordpiece_tokenize("a", "abc"), TypeError, "vocab"),
    (lambda: wordpiece_tokenize("a", None), TypeError, "vocab"),
    (lambda: wordpiece_tokenize("a", {"a"}, prefix=""), ValueError, "prefix"),
    (lambda: wordpiece_tokenize("a", {"a"}, prefix=None), TypeError, "prefix"),
    (lambda: wordpiece_tokenize("a", {"a"}, unk=""), ValueError, "unk"),
    (lambda: wordpiece_tokenize("a", {"a"}, max_chars=0), ValueError, "max_chars"),
    (lambda: wordpiece_tokenize("a", {"a"}, max_chars=2.5), TypeError, "max_chars"),
    (lambda: wordpiece_encode_word(None, {"a"}), TypeError, "word"),
    (lambda: bert_pre_tokenize(b"bytes"), TypeError, "text"),
])
def test_the_encoder_names_a_wrong_input(call, error, name):
    with pytest.raises(error, match=name):
        call()


# ----------------------------------------------------------------------------------------
# The trainer
# ----------------------------------------------------------------------------------------

def merges_by_recounting(sentences, vocab_size) -> list:
    """The trainer as the Hugging Face course writes it: every pair recounted at every merge."""
    counts = Counter(w for s in sentences for w in bert_pre_tokenize(s))
    splits = {w: [w[0]] + ["##" + c for c in w[1:]] for w in counts}
    tokens = small(*sorted({t for s in splits.values() for t in s}))
    while len(tokens) < vocab_size:
        token_freq, pair_freq = Counter(), Counter()
        for w, f in counts.items():
            for t in splits[w]:
                token_freq[t] += f
            for pair in zip(splits[w], splits[w][1:]):
                pair_freq[pair] += f
        if not pair_freq:
            break
        a, b = min(pair_freq, key=lambda p: (-pair_freq[p] / (token_freq[p[0]] * token_freq[p[1]]), -pair_freq[p], p))
        for w, s in splits.items():
            i, out = 0, []
            while i < len(s):
                merge = i + 1 < len(s) and (s[i], s[i + 1]) == (a, b)
                out.append(a + b[2:] if merge else s[i])
                i += 2 if merge else 1
            splits[w] = out
        if a + b[2:] not in tokens:
            tokens.append(a + b[2:])
    return tokens


def test_the_trainer_merges_by_score_on_the_hugging_face_course_example():
    sentences = ["hug"] * 10 + ["pug"] * 5 + ["pun"] * 12 + ["bun"] * 4 + ["hugs"] * 5
    tokens = train_wordpiece_by_hand(sentences, vocab_size=16).tokens
    assert tokens[:5] == list(SPECIAL_TOKENS)
    assert tokens[5:12] == ["##g", "##n", "##s", "##u", "b", "h", "p"]
    # 1. ##g ##s: 5 / (20 × 5) = 1/20, every other pair 1/36 (the course's first merge too)
    # 2. all pairs tie at 1/36; p ##u is the most frequent (17): pu (the course's dict order gives hu)
    # 3. h ##u, b ##u, ##u ##gs tie at 1/19; h ##u is the most frequent (15): hu
    # 4. b ##u: 4 / (4 × 4) = 1/4
    assert tokens[12:] == ["##gs", "pu", "hu", "bu"]
    assert train_wordpiece_by_hand(sentences, vocab_size=100).tokens[16:] == ["hugs", "hug", "bun", "pun", "pug"]


def test_the_trainer_equals_recounting_every_pair_at_every_merge():
    sentences = generate_corpus(0).sentences("train")[:3000]
    assert train_wordpiece_by_hand(sentences, vocab_size=400).tokens == merges_by_recounting(sentences, 400)


def test_the_trainer_on_the_course_corpus_gives_a_vocabulary_the_encoder_uses():
    corpus = generate_corpus(0)
    vocab = train_wordpiece_by_hand(corpus.sentences("train"), vocab_size=3000)
    assert isinstance(vocab, Vocab) and len(vocab) == 3000 and vocab.tokens[:5] == list(SPECIAL_TOKENS)
    held_out = corpus.sentences("held_out")
    ours = [wordpiece_tokenize(t, vocab) for t in held_out]
    theirs = hf_tokens(hf_wordpiece(vocab.tokens), held_out)
    assert ours == theirs, first_difference(held_out, ours, theirs)
    assert not any("[UNK]" in p for p in ours)      # every character of the corpus is in the alphabet


def test_compare_vocabularies_reports_both_vocabularies():
    sentences = generate_corpus(0).sentences("train")
    report = compare_vocabularies(sentences[:2000], sentences[-200:], vocab_size=300)
    words = sum(len(bert_pre_tokenize(s)) for s in sentences[-200:])
    assert report["test_words"] == words
    assert 0 < report["shared_tokens"] <= 300
    for name in ("by_hand", "tokenizers"):
        row = report[name]
        assert row["size"] <= 300 and row["pieces_per_word"] >= 1 and row["seconds"] > 0
        assert row["unknown_words"] == 0


@pytest.mark.parametrize("call, error, name", [
    (lambda: train_wordpiece_by_hand("the cat sat", 100), TypeError, "sentences"),
    (lambda: train_wordpiece_by_hand([], 100), ValueError, "sentences"),
    (lambda: train_wordpiece_by_hand(["the cat", 3], 100), TypeError, "sentences"),
    (lambda: train_wordpiece_by_hand(["the cat"], 0), ValueError, "vocab_size"),
    (lambda: train_wordpiece_by_hand(["the cat"], 8), ValueError, "vocab_size"),    # 5 + 6 characters
    (lambda: train_wordpiece_by_hand(["the cat"], 10.0), TypeError, "vocab_size"),
    (lambda: compare_vocabularies(["the cat"], "the cat", 50), TypeError, "test_sentences"),
    (lambda: compare_vocabularies(None, ["the cat"], 50), TypeError, "train_sentences"),
])
def test_the_trainer_names_a_wrong_input(call, error, name):
    with pytest.raises(error, match=name):
        call()

"""Chapter 4: WordPiece sub-words for the course's corpus.

:func:`train_wordpiece` trains a WordPiece vocabulary with Hugging Face ``tokenizers``;
:class:`WordPieceTokenizer` turns text into tokens and ids and back; :class:`Vocab` maps
tokens to ids. Ids 0–4 are always ``[PAD] [UNK] [CLS] [SEP] [MASK]``. :func:`get_tokenizer`
is the course's tokenizer, trained on the training split of ``generate_corpus(seed)``.
(These are re-exported by :mod:`bertcourse.data`.)

The same algorithm by hand, in plain Python: :func:`bert_pre_tokenize` (BERT's normaliser and
pre-tokeniser), :func:`wordpiece_encode_word` (the encoder's inner loop: the longest piece
first), :func:`wordpiece_tokenize` (text -> pieces, token for token what ``tokenizers`` gives),
:func:`train_wordpiece_by_hand` (merges by the likelihood score) and
:func:`compare_vocabularies` (the hand-made vocabulary against the one of ``tokenizers``).
"""
from __future__ import annotations

import heapq
import os
import string
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Container
from typing import Sequence

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from ._checks import check_bool, check_instance, check_path, check_positive_int, check_str_list, shape_str
from .corpus import generate_corpus
from .utils import cached

__all__ = ["SPECIAL_TOKENS", "DEFAULT_VOCAB_SIZE", "Vocab", "WordPieceTokenizer", "hf_tokenizer", "train_wordpiece",
           "get_tokenizer", "bert_pre_tokenize", "wordpiece_encode_word", "wordpiece_tokenize",
           "train_wordpiece_by_hand", "compare_vocabularies"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""The special tokens, with ids 0, 1, 2, 3, 4 in every vocabulary of the course."""


DEFAULT_VOCAB_SIZE = 3000


class Vocab:
    """Token <-> id. ``tokens[i]`` is the token with id ``i``; the first five are
    :data:`SPECIAL_TOKENS`.

    ``vocab["capital"]`` -> id (unknown tokens -> ``unk_id``; a list gives a list),
    ``vocab.to_tokens(ids)`` -> tokens, ``vocab.to_ids(tokens)`` -> ids.
    """

    def __init__(self, tokens: Sequence[str]):
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise TypeError(f"tokens must be a list of token strings, got {type(tokens).__name__}")
        tokens = list(tokens)
        if not all(isinstance(t, str) for t in tokens):
            bad = next(t for t in tokens if not isinstance(t, str))
            raise TypeError(f"tokens must all be strings, got {type(bad).__name__} ({bad!r})")
        if tuple(tokens[:len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(f"tokens must start with the special tokens {list(SPECIAL_TOKENS)} "
                             f"(ids 0..4), got {tokens[:len(SPECIAL_TOKENS)]}")
        if len(set(tokens)) != len(tokens):
            dup = next(t for i, t in enumerate(tokens) if t in tokens[:i])
            raise ValueError(f"tokens must be unique, {dup!r} occurs more than once")
        self.tokens = tokens
        self._ids = {t: i for i, t in enumerate(tokens)}
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(len(SPECIAL_TOKENS))
        self.special_ids = tuple(range(len(SPECIAL_TOKENS)))
        self.num_special = len(SPECIAL_TOKENS)

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token) -> bool:
        return token in self._ids

    def __getitem__(self, token):
        if isinstance(token, (list, tuple)):
            return [self._ids.get(t, self.unk_id) for t in token]
        if not isinstance(token, str):
            raise TypeError(f"vocab[...] takes a token string or a list of them, "
                            f"got {type(token).__name__} (use vocab.to_tokens for ids)")
        return self._ids.get(token, self.unk_id)

    def to_ids(self, tokens: Sequence[str]) -> list:
        """Tokens -> ids (unknown tokens -> ``unk_id``)."""
        if isinstance(tokens, str):
            raise TypeError("tokens must be a list of token strings, got a str "
                            "(tokenize the text first)")
        return self[list(tokens)]

    def to_tokens(self, ids):
        """An id (int) -> its token; a list / 1-D tensor of ids -> a list of tokens."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() > 1:
                raise ValueError(f"ids must be an int, a list or a 1-D tensor, got shape {shape_str(ids)}")
            ids = ids.tolist()
        if isinstance(ids, bool):
            raise TypeError("ids must be ints, got bool")
        if isinstance(ids, int):
            self._check_id(ids)
            return self.tokens[ids]
        if not isinstance(ids, (list, tuple, range)):
            raise TypeError(f"ids must be an int, a list of ints or a 1-D integer tensor, "
                            f"got {type(ids).__name__} ({ids!r})")
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"ids must be ints, got {type(i).__name__} ({i!r})")
            self._check_id(i)
            out.append(self.tokens[i])
        return out

    def _check_id(self, i: int) -> None:
        if not 0 <= i < len(self.tokens):
            raise ValueError(f"id {i} is out of range for a vocabulary of {len(self.tokens)} tokens "
                             f"(ids 0..{len(self.tokens) - 1})")

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {self.tokens[:8]} ...)"


class WordPieceTokenizer:
    """A trained WordPiece tokenizer (a Hugging Face ``tokenizers.Tokenizer`` inside).

    The text is normalised like BERT's (lower-case, accents stripped), split on white space
    and punctuation, then each word becomes the longest vocabulary pieces from the left;
    a piece inside a word starts with ``##`` (``gristfouka`` -> ``gr ##ist ##f ##ouka``).
    ``encode`` does *not* add ``[CLS]``/``[SEP]``: pairs are built by
    :func:`bertcourse.bert.get_tokens_and_segments`.
    """

    def __init__(self, tokenizer):
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
        vocab = tokenizer.get_vocab()
        tokens = sorted(vocab, key=vocab.get)
        if [vocab[t] for t in tokens] != list(range(len(tokens))):
            raise ValueError("tokenizer's vocabulary ids must be 0..size-1 without gaps")
        self.tokenizer = tokenizer
        self.vocab = Vocab(tokens)     # checks the special tokens are ids 0..4

    def __len__(self) -> int:
        return len(self.vocab)

    @staticmethod
    def _check_text(text, name: str = "text") -> None:
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")

    def tokenize(self, text: str) -> list:
        """Text -> WordPiece tokens, e.g. ``['the', 'capital', 'of', 'wehothary', ...]``."""
        self._check_text(text)
        return self.tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str) -> list:
        """Text -> token ids (no ``[CLS]``/``[SEP]`` added)."""
        self._check_text(text)
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list:
        """Many texts -> a list of id lists (much faster than ``encode`` in a loop)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, got a str (use encode)")
        for i, t in enumerate(texts):
            self._check_text(t, f"texts[{i}]")
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def tokenize_batch(self, texts: Sequence[str]) -> list:
        """Many texts -> a list of token lists."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, got a str (use tokenize)")
        for i, t in enumerate(texts):
            self._check_text(t, f"texts[{i}]")
        return [e.tokens for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Ids -> text: ``##`` pieces are glued to the piece before, and the space before
        ``.`` and ``,`` is removed, so ``decode(encode(s)) == s`` for corpus sentences."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"ids must be a list or a 1-D tensor, got shape {shape_str(ids)}")
            ids = ids.tolist()
        if isinstance(ids, str):
            raise TypeError(f"ids must be a list of ints or a 1-D integer tensor, got a str ({ids[:40]!r}); "
                            f"to turn text into ids use encode")
        self.vocab.to_tokens(list(ids))            # type and range check with a clear message
        check_bool("skip_special_tokens", skip_special_tokens)
        return self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def save(self, path) -> None:
        """Write ``tokenizer.json`` (the Hugging Face format) to ``path``."""
        self.tokenizer.save(os.fspath(path))

    @classmethod
    def load(cls, path) -> "WordPieceTokenizer":
        """Read a tokenizer saved with :meth:`save`."""
        check_path("path", path)
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no tokenizer file at {path!r} (save one with tokenizer.save(path))")
        try:
            tokenizer = Tokenizer.from_file(path)
        except Exception as e:   # tokenizers raises a bare Exception for a damaged file
            raise ValueError(f"the tokenizer file {path!r} could not be read ({e}); is it a "
                             f"tokenizer.json written by tokenizer.save(path)?") from None
        return cls(tokenizer)

    def __repr__(self) -> str:
        return f"WordPieceTokenizer(vocab_size={len(self)})"


def hf_tokenizer(tokenizer):
    """The Hugging Face ``tokenizers.Tokenizer`` behind ``tokenizer``: chapter 7's
    :class:`WordPieceTokenizer` wraps one; chapter 8's ``pretrained.tokenizer`` is one."""
    if isinstance(tokenizer, WordPieceTokenizer):
        return tokenizer.tokenizer
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    raise TypeError(f"tokenizer must be a WordPieceTokenizer (bertcourse.data) or a tokenizers.Tokenizer, "
                    f"got {type(tokenizer).__name__}")


def train_wordpiece(sentences: Sequence[str], vocab_size: int = DEFAULT_VOCAB_SIZE,
                    min_frequency: int = 2) -> WordPieceTokenizer:
    """Train a WordPiece vocabulary of (at most) ``vocab_size`` tokens on ``sentences``.

    BERT's normaliser (lower-case, strip accents) and pre-tokeniser (split on white space
    and punctuation), the WordPiece model with ``##`` for pieces inside a word, and the
    special tokens at ids 0–4. Training starts from single characters and keeps merging
    the most useful pair, so frequent words end up whole and rare words stay in pieces.
    A pair must occur ``min_frequency`` times to be merged.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise TypeError(f"sentences must be a list of strings, got {type(sentences).__name__}")
    if len(sentences) == 0:
        raise ValueError("sentences must not be empty")
    if not all(isinstance(s, str) for s in sentences):
        raise TypeError("sentences must all be strings")
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("min_frequency", min_frequency)
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be > {len(SPECIAL_TOKENS)} (the special tokens), got {vocab_size}")
    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # Hugging Face's trainer numbers the "##x" pieces in the order it meets them in a hash
    # map, which changes from one Python process to the next, and ties between equally
    # frequent merges are broken by those numbers: the vocabulary would differ from run to
    # run. Handing it every "##x" up front (sorted) fixes the numbering and so the result.
    chars = sorted({c for s in sentences for c in normalizer.normalize_str(s) if not c.isspace()})
    pieces = ["##" + c for c in chars]
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=list(SPECIAL_TOKENS) + pieces,
                                        continuing_subword_prefix="##", show_progress=False)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer
    tok.train_from_iterator(list(sentences), trainer=trainer)
    # Rebuild from the learned vocabulary, so that only the five real special tokens are
    # "special" (the "##x" pieces are ordinary sub-words).
    vocab = tok.get_vocab(with_added_tokens=False)
    final = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##"))
    final.normalizer, final.pre_tokenizer = normalizer, pre_tokenizer
    final.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    final.add_special_tokens(list(SPECIAL_TOKENS))
    return WordPieceTokenizer(final)


@cached
def get_tokenizer(seed: int = 0, vocab_size: int = DEFAULT_VOCAB_SIZE) -> WordPieceTokenizer:
    """The course's tokenizer: WordPiece trained on the *training* split of
    ``generate_corpus(seed)`` (never on held-out text). Cached."""
    check_positive_int("seed", seed, allow_zero=True)
    return train_wordpiece(generate_corpus(seed).sentences("train"), vocab_size=vocab_size)


# ----------------------------------------------------------------------------------------
# WordPiece by hand: the encoder and a trainer in plain Python
# ----------------------------------------------------------------------------------------

# The CJK Unified Ideographs blocks, as tokenizers' BertNormalizer lists them (Google's BERT
# starts one block at 0x2B820 where tokenizers has 0x2B920; the course matches tokenizers).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in _CJK_RANGES)


def _is_punctuation(c: str) -> bool:
    # BERT counts all of ASCII's !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ as punctuation, although
    # Unicode calls $ + < = > ^ ` | ~ symbols (S*), not punctuation (P*).
    return c in string.punctuation or unicodedata.category(c).startswith("P")


def _normalize(text: str) -> str:
    """``BertNormalizer(lowercase=True)`` in its order: clean, space out CJK, strip accents, lower-case."""
    chars = []
    for c in text:
        # clean_text: NUL, U+FFFD and control or format characters (category C*) go, except tab,
        # newline and carriage return, which are white space; all white space becomes " ".
        if c == "\ufffd" or (c not in "\t\n\r" and unicodedata.category(c).startswith("C")):
            continue
        # a CJK character is a word of its own: Chinese is written without spaces
        chars.append(" " if c.isspace() else f" {c} " if _is_cjk(c) else c)
    # strip accents: decompose (é -> e + combining acute) and drop the combining marks (Mn)
    text = "".join(c for c in unicodedata.normalize("NFD", "".join(chars)) if unicodedata.category(c) != "Mn")
    # one character at a time, like Rust's char::to_lowercase (str.lower would turn a final Σ into ς)
    return "".join(c.lower() for c in text)


def bert_pre_tokenize(text: str) -> list:
    """Text -> words, as BERT uncased sees them before WordPiece: ``tokenizers``' ``BertNormalizer``
    (control characters dropped, lower-case, accents stripped, CJK characters spaced out) and
    ``BertPreTokenizer`` (split on white space, every punctuation character a word of its own).

    ``"Héllo, WORLD!"`` -> ``['hello', ',', 'world', '!']``. (Characters that Unicode had not
    assigned yet when the tables of ``tokenizers`` were made may be treated differently.)
    """
    check_instance("text", text, str, "the text to split into words")
    words = []
    for chunk in _normalize(text).split():
        start = 0
        for i, c in enumerate(chunk):
            if _is_punctuation(c):
                words += [chunk[start:i], c]
                start = i + 1
        words.append(chunk[start:])
    return [w for w in words if w]


def _check_encoder_settings(vocab, unk, prefix, max_chars) -> None:
    if isinstance(vocab, (str, bytes)) or not isinstance(vocab, Container):
        raise TypeError(f"vocab must be a set of token strings, a dict or a Vocab (anything that "
                        f"answers `token in vocab`), got {type(vocab).__name__}")
    check_instance("unk", unk, str, "the unknown token, e.g. '[UNK]'")
    check_instance("prefix", prefix, str, "the mark of a piece inside a word, e.g. '##'")
    if not unk or not prefix:
        name = "unk" if not unk else "prefix"
        raise ValueError(f"{name} must be a non-empty string (e.g. {'[UNK]' if name == 'unk' else '##'!r}), got ''")
    check_positive_int("max_chars", max_chars)


def wordpiece_encode_word(word: str, vocab, unk: str = "[UNK]", prefix: str = "##",
                          max_chars: int = 100) -> list:
    """One word -> its WordPiece pieces: the encoder's inner loop, greedy longest match first,
    as Google's BERT (``WordpieceTokenizer.tokenize``) and ``tokenizers.models.WordPiece`` do it.

    From the start of the word take the longest prefix that is in ``vocab``; go on from where
    it ended, now looking for ``prefix + rest`` (``##able``). If no piece fits at some point,
    the *whole* word is ``[unk]`` (no partial split, no backtracking); so is a word of more
    than ``max_chars`` characters (``tokenizers``' ``max_input_chars_per_word``).
    ``vocab``: anything that answers ``token in vocab`` (a set, a dict, a :class:`Vocab`).

    ``"unaffable"`` with ``{"un", "##aff", "##able", ...}`` -> ``['un', '##aff', '##able']``.
    """
    check_instance("word", word, str, "one word, e.g. from bert_pre_tokenize")
    _check_encoder_settings(vocab, unk, prefix, max_chars)
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:                      # the longest candidate first, then shorter
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:                                   # no break: nothing in vocab starts here
            return [unk]
        pieces.append(piece)
        start = end
    return pieces


def wordpiece_tokenize(text: str, vocab, unk: str = "[UNK]", prefix: str = "##",
                       max_chars: int = 100) -> list:
    """Text -> WordPiece tokens (no ``[CLS]``/``[SEP]``): :func:`bert_pre_tokenize`, then
    :func:`wordpiece_encode_word` on every word. With the same vocabulary it gives, token for
    token, what the course's tokenizer (``tokenizers``) gives (tested on the whole corpus and on
    MiniLM's vocabulary)."""
    check_instance("text", text, str, "the text to tokenize")
    _check_encoder_settings(vocab, unk, prefix, max_chars)
    return [piece for word in bert_pre_tokenize(text)
            for piece in wordpiece_encode_word(word, vocab, unk, prefix, max_chars)]


class _MergeCounts:
    """The counts the merge rule reads, kept up to date after every merge.

    ``splits[i]``: word type ``i`` as its current pieces, ``freqs[i]``: how often it occurs;
    ``token_freq[t]`` and ``pair_freq[(a, b)]`` count over word types × their frequencies;
    ``where[pair]``: the word types holding the pair; ``pairs_of[t]``: the pairs ``t`` is in.

    Merging ``(a, b)`` changes only the words in ``where[(a, b)]``, and only the scores of pairs
    that hold ``a``, ``b`` or ``ab`` (their count, or a count under the fraction bar, moved): only
    those are scored again and pushed on a heap; an entry whose score is no longer right is
    dropped when it comes to the top. Recounting every pair at every merge, as the Hugging Face
    course does, gives the same merges (tested) but takes about 20 s for the course corpus
    (vocab_size 3000, one core); this takes about 1 s.
    """

    def __init__(self, splits: list, freqs: list):
        self.splits, self.freqs = splits, freqs
        self.token_freq, self.pair_freq = Counter(), Counter()
        self.where, self.pairs_of = defaultdict(set), defaultdict(set)
        for i in range(len(splits)):
            self._count(i, +1)
        self.heap = [self._key(pair) for pair in self.pair_freq]
        heapq.heapify(self.heap)

    def _count(self, i: int, sign: int) -> None:
        """Add (``sign=+1``) or take away (``-1``) word type ``i``'s tokens and pairs."""
        split, freq = self.splits[i], self.freqs[i]
        for token in split:
            self.token_freq[token] += sign * freq
        for pair in zip(split, split[1:]):
            self.pair_freq[pair] += sign * freq
            if sign > 0:
                self.where[pair].add(i)
                self.pairs_of[pair[0]].add(pair)
                self.pairs_of[pair[1]].add(pair)
            else:
                self.where[pair].discard(i)

    def score(self, pair: tuple) -> float:
        """freq(ab) / (freq(a) × freq(b)): high when a and b are seldom seen apart."""
        a, b = pair
        return self.pair_freq[pair] / (self.token_freq[a] * self.token_freq[b])

    def _key(self, pair: tuple) -> tuple:
        # the heap's smallest first: the highest score, then the most frequent pair, then A-Z
        return (-self.score(pair), -self.pair_freq[pair], pair)

    def best_pair(self):
        """The pair to merge next, or None when every word is a single token."""
        while self.heap:
            key = self.heap[0]
            if self.pair_freq[key[2]] > 0 and key == self._key(key[2]):
                return key[2]
            heapq.heappop(self.heap)            # a stale entry: its pair is gone or rescored
        return None

    def merge(self, pair: tuple, new: str) -> None:
        """Replace ``a b`` by ``new`` in every word that holds the pair, and rescore."""
        a, b = pair
        for i in list(self.where[pair]):
            self._count(i, -1)
            self.splits[i] = _merge_in(self.splits[i], a, b, new)
            self._count(i, +1)
        for token in (a, b, new):
            for p in list(self.pairs_of[token]):
                if self.pair_freq[p] > 0:
                    heapq.heappush(self.heap, self._key(p))
                else:
                    self.pairs_of[token].discard(p)


def _merge_in(split: list, a: str, b: str, new: str) -> list:
    """``split`` with every ``a, b`` (left to right, not overlapping) replaced by ``new``."""
    out, i = [], 0
    while i < len(split):
        if i + 1 < len(split) and split[i] == a and split[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(split[i])
            i += 1
    return out


def train_wordpiece_by_hand(sentences: Sequence[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> Vocab:
    """A WordPiece vocabulary of (at most) ``vocab_size`` tokens, trained by the likelihood
    score, as the Hugging Face NLP course (chapter 6, "WordPiece tokenization") describes it.

    The words of :func:`bert_pre_tokenize` are counted once per word type; each starts as its
    characters, the first plain and the others with ``##`` (``hug`` -> ``h ##u ##g``). Then,
    again and again, the pair with the highest score freq(ab) / (freq(a) × freq(b)) is merged
    everywhere (``h`` + ``##u`` -> ``hu``, ``##u`` + ``##g`` -> ``##ug``) and joins the
    vocabulary, until it has ``vocab_size`` tokens or every word is one token. Ties: the more
    frequent pair, then the alphabetically first. Returns a :class:`Vocab`: the special tokens
    (ids 0–4), the alphabet sorted, then the merges in the order they were made.

    The honest note: Google never published how it trained BERT's WordPiece vocabulary; this
    score is the Hugging Face course's reading of the papers. And ``tokenizers``'
    ``WordPieceTrainer`` (:func:`train_wordpiece`) does not use it: it wraps the BPE trainer,
    which merges the most *frequent* pair, and only then turns the result into a WordPiece model.
    """
    check_str_list("sentences", sentences, what="sentences", allow_empty=False)
    check_positive_int("vocab_size", vocab_size)
    counts = Counter(word for sentence in sentences for word in bert_pre_tokenize(sentence))
    splits = [[word[0]] + ["##" + c for c in word[1:]] for word in counts]
    alphabet = sorted({token for split in splits for token in split})
    tokens = list(SPECIAL_TOKENS) + alphabet
    if vocab_size < len(tokens):
        raise ValueError(f"vocab_size must be at least {len(tokens)} ({len(SPECIAL_TOKENS)} special tokens "
                         f"and the {len(alphabet)} characters of the alphabet), got {vocab_size}")
    merges, known = _MergeCounts(splits, list(counts.values())), set(tokens)
    while len(tokens) < vocab_size:
        pair = merges.best_pair()
        if pair is None:
            break
        new = pair[0] + pair[1][len("##"):]
        merges.merge(pair, new)
        if new not in known:                    # abc may come from a + ##bc and from ab + ##c
            tokens.append(new)
            known.add(new)
    return Vocab(tokens)


def _pieces_per_word(words: list, vocab) -> tuple:
    """(mean pieces per word, number of words that are [UNK]) over ``words``."""
    pieces = [wordpiece_encode_word(word, vocab) for word in words]
    return sum(map(len, pieces)) / max(len(words), 1), sum(p == [SPECIAL_TOKENS[1]] for p in pieces)


def compare_vocabularies(train_sentences: Sequence[str], test_sentences: Sequence[str],
                         vocab_size: int = DEFAULT_VOCAB_SIZE) -> dict:
    """Train both vocabularies on ``train_sentences``, :func:`train_wordpiece_by_hand` (the
    likelihood score) and :func:`train_wordpiece` (``tokenizers``: frequency, ``min_frequency=2``),
    and encode the words of ``test_sentences`` with each (:func:`wordpiece_encode_word`).

    Returns ``{"by_hand": row, "tokenizers": row, "shared_tokens": n, "test_words": n}``, a row
    being ``{"size", "seconds" (training, wall clock), "pieces_per_word", "unknown_words"}``.
    """
    check_str_list("train_sentences", train_sentences, what="sentences", allow_empty=False)
    check_str_list("test_sentences", test_sentences, what="sentences", allow_empty=False)
    check_positive_int("vocab_size", vocab_size)
    vocabs, rows = {}, {}
    for name, train in (("by_hand", train_wordpiece_by_hand),
                        ("tokenizers", lambda s, n: train_wordpiece(s, n).vocab)):
        start = time.perf_counter()
        vocabs[name] = train(list(train_sentences), vocab_size)
        rows[name] = {"size": len(vocabs[name]), "seconds": time.perf_counter() - start}
    words = [word for sentence in test_sentences for word in bert_pre_tokenize(sentence)]
    for name, vocab in vocabs.items():
        rows[name]["pieces_per_word"], rows[name]["unknown_words"] = _pieces_per_word(words, vocab)
    shared = len(set(vocabs["by_hand"].tokens) & set(vocabs["tokenizers"].tokens))
    return {**rows, "shared_tokens": shared, "test_words": len(words)}

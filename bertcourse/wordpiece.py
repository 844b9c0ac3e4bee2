"""Chapter 4: WordPiece sub-words for the course's corpus.

:func:`train_wordpiece` trains a WordPiece vocabulary with Hugging Face ``tokenizers``;
:class:`WordPieceTokenizer` turns text into tokens and ids and back; :class:`Vocab` maps
tokens to ids. Ids 0–4 are always ``[PAD] [UNK] [CLS] [SEP] [MASK]``. :func:`get_tokenizer`
is the course's tokenizer, trained on the training split of ``generate_corpus(seed)``.
(Everything here is re-exported by :mod:`bertcourse.data`.)
"""
from __future__ import annotations

import os
from typing import Sequence

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from ._checks import check_bool, check_path, check_positive_int, shape_str
from .corpus import generate_corpus
from .utils import cached

__all__ = ["SPECIAL_TOKENS", "DEFAULT_VOCAB_SIZE", "Vocab", "WordPieceTokenizer", "hf_tokenizer", "train_wordpiece",
           "get_tokenizer"]

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

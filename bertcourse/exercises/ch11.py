"""Chapter 11 exercises: token tags, named entities (Universal NER, English EWT).

In the notebook::

    from bertcourse.exercises.ch11 import q1, q2, q3, quiz

* ``q1`` — ``prediction``: *before* the measurement, predict the token accuracy and the entity F1 of
  the all-O tagger (every word tagged ``"O"``) on the test split (the check runs :func:`all_o_scores`;
  ``q1.reveal(text)`` shows the measurement once there is a guess).
* ``q2`` — ``first_piece_labels(word_ids, word_labels)``: the words' labels given to their word pieces,
  the first piece of a word carrying its label and every other position -100 (the course's
  :func:`bertcourse.token_tags.align_labels`). The result may be a list of ints or a 1-D integer tensor.
* ``q3`` — ``entities(tags)``: the entities of a tag sequence as ``(type, start, end)`` tuples, end
  exclusive, with conlleval's rule for an ``I-X`` that follows ``O`` or another type (the course's
  :func:`bertcourse.token_tags.bio_entities`). A list of tuples; lists in place of the tuples are accepted.
* ``quiz`` — four questions on what the chapter measured, and why (answers in ``quiz_answers``, a
  letter each; see :mod:`bertcourse.exercises.quiz`).

Every check gives the learner's code fresh copies of its inputs (the core's rule), so an answer that
changes its arguments in place cannot spoil the next case, and is told so.
"""
from __future__ import annotations

import functools

import torch

from .. import token_tags
from ..token_tags import (TAGS, align_labels, all_o_tagger, bio_entities, entity_scores, read_named_entities,
                          split_by_document, token_accuracy)
from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, Exercise, Symptom, equal_values, run_cases
from .guesses import judge_guesses, predicted_shares
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "quiz", "all_o_scores", "Q1_KEYS", "Q1_SPLIT", "Q1_TOLERANCE"]


# ---------------------------------------------------------------------------------------
# Q1: predict, then measure
# ---------------------------------------------------------------------------------------

Q1_SPLIT = {"seed": 0}
"""The split of q1's measurement: ``split_by_document(read_named_entities(), **Q1_SPLIT)`` (3,058
training, 1,020 test sentences)."""
Q1_KEYS = ("token accuracy", "entity F1")
"""q1's two measures of the all-O tagger on the test split, each a key of ``prediction``."""
Q1_TOLERANCE = 0.05


@functools.lru_cache(maxsize=1)
def _all_o_measured() -> tuple:
    _train, test = split_by_document(read_named_entities(), **Q1_SPLIT)
    gold = [list(s.tags) for s in test]
    predicted = all_o_tagger([s.words for s in test])
    return token_accuracy(gold, predicted), entity_scores(gold, predicted)["f1"]


def all_o_scores() -> dict:
    """The measurement of q1: ``{"token accuracy": ..., "entity F1": ...}`` of
    :func:`~bertcourse.token_tags.all_o_tagger` on the test split of ``Q1_SPLIT`` (1,020 sentences,
    11,794 words): 0.940 (the share of ``"O"`` words) and 0 (no entity predicted). Computed once per
    process (a second or two: it reads the data); no randomness."""
    return dict(zip(Q1_KEYS, _all_o_measured()))


def _q1_reasons(guess: dict, measured: dict, off: list) -> list:
    # why each key that is off is off (judge_guesses puts these after the report)
    why = []
    accuracy, f1 = "token accuracy", "entity F1"
    if accuracy in off and guess[accuracy] < measured[accuracy]:
        why.append(_("most words are outside every entity: {share:.0%} of the test words are tagged O, and "
                     "the all-O tagger gets every one of them right").format(share=measured[accuracy]))
    if accuracy in off and guess[accuracy] > measured[accuracy]:
        why.append(_("not every word is O: the words of the entities, {share:.0%} of the test words, are all "
                     "tagged wrong").format(share=1 - measured[accuracy]))
    if f1 in off and abs(guess[f1] - guess[accuracy]) <= 0.15:
        why.append(_("entity F1 is not token accuracy under another name: it counts entities, not words, and "
                     "the all-O tagger predicts none. It finds none of the gold entities (recall 0), and F1 is "
                     "defined as 0 then, however many O words it gets right"))
    elif f1 in off:
        why.append(_("the all-O tagger predicts no entity, so it finds none of the gold ones: recall 0, and F1, "
                     "the harmonic mean of precision and recall, is 0 (precision is 0/0 with no prediction, "
                     "reported as 0)"))
    return why


def _check_q1(answer) -> str:
    guess = predicted_shares(answer, Q1_KEYS, _("scores between 0 and 1"), _("a number between 0 and 1"))
    measured = all_o_scores()
    report = judge_guesses(guess, measured, Q1_TOLERANCE, _q1_reasons)
    return _("{report}: both within {tolerance:.2f}. Tagging every word O is right on every word outside an "
             "entity, {share:.0%} of them, and finds no entity: entity F1 0. Token accuracy mostly counts the O "
             "words; entity F1 counts whole entities.").format(
        report=report, tolerance=Q1_TOLERANCE, share=measured["token accuracy"])


q1 = Exercise(
    name=N_("Q1 (predict: tagging every word O)"),
    var="prediction",
    checker=_check_q1,
    hints=[
        N_("The all-O tagger is right on every word whose gold tag is O, and wrong on every word of an entity. "
           "What share of the words of web text belongs to a person, a place or an organisation?"),
        N_("Token accuracy is the share of O words, well above 0.9 here. Entity F1 counts entities: how many "
           "does a tagger that says O everywhere predict, and how many of the gold entities does it find?"),
        N_("No entity predicted, none found: recall 0, and F1 (2 TP / (predicted + gold)) is 0. Token accuracy "
           "is the share of O words, about 0.94."),
    ],
    solution=N_('''
# a prediction, not a computation; the check then measures (all_o_scores())
prediction = {"token accuracy": 0.94, "entity F1": 0.0}
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: a word's label on its first piece
# ---------------------------------------------------------------------------------------

IGNORE = -100      # cross_entropy's default ignore_index


def _every_piece(word_ids, word_labels):
    """every piece of a word carries the word's label: only its first piece does. Give the later
    pieces -100, so that a word in three pieces counts once in the loss, not three times."""
    return [IGNORE if w is None else word_labels[w] for w in word_ids]


def _later_pieces_inside(word_ids, word_labels):
    """you labelled the later pieces of a word too (I-X after a B-X word): that is the other
    convention (align_labels' label_all_pieces=True). Here only the first piece carries a label; the
    later pieces get -100."""
    return align_labels(word_ids, word_labels, label_all_pieces=True)


def _specials_zero(word_ids, word_labels):
    """[CLS] and [SEP] (None in word_ids) got 0, the id of "O": they are no words and have no tag.
    Give them -100, the label cross_entropy leaves out."""
    return [0 if w is None else v for w, v in zip(word_ids, align_labels(word_ids, word_labels))]


def _later_pieces_zero(word_ids, word_labels):
    """the later pieces of a word got 0, the id of "O": 0 is a tag, so the loss would train them to
    say O, inside a name too. Give them -100, the label cross_entropy leaves out."""
    return [0 if w is not None and v == IGNORE else v for w, v in zip(word_ids, align_labels(word_ids, word_labels))]


def _zero_for_ignored(word_ids, word_labels):
    """you put 0 (the id of "O") where -100 belongs: 0 is a tag, and the loss would train those
    positions to say O. [CLS], [SEP] and the later pieces of a word get -100, which cross_entropy
    leaves out."""
    return [0 if v == IGNORE else v for v in align_labels(word_ids, word_labels)]


def _last_piece(word_ids, word_labels):
    """you labelled the last piece of each word: the label goes on its first piece (where word_tags
    reads the prediction back), and the others get -100."""
    out = []
    for i, w in enumerate(word_ids):
        last = w is not None and (i + 1 == len(word_ids) or word_ids[i + 1] != w)
        out.append(word_labels[w] if last else IGNORE)
    return out


def _index_past_the_end(error, word_ids, word_labels) -> bool:
    return isinstance(error, IndexError)


def _none_used(error, word_ids, word_labels) -> bool:
    return isinstance(error, (TypeError, RuntimeError)) and "NoneType" in str(error)


def _one_per_word(got, word_ids, word_labels) -> bool:
    return len(got) == len(word_labels) != len(word_ids)


def _specials_left_out(got, word_ids, word_labels) -> bool:
    return len(got) == sum(w is not None for w in word_ids) != len(word_ids)


def _other_ignore_value(got, word_ids, word_labels) -> bool:
    expected = align_labels(word_ids, word_labels)
    if len(got) != len(expected):
        return False
    kept = {g for g, e in zip(got, expected) if e == IGNORE}
    return (len(kept) == 1 and kept != {IGNORE} and kept != {0}
            and all(g == e for g, e in zip(got, expected) if e != IGNORE))


def _other_ignore_message(got, word_ids, word_labels) -> str:
    value = next(g for g, w in zip(got, word_ids) if w is None)
    return _("the positions without a label got {value}: cross_entropy leaves out -100 (its default "
             "ignore_index), not {value}. Use -100.").format(value=value)


Q2_DIAGNOSES = [
    _every_piece, _later_pieces_inside, _specials_zero, _later_pieces_zero, _zero_for_ignored, _last_piece,
    (Symptom(_index_past_the_end, raised=True),         # word_labels[i] (or [i - 1]) runs past the last word
     N_("an index went past the end of a list. word_labels has one label per word, not one per piece: did you "
        "index it with the piece's position i? Index it with the piece's word, word_labels[word_ids[i]] ([CLS] "
        "comes first, and a word may have several pieces, so piece i is not word i).")),
    (Symptom(_none_used, raised=True),
     N_("your code used a None of word_ids as a word index or a number: None marks [CLS] and [SEP] (and "
        "padding), which belong to no word. Give those positions -100 before you look up a label.")),
    (Symptom(_one_per_word),
     N_("you returned one label per word: the result needs one label per piece, as long as word_ids "
        "([CLS] and [SEP] included).")),
    (Symptom(_specials_left_out),
     N_("you left out [CLS] and [SEP]: the result needs one label per piece, as long as word_ids, with -100 "
        "where word_ids has None.")),
    (Symptom(_other_ignore_value), _other_ignore_message),
]

O, B_PER, I_PER, B_LOC, I_LOC, B_ORG, I_ORG = range(len(TAGS))

# Sentences of the test split, as MiniLM's tokenizer cuts them (tests/test_exercises_ch11.py checks
# word_ids against encode_tagged); the last one padded as a batch pads it.
Q2_WORDS = (
    ("Dear", "Mr.", "Lavorato", ":"),
    ("Is", "Hank", "Green", "Awesome", "?"),
    ("Phillip",),
    ("is", "gare", "montparnasse", "storage", "still", "available", "?"),
    ("Rudwell", "Johnson", "/", "ENRON@enronXgate"),
    ("colorado", "beat", "texas", "a&m", "."),
    ("Go", "down", "1", "block", "to", "Super", "8", "."),
)
"""The words of each case of ``Q2_CASES``, in order."""

Q2_CASES = [
    (N_("'Dear Mr. Lavorato :', a B-PER word in 3 pieces"),
     ([None, 0, 1, 1, 2, 2, 2, 3, None], [O, O, B_PER, O])),
    (N_("'Is Hank Green Awesome ?', one piece per word"),
     ([None, 0, 1, 2, 3, 4, None], [O, B_PER, I_PER, O, O])),
    (N_("'Phillip', a sentence of one piece"), ([None, 0, None], [B_PER])),
    (N_("'is gare montparnasse ...', a B-LOC word in 2 pieces, an I-LOC word in 4"),
     ([None, 0, 1, 1, 2, 2, 2, 2, 3, 4, 5, 6, None], [O, B_LOC, I_LOC, O, O, O, O])),
    (N_("'Rudwell Johnson / ENRON@enronXgate', the first word in 3 pieces, the last in 7"),
     ([None, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3, None], [B_PER, I_PER, O, B_ORG])),
    (N_("'colorado beat texas a&m .', consecutive words, an I-ORG word in 3 pieces"),
     ([None, 0, 1, 2, 3, 3, 3, 4, None], [B_ORG, O, B_ORG, I_ORG, O])),
    (N_("'Go down 1 block to Super 8 .' padded to 13 pieces (None on the [PAD]s too)"),
     ([None, 0, 1, 2, 3, 4, 5, 6, 7, None, None, None, None], [O, O, O, O, O, B_LOC, I_LOC, O])),
]


def _show(seq) -> str:
    return " ".join(str(v) for v in seq)


def _q2_labels(got, where, word_ids, word_labels) -> list:
    """The learner's labels as a list of ints: a list or tuple of ints, or a 1-D integer tensor."""
    if isinstance(got, torch.Tensor):
        if got.dim() != 1 or got.is_floating_point() or got.is_complex() or got.dtype == torch.bool:
            raise CheckFailed(_("on {where}: expected a list of ints (or a 1-D integer tensor), got a tensor of "
                                "shape {shape} and dtype {dtype}; labels are whole numbers, one per piece").format(
                where=where, shape=tuple(got.shape), dtype=got.dtype))
        return got.tolist()
    if not isinstance(got, (list, tuple)) or not all(type(v) is int for v in got):
        raise CheckFailed(_("on {where}: expected a list of ints (or a 1-D integer tensor), one label per piece, "
                            "got {type} {got!r:.60}").format(where=where, type=type(got).__name__, got=got))
    return list(got)


def _q2_message(got, expected, where) -> str:
    word_ids = next((args[0] for description, args in Q2_CASES if _(description) == where), None)
    return _("on {where}: word_ids [{word_ids}], expected labels [{expected}], got [{got}]").format(
        where=where, word_ids=_show(word_ids or []), expected=_show(expected), got=_show(got))


def _check_q2(answer) -> str:
    return run_cases(answer, align_labels, Q2_CASES, Q2_DIAGNOSES, prepare=_q2_labels,
                     compare=equal_values(_q2_message))


q2 = Exercise(
    name=N_("Q2 (a word's label on its first piece)"),
    var="first_piece_labels",
    checker=_check_q2,
    forbidden=[(token_tags, "align_labels", N_("the package's align_labels"))],
    hints=[
        N_("word_ids says which word each piece belongs to: None for [CLS] and [SEP], which get -100. A piece "
           "whose word differs from the previous piece's word is the first piece of that word."),
        N_("Walk through word_ids keeping the previous entry: None gives -100; a new word w gives word_labels[w] "
           "(its index is w, not the piece's position); the same word as the previous piece gives -100."),
        N_("labels, previous = [], None; for w in word_ids: labels.append(-100 if w is None or w == previous "
           "else word_labels[w]); previous = w"),
    ],
    solution=N_('''
def first_piece_labels(word_ids, word_labels):
    labels, previous = [], None
    for w in word_ids:
        if w is None:                      # [CLS], [SEP] (or padding): no word, no label
            labels.append(-100)
        elif w != previous:                # the first piece of word w carries its label
            labels.append(word_labels[w])
        else:                              # a later piece of the same word
            labels.append(-100)
        previous = w
    return labels
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the entities of a tag sequence
# ---------------------------------------------------------------------------------------

def _decode(tags, continues, begins) -> list:
    """Entities as a decoder with its own rules finds them: ``continues(prefix, kind, open_kind)``,
    ``begins(prefix)``; an entity still open at the end is closed."""
    found, start, open_kind = [], None, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, kind = tag[:1], tag[2:]
        if start is not None and not continues(prefix, kind, open_kind):
            found.append((open_kind, start, i))
            start, open_kind = None, None
        if start is None and begins(prefix):
            start, open_kind = i, kind
    return found


def _end_inclusive(tags):
    """your end is the index of the entity's last word: end is exclusive, one past its last word, as
    in Python's slices (tags[start:end] are the entity's tags)."""
    return [(kind, start, end - 1) for kind, start, end in bio_entities(tags)]


def _last_dropped(tags):
    """the entity that runs to the end of the sentence is missing: no tag comes after it to close it.
    After the loop, close the entity still open (or loop over tags + ["O"])."""
    return [e for e in bio_entities(tags) if e[2] != len(tags)]


def _strict_iob2(tags):
    """an I-X after O (or after another type) begins no entity in your code: that is strict IOB2
    (seqeval's mode="strict"), a real scheme, but the course scores with conlleval's rule, by which
    such an I-X begins an entity. A tagger that says O I-PER still finds the person."""
    return _decode(tags, lambda prefix, kind, open_kind: prefix == "I" and kind == open_kind,
                   lambda prefix: prefix == "B")


def _type_change_merged(tags):
    """B-PER I-LOC is two entities, and your code made one: an I- tag continues only an entity of its
    own type. A change of type ends one entity and begins the next."""
    return _decode(tags, lambda prefix, kind, open_kind: prefix == "I", lambda prefix: prefix in ("B", "I"))


def _two_b_merged(tags):
    """two B-X in a row are two entities: a B- tag always begins a new one (that is what it is for:
    'Paris London' tagged B-LOC B-LOC is two places)."""
    return _decode(tags, lambda prefix, kind, open_kind: prefix in ("B", "I") and kind == open_kind,
                   lambda prefix: prefix in ("B", "I"))


def _wrong_order(tags):
    """each entity is (type, start, end), the type first: ("PER", 0, 2), not (0, 2, "PER")."""
    return [(start, end, kind) for kind, start, end in bio_entities(tags)]


def _prefix_kept(tags):
    """the type is the tag without its B- or I- prefix: "PER", not "B-PER"."""
    return [(tags[start], start, end) for kind, start, end in bio_entities(tags)]


def _split_o(error, tags) -> bool:
    return isinstance(error, ValueError) and "not enough values to unpack" in str(error)


def _not_in_order(got, tags) -> bool:
    return sorted(map(tuple, got), key=repr) == sorted(bio_entities(tags), key=repr) != list(map(tuple, got))


Q3_DIAGNOSES = [
    _end_inclusive, _last_dropped, _strict_iob2, _type_change_merged, _two_b_merged, _wrong_order, _prefix_kept,
    (Symptom(_split_o, raised=True),
     N_("'O' has no '-': tag.split('-') gives one part for it, not two. Look at the prefix first (tag[0], or "
        "tag == 'O'), or use tag.partition('-'), which always gives three parts.")),
    (Symptom(_not_in_order), N_("these are the right entities, but not in the order of the sentence: list them "
                                "by their start.")),
]

Q3_CASES = [
    (N_("a two-word person, then a place"), (["B-PER", "I-PER", "O", "O", "B-LOC", "O"],)),
    (N_("an organisation at the end of the sentence"), (["O", "O", "B-ORG", "I-ORG", "I-ORG"],)),
    (N_("no entity"), (["O", "O", "O", "O"],)),
    (N_("'Neither did Cheney , Rumsfeld , or Wolfowitz .'"),
     (["O", "O", "B-PER", "O", "B-PER", "O", "O", "B-PER", "O"],)),
    (N_("a tagger's B-LOC B-LOC, two places in a row"), (["O", "B-LOC", "B-LOC", "O"],)),
    (N_("a tagger's O I-PER I-PER O (conlleval: an I-PER after O begins an entity)"),
     (["O", "I-PER", "I-PER", "O"],)),
    (N_("a tagger's B-PER I-LOC, a change of type"), (["O", "B-PER", "I-LOC", "O"],)),
    (N_("'Phillip', a sentence of one entity"), (["B-PER"],)),
    (N_("'Thank You Barry s Auto Tech !', a four-word organisation"),
     (["O", "O", "B-ORG", "I-ORG", "I-ORG", "I-ORG", "O"],)),
    (N_("a tagger's B-ORG I-ORG I-PER I-PER at the end"), (["O", "B-ORG", "I-ORG", "I-PER", "I-PER"],)),
]


def _q3_entities(got, where, tags) -> list:
    """The learner's entities as a list of tuples: a list (or tuple) of tuples or lists of three."""
    if not isinstance(got, (list, tuple)) or not all(isinstance(e, (tuple, list)) and len(e) == 3 for e in got):
        raise CheckFailed(_("on {where}: expected a list of (type, start, end) tuples, one per entity, got "
                            "{got!r:.80}").format(where=where, got=got))
    return [tuple(e) for e in got]


def _q3_message(got, expected, where) -> str:
    tags = next((args[0] for description, args in Q3_CASES if _(description) == where), [])
    return _("on {where}: tags {tags}, expected {expected}, got {got}").format(
        where=where, tags=" ".join(tags), expected=expected, got=got)


def _check_q3(answer) -> str:
    return run_cases(answer, bio_entities, Q3_CASES, Q3_DIAGNOSES, prepare=_q3_entities,
                     compare=equal_values(_q3_message))


q3 = Exercise(
    name=N_("Q3 (the entities of a tag sequence)"),
    var="entities",
    checker=_check_q3,
    forbidden=[(token_tags, "bio_entities", N_("the package's bio_entities"))],
    hints=[
        N_("Walk through the tags keeping the open entity, its type and its start. O ends it; B-X always begins "
           "a new one; I-X continues it if it has type X, and otherwise begins a new entity (conlleval's rule)."),
        N_("An entity ends where a tag does not continue it: append (type, start, i), i being the index of that "
           "tag (end exclusive). After the loop, close the entity still open, or loop over tags + ['O']."),
        N_("tag[0] is the prefix ('B', 'I' or 'O') and tag[2:] the type; a tag continues the open entity when "
           "tag[0] == 'I' and tag[2:] is the open entity's type."),
    ],
    solution=N_('''
def entities(tags):
    found, start, kind = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):      # the extra "O" closes an entity at the end
        prefix, tag_kind = tag[0], tag[2:]
        continues = prefix == "I" and tag_kind == kind
        if start is not None and not continues:       # the open entity ends before word i
            found.append((kind, start, i))
            start, kind = None, None
        if prefix in ("B", "I") and not continues:    # B-X, or an I-X that continues nothing (conlleval)
            start, kind = i, tag_kind
    return found
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 11)"), [
    Question(
        N_("Tagging every word O gets a token accuracy of 0.94 on the test split. What does that number say?"),
        options=(
            Option(N_("That the all-O tagger is nearly as good as a trained one: only 6 % of the words are left "
                      "to learn."),
                   why=N_("Those 6 % are the words of every name, and it finds none of them: entity F1 0. Token "
                          "accuracy counts its O words, 94 % of the data, as successes.")),
            Option(N_("Little: 94 % of the words are O, so token accuracy mostly counts the words outside every "
                      "entity. Entity F1, which counts whole entities, is 0 for this tagger."),
                   why=N_("Right: a measure on which a tagger that finds nothing scores 0.94 says little about "
                          "finding entities. Entity precision, recall and F1 count the entities themselves."),
                   correct=True),
            Option(N_("That token accuracy is computed wrongly: it should leave out the O words."),
                   why=N_("It is computed as defined, the share of words whose tag is right; the trouble is the "
                          "measure, not the arithmetic. On data that is 94 % O it rewards saying O, so the "
                          "chapter scores entities instead.")),
            Option(N_("That any tagger above 0.94 token accuracy finds entities well."),
                   why=N_("Not necessarily: an entity counts only with its exact type, start and end, so a "
                          "tagger that tags most words of most names right but cuts them at the wrong word can "
                          "beat 0.94 and still get a low entity F1.")),
        )),
    Question(
        N_("The later pieces of a word, and [CLS] and [SEP], get the label -100. Why?"),
        options=(
            Option(N_("-100 is the tag id of O in this course."),
                   why=N_("O is tag 0 (TAGS[0]); -100 is no tag at all.")),
            Option(N_("So that the model learns to predict -100 on those pieces."),
                   why=N_("It never does: -100 is no class (the tagger has 7 outputs, 0 to 6), and those "
                          "positions are left out of the loss, so nothing is asked of them.")),
            Option(N_("cross_entropy leaves out every position labelled -100 (its ignore_index): the loss is over "
                      "words, each counted once at its first piece however many pieces it has, and [CLS] and "
                      "[SEP] are no words."),
                   why=N_("Right: -100 is cross_entropy's default ignore_index. Were every piece labelled, a word "
                          "in three pieces would count three times in the loss."), correct=True),
            Option(N_("To make the loss weigh more on words in several pieces, which are rarer and harder."),
                   why=N_("The opposite: -100 keeps them from counting more. With a label on every piece, a word "
                          "in three pieces would count three times; with -100 every word counts once.")),
        )),
    Question(
        N_("MiniLM is uncased: its tokenizer lower-cases every word before the model sees it. What does that "
           "cost a tagger of names?"),
        options=(
            Option(N_("Nothing: capitals carry no information about names."),
                   why=N_("They do: a capital is the cheapest cue to a name ('US' is a place in this web text, "
                          "'us' is not), and an uncased model never sees it.")),
            Option(N_("Most of its entity F1: the most-frequent-tag baseline loses about half of its entity F1 "
                      "when the words are lower-cased."),
                   why=N_("Measured, it barely moves: mean entity F1 0.354 as written, 0.349 lower-cased, over "
                          "the splits of seeds 0 to 5, a difference within the noise between splits.")),
            Option(N_("Nothing in the end: fine-tuning teaches the model the capitals back."),
                   why=N_("Fine-tuning cannot bring back what the tokenizer removed: the model gets the "
                          "lower-cased pieces, during fine-tuning as at test time.")),
            Option(N_("The capital letters, the cheapest cue to a name, are gone before the model sees the text; "
                      "how much that costs must be measured, and for the most-frequent-tag baseline lower-casing "
                      "barely changes entity F1."),
                   why=N_("Right: the cue is lost, but measured on the baseline it was worth little on this data: "
                          "mean entity F1 0.354 as written, 0.349 lower-cased over seeds 0 to 5, within noise."),
                   correct=True),
        )),
    Question(
        N_("A tagger predicts O I-PER I-PER O. How many entities does conlleval's rule, which the course scores "
           "with, read in it, and how many does strict IOB2?"),
        options=(
            Option(N_("One person (words 1 and 2) by conlleval's rule; none in strict IOB2, which calls an I-PER "
                      "after O invalid."),
                   why=N_("Right: conlleval (and seqeval's default mode) lets an I-X that follows O begin an "
                          "entity, ('PER', 1, 3); strict IOB2 (seqeval's mode=\"strict\") counts no entity "
                          "there."), correct=True),
            Option(N_("None by either rule: an entity must begin with B-."),
                   why=N_("That is strict IOB2's rule only; conlleval lets an I-X that follows O begin an "
                          "entity, so it reads one person here.")),
            Option(N_("Two persons by conlleval's rule, one per I-PER word."),
                   why=N_("The second I-PER continues the entity the first began (the same type, right after "
                          "it): one person, ('PER', 1, 3).")),
            Option(N_("One person by both rules: strict IOB2 repairs the I-PER into a B-PER."),
                   why=N_("Strict IOB2 repairs nothing: it calls the I-PER after O invalid and counts no entity "
                          "there. Only the lenient rule finds the person.")),
        )),
])

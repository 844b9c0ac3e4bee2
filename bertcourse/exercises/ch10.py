"""Chapter 10 exercises: natural language inference on SNLI sentence pairs.

In the notebook::

    from bertcourse.exercises.ch10 import q1, q2, q3, quiz

* ``q1`` — ``prediction``: *before* running the experiment, predict the test accuracy of a bag of
  words that reads only the premise and of one that reads only the hypothesis (the check runs
  :func:`one_side_accuracies`, the package's :func:`~bertcourse.finetuning_baselines.one_side_baselines`).
* ``q2`` — ``confusion_matrix(labels, predictions, num_classes)``: the counts of every (true class,
  prediction) (the course's :func:`bertcourse.bert.confusion_matrix`).
* ``q3`` — ``hypothesis_only(ids, segments, sep_id)``: ``[CLS] hypothesis [SEP]`` from one encoded pair,
  what :func:`~bertcourse.sentence_pairs.encode_pairs` builds with ``hypothesis_only=True``.
* ``quiz`` — four questions on what the chapter measured, and why (answers in ``quiz_answers``, a
  letter or a number each; see :mod:`bertcourse.exercises.quiz`).

Every check gives the learner's code fresh copies of its inputs (the core's rule), so an answer that
changes its arguments in place cannot spoil the next case, and is told so.
"""
from __future__ import annotations

import functools
import types

import torch

from .. import bert

from ..finetuning_baselines import one_side_baselines
from ..pretrained_bert import load_pretrained
from ..reviews import special_ids
from ..sentence_pairs import Pair, encode_pairs, load_snli
from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, Exercise, Symptom, equal_values, run_cases, seeded
from .guesses import judge_guesses, predicted_shares
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "quiz", "one_side_accuracies", "Q1_KEYS", "Q1_SPLITS", "Q1_TOLERANCE"]


# ---------------------------------------------------------------------------------------
# Q1: predict, then run the experiment
# ---------------------------------------------------------------------------------------

Q1_SPLITS = {"train_size": 3000, "test_size": 1000, "seed": 0}
"""The splits of q1's experiment: ``load_snli(**Q1_SPLITS)``."""
Q1_KEYS = ("premise only", "hypothesis only")
"""q1's two models, each a key of ``prediction``; the side of the pair each reads."""
Q1_TOLERANCE = 0.10
_SIDES = {"premise only": "premise", "hypothesis only": "hypothesis"}


def one_side_accuracies() -> dict:
    """The experiment of q1: ``{"premise only": acc, "hypothesis only": acc}``, the test accuracies of
    :func:`~bertcourse.finetuning_baselines.one_side_baselines` on ``load_snli(**Q1_SPLITS)`` (3,000
    training pairs, 1,000 test pairs; computed once per process, in 15 to 40 s, by that function's cache,
    which the notebook's section 3 shares; the global random state is left alone)."""
    result = one_side_baselines(load_snli(**Q1_SPLITS))
    return {key: float(result[_SIDES[key]]["test"]) for key in Q1_KEYS}


def _q1_reasons(guess: dict, measured: dict, off: list) -> list:
    # why each key that is off is off (judge_guesses puts these after the report)
    why = []
    premise, hypothesis = "premise only", "hypothesis only"
    if premise in off and guess[premise] > measured[premise]:
        why.append(_("the premise alone stays at chance, about one in three: almost every premise comes with one "
                     "hypothesis of each label, so whatever a model answers for it is right for about one pair "
                     "in three"))
    if premise in off and guess[premise] < measured[premise]:
        why.append(_("below one in three is worse than always answering one label: the premise alone gives "
                     "chance, not less"))
    if hypothesis in off and guess[hypothesis] < measured[hypothesis]:
        why.append(_("the hypotheses carry cues to their labels (annotation artefacts): annotators wrote "
                     "contradictions with words such as 'not', 'nobody' and 'sleeping', entailments with "
                     "generic words such as 'person' and 'outdoors' (Gururangan et al. 2018; Poliak et al. 2018)"))
    if hypothesis in off and guess[hypothesis] > measured[hypothesis]:
        why.append(_("the cues are single words, and a bag of words from 3,000 hypotheses learns only the "
                     "frequent ones: well above chance, far below a model that reads the pair"))
    return why


def _check_q1(answer) -> str:
    guess = predicted_shares(answer, Q1_KEYS, _("test accuracies between 0 and 1"),
                             _("a test accuracy (a number between 0 and 1)"))
    measured = one_side_accuracies()
    report = judge_guesses(guess, measured, Q1_TOLERANCE, _q1_reasons)
    # Both guesses within the tolerance can still say "no difference" (0.40 and 0.45 when 0.34 and
    # 0.55 are measured): the prediction is about the gap, so it must have at least half of it.
    gap = guess["hypothesis only"] - guess["premise only"]
    measured_gap = measured["hypothesis only"] - measured["premise only"]
    if gap < measured_gap / 2:
        raise CheckFailed(_("{report}: each is within {tolerance:.2f}, but you put the hypothesis {gap:+.2f} ahead of "
                            "the premise and it is {measured_gap:+.2f} ahead. The gap is the point: the hypothesis "
                            "alone carries cues to its label, the premise alone none.").format(
            report=report, tolerance=Q1_TOLERANCE, gap=gap, measured_gap=measured_gap))
    return _("{report}: both within {tolerance:.2f}. The premise alone stays at one in three (each premise comes with "
             "all three labels); the hypothesis alone beats it by reading annotation artefacts, such as negation "
             "words in contradictions (Gururangan et al. 2018; Poliak et al. 2018).").format(
        report=report, tolerance=Q1_TOLERANCE)


q1 = Exercise(
    name=N_("Q1 (predict: the premise alone, the hypothesis alone)"),
    var="prediction",
    checker=_check_q1,
    hints=[
        N_("Always answering the majority class gets 0.334: three balanced labels. Every validation premise "
           "comes with one hypothesis of each label. What can a model that reads only the premise do better "
           "than that?"),
        N_("The premise-only model stays at one in three. The hypotheses were written by annotators told to "
           "write a true, a possibly true and a false sentence about a photo's caption: do their false "
           "sentences look different from their true ones, even without the caption?"),
        N_("Gururangan et al. (2018) found negation words (not, nobody, never) marking contradictions and "
           "generic words (person, outdoors, animal) marking entailments: a bag of words on the hypotheses "
           "alone gets well above one in three, though far below a model of the pair."),
    ],
    solution=N_('''
# a prediction, not a computation; the check then runs the experiment (one_side_accuracies())
prediction = {"premise only": 0.33, "hypothesis only": 0.55}
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: the confusion matrix
# ---------------------------------------------------------------------------------------

def _cm_transposed(labels, predictions, num_classes):
    """rows and columns are swapped: entry [i, j] counts the examples of TRUE class i (the row)
    predicted as j (the column), as scikit-learn's confusion_matrix has it. Index with [label,
    prediction], not [prediction, label]."""
    return bert.confusion_matrix(labels, predictions, num_classes).T


def _cm_row_shares(labels, predictions, num_classes):
    """you divided each row by its sum (the share of each true class predicted as each class):
    return the counts themselves; the shares are a step you can take afterwards."""
    counts = bert.confusion_matrix(labels, predictions, num_classes).float()
    return counts / counts.sum(1, keepdim=True).clamp(min=1)


def _cm_divided_by_n(labels, predictions, num_classes):
    """you divided by the number of examples: return the counts themselves, whole numbers."""
    return bert.confusion_matrix(labels, predictions, num_classes).float() / len(labels)


def _cm_seen_classes(labels, predictions, num_classes):
    n = int(torch.cat([labels, predictions]).unique().numel())
    counts = torch.zeros(n, n, dtype=torch.long)
    for y, p in zip(labels, predictions):
        counts[y, p] += 1
    return counts


def _cm_indexed_add(labels, predictions, num_classes):
    """your matrix holds 1 for every (true class, prediction) that occurs, however often: counts[labels,
    predictions] += 1 counts a repeated (label, prediction) pair once (an indexed += reads the entries once and
    writes them back once), and counts[labels, predictions] = 1 marks instead of counting. Count every example:
    counts.index_put_((labels, predictions), torch.ones_like(labels), accumulate=True), torch.bincount(labels *
    num_classes + predictions, minlength=num_classes ** 2), or a loop."""
    counts = torch.zeros(num_classes, num_classes, dtype=torch.long)
    counts[labels, predictions] += 1
    return counts


_SEEN_ONLY = N_("your matrix has rows and columns only for the classes that occur (its size came from "
                "unique() or max()): a class can be missing from a small test set, and its row and column must "
                "still be there, full of zeros. Make it num_classes × num_classes.")


def _one_number(got, labels, predictions, num_classes) -> bool:
    if isinstance(got, torch.Tensor):
        return got.numel() == 1
    return isinstance(got, (int, float)) and not isinstance(got, bool)


Q2_DIAGNOSES = [
    _cm_transposed, _cm_row_shares, _cm_divided_by_n, _cm_indexed_add,
    (_cm_seen_classes, _SEEN_ONLY),        # raises an IndexError alike when the missing class is not the last
    (Symptom(lambda got, labels, predictions, num_classes: isinstance(got, torch.Tensor) and got.dim() == 2
             and got.shape[0] == got.shape[1] < num_classes), _SEEN_ONLY),
    (Symptom(_one_number), N_("you returned one number (the accuracy?): the confusion matrix keeps the count of "
                              "every (true class, prediction), a num_classes × num_classes tensor; the sum of its "
                              "diagonal divided by the number of examples is the accuracy.")),
    (Symptom(lambda got, labels, predictions, num_classes: isinstance(got, torch.Tensor)
             and tuple(got.shape) == (num_classes,)),
     N_("you returned one number per class (the diagonal: the right answers of each class?): the matrix also "
        "counts the mistakes, which class was taken for which, a num_classes × num_classes tensor.")),
]


def _q2_random(n: int, num_classes: int, seed: int) -> tuple:
    g = seeded(seed)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    guesses = torch.randint(0, num_classes, (n,), generator=g)
    right = torch.rand(n, generator=g) < 0.6               # a classifier right about 70% of the time
    return labels, torch.where(right, labels, guesses), num_classes


Q2_CASES = [
    (N_("3 classes, 8 examples"), (torch.tensor([0, 1, 2, 2, 1, 0, 2, 1]), torch.tensor([0, 2, 2, 1, 1, 0, 0, 1]), 3)),
    (N_("2 classes, 6 examples"), (torch.tensor([1, 1, 0, 1, 0, 1]), torch.tensor([1, 0, 0, 1, 1, 1]), 2)),
    (N_("3 classes, class 1 never occurs"), (torch.tensor([0, 2, 2, 0, 2]), torch.tensor([0, 2, 0, 2, 2]), 3)),
    (N_("4 classes, class 3 never occurs"), (torch.tensor([0, 1, 2, 2, 0, 1]), torch.tensor([0, 2, 2, 1, 0, 0]), 4)),
    (N_("one example"), (torch.tensor([2]), torch.tensor([0]), 3)),
    (N_("50 random examples, 4 classes"), _q2_random(50, 4, seed=10)),
]

# Not dependencies of the course: an answer whose own code names one of them is refused by name
_LIBRARIES = ("sklearn", "torchmetrics")


def _library_in(answer) -> str | None:
    """The library of :data:`_LIBRARIES` that the answer's own code names (an import inside it too)."""
    stack, names = [getattr(answer, "__code__", None)], set()
    while stack:
        code = stack.pop()
        if isinstance(code, types.CodeType):
            names.update(code.co_names)
            stack.extend(code.co_consts)
    return next((name.split(".")[0] for name in sorted(names) if name.split(".")[0] in _LIBRARIES), None)


def _check_q2(answer) -> str:
    library = _library_in(answer)
    if library is not None:
        raise CheckFailed(_("this exercise asks you to count by hand, without {library}, and your code uses it").format(
            library=library))
    return run_cases(answer, bert.confusion_matrix, Q2_CASES, Q2_DIAGNOSES)


q2 = Exercise(
    name=N_("Q2 (the confusion matrix)"),
    var="confusion_matrix",
    checker=_check_q2,
    forbidden=[(bert, "confusion_matrix", N_("the package's confusion_matrix"))],
    hints=[
        N_("Start from a num_classes × num_classes tensor of zeros (num_classes, not the number of classes you "
           "happen to see) and add 1 at [true class, predicted class] for every example."),
        N_("Rows are the truth: for y, p in zip(labels.tolist(), predictions.tolist()): counts[y, p] += 1. "
           "Return the counts, not shares."),
        N_("Without a loop: flat = labels * num_classes + predictions; torch.bincount(flat, "
           "minlength=num_classes ** 2).reshape(num_classes, num_classes)."),
    ],
    solution=N_('''
def confusion_matrix(labels, predictions, num_classes):
    counts = torch.zeros(num_classes, num_classes, dtype=torch.long)   # every class, seen or not
    for y, p in zip(labels.tolist(), predictions.tolist()):
        counts[y, p] += 1                      # row: the true class, column: the prediction
    return counts
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the hypothesis-only input
# ---------------------------------------------------------------------------------------

def _ref_hypothesis_only(ids, segments, sep_id):
    new_ids = torch.cat([ids[:1], ids[segments == 1]])
    return new_ids, torch.zeros_like(new_ids)


def _first_sep(ids, sep_id) -> int:
    return int((ids == sep_id).nonzero()[0, 0])


def _hyp_segments_kept(ids, segments, sep_id):
    """the hypothesis alone is a single text: every segment id is 0. Segment 1 marks a second text,
    and there is none."""
    return torch.cat([ids[:1], ids[segments == 1]]), torch.cat([segments[:1], segments[segments == 1]])


def _hyp_no_cls(ids, segments, sep_id):
    """[CLS] is missing: every BERT input starts with it (the classifier reads its state). Put
    ids[:1] in front."""
    kept = ids[segments == 1]
    return kept, torch.zeros_like(kept)


def _hyp_premise(ids, segments, sep_id):
    """you returned the premise, [CLS] premise [SEP] (segment 0); the hypothesis is the part with
    segment 1."""
    kept = ids[segments == 0]
    return kept, torch.zeros_like(kept)


def _hyp_premise_sep_kept(ids, segments, sep_id):
    """you kept the premise's [SEP]: the result has two [SEP]s, [CLS] [SEP] hypothesis [SEP].
    Take the hypothesis from after the first [SEP]."""
    first = _first_sep(ids, sep_id)
    kept = torch.cat([ids[:1], ids[first:first + 1], ids[segments == 1]])
    return kept, torch.zeros_like(kept)


def _hyp_from_first_sep(ids, segments, sep_id):
    """you started at the premise's [SEP]: that gives [SEP] hypothesis [SEP]. Start after it, and put
    [CLS] in front."""
    kept = ids[_first_sep(ids, sep_id):]
    return kept, torch.zeros_like(kept)


def _hyp_no_final_sep(ids, segments, sep_id):
    """the final [SEP] is missing: a single text is [CLS] text [SEP]."""
    kept = torch.cat([ids[:1], ids[segments == 1][:-1]])
    return kept, torch.zeros_like(kept)


def _sep_position_not_an_int(error, ids, segments, sep_id) -> bool:
    # ids.index(sep_id) on a tensor (a list's method; a tensor's index() is another one), or a slice
    # ids[first + 1:] whose bound is the tensor of both [SEP]s' positions (torch.where, nonzero)
    text = str(error)
    return ((isinstance(error, TypeError) and ("Tensor.index()" in text
                                               or "only integer tensors of a single element" in text))
            or (isinstance(error, AttributeError) and "'index'" in text))


Q3_DIAGNOSES = [
    _hyp_segments_kept, _hyp_no_cls, _hyp_premise, _hyp_premise_sep_kept, _hyp_from_first_sep, _hyp_no_final_sep,
    (Symptom(lambda got, ids, segments, sep_id: len(got[0]) != len(got[1])),
     N_("ids and segments must have the same length (one segment id per token).")),
    (Symptom(_sep_position_not_an_int, raised=True),
     N_("your code needs the position of the FIRST [SEP] as a Python int: ids is a tensor, whose .index() is "
        "not a list's, and torch.where(ids == sep_id)[0] (or nonzero()) holds the positions of both [SEP]s, a "
        "tensor that cannot bound a slice. Take first = int((ids == sep_id).nonzero()[0]), or "
        "ids.tolist().index(sep_id).")),
]

# Pairs of SNLI's test set (the last two made up: a premise, then a hypothesis, of one word piece)
Q3_PAIRS = (
    (N_("an entailment pair of SNLI's test set"),
     Pair("A man playing an electric guitar on stage .", "A man playing guitar on stage .", 0)),
    (N_("a long premise (contradiction)"),
     Pair("One tan girl with a wool hat is running and leaning over an object , while another person in a wool "
          "hat is sitting on the ground .", "A boy runs into a wall", 2)),
    (N_("a hypothesis with a word in two pieces (neutral)"),
     Pair("A man reads the paper in a bar with green lighting .", "The man is reading the sportspage .", 1)),
    (N_("a premise of one word piece"), Pair("Dancers", "People are dancing outside .", 0)),
    (N_("a hypothesis of one word piece"), Pair("A man sleeps on a park bench .", "Sleeping", 0)),
)


@functools.lru_cache(maxsize=1)
def _q3_cases() -> tuple:
    """Q3_PAIRS encoded by MiniLM's tokenizer as the chapter encodes them (built at the first check)."""
    tokenizer = load_pretrained("minilm").tokenizer
    sep_id = special_ids(tokenizer)["[SEP]"]
    enc = encode_pairs(tokenizer, [pair for _d, pair in Q3_PAIRS])
    return tuple((description, (torch.tensor(ids), torch.tensor(segments), sep_id))
                 for (description, _p), ids, segments in zip(Q3_PAIRS, enc.ids, enc.segments))


def _int_list(x, what: str) -> list:
    """A 1-D integer tensor or a list of ints -> a list of ints (else CheckFailed)."""
    if isinstance(x, torch.Tensor):
        if x.dim() != 1 or x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
            raise CheckFailed(_("{what}: expected a 1-D tensor of integers (or a list of ints), got a tensor of shape "
                                "{shape} and dtype {dtype}; ids and segment ids are whole numbers, "
                                "torch.long").format(what=what, shape=tuple(x.shape), dtype=x.dtype))
        return x.tolist()
    if not isinstance(x, (list, tuple)) or not all(type(v) is int for v in x):
        raise CheckFailed(_("{what}: expected a 1-D tensor of integers (or a list of ints), got {type} "
                            "{x!r:.60}").format(what=what, type=type(x).__name__, x=x))
    return list(x)


def _q3_result(got, where, *args) -> tuple:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(_("on {where}: return two tensors, (ids, segments); got {type}").format(
            where=where, type=type(got).__name__))
    return (_int_list(got[0], _("on {where}, ids").format(where=where)),
            _int_list(got[1], _("on {where}, segments").format(where=where)))


def _show(seq) -> str:
    return " ".join(str(v) for v in seq)


def _q3_message(got, expected, where) -> str:
    return _("on {where}: expected ids [{ids}] with segments [{segments}], got [{got_ids}] with [{got_segments}] "
             "({cls} is [CLS], {sep} is [SEP])").format(
        where=where, ids=_show(expected[0]), segments=_show(expected[1]), got_ids=_show(got[0]),
        got_segments=_show(got[1]), cls=expected[0][0], sep=expected[0][-1])


_q3_equal = equal_values(_q3_message)


def _q3_compare(got, expected, where) -> None:
    # the reference and the mistakes return tensors; the learner's result is already two lists
    _q3_equal(got, tuple(x.tolist() if isinstance(x, torch.Tensor) else x for x in expected), where)


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_hypothesis_only, _q3_cases(), Q3_DIAGNOSES, prepare=_q3_result,
                     compare=_q3_compare)


q3 = Exercise(
    name=N_("Q3 (the hypothesis-only input)"),
    var="hypothesis_only",
    checker=_check_q3,
    hints=[
        N_("The pair is [CLS] premise [SEP] hypothesis [SEP], and segments says which text each position belongs "
           "to: 0 for [CLS] premise [SEP], 1 for hypothesis [SEP]."),
        N_("Keep [CLS] (position 0) and the positions whose segment is 1: torch.cat([ids[:1], ids[segments == 1]]). "
           "The result is a single text: all its segment ids are 0."),
        N_("new_ids = torch.cat([ids[:1], ids[segments == 1]]); return new_ids, torch.zeros_like(new_ids). "
           "(Or with sep_id: everything after the first [SEP], first = int((ids == sep_id).nonzero()[0, 0]).)"),
    ],
    solution=N_('''
def hypothesis_only(ids, segments, sep_id):
    # [CLS] premise [SEP] | hypothesis [SEP]: segment 1 is exactly "hypothesis [SEP]"
    new_ids = torch.cat([ids[:1], ids[segments == 1]])     # [CLS] hypothesis [SEP]
    return new_ids, torch.zeros_like(new_ids)              # a single text: every segment id is 0
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 10)"), [
    Question(
        N_("Every validation premise comes with one hypothesis of each label. A classifier that reads only the "
           "premise: what is the best accuracy it can reach on that validation set?"),
        options=(
            Option(N_("One third: whatever it answers for a premise, exactly one of its three pairs has that label."),
                   why=N_("Right: the same input must get three different labels, so every answer is right for one "
                          "pair in three, and no model, however large, can do better."), correct=True),
            Option(N_("One half: it can learn to rule out one of the three labels for each premise."),
                   why=N_("Ruling a label out does not help: each premise comes with all three labels, so whatever "
                          "it answers is right for exactly one of its three pairs.")),
            Option(N_("More than one third, when the training set's labels are unbalanced: it can learn the majority "
                      "class."),
                   why=N_("The training labels do not matter here: on this validation set each label is a third of "
                          "the pairs, and each premise's three pairs ask three different answers of one input.")),
            Option(N_("It depends on the model: a large enough one can reach any accuracy."),
                   why=N_("No model can: the bound comes from the data. One input (the premise) gets one answer, "
                          "and its three pairs need three different ones.")),
        )),
    Question(
        N_("A model that reads only the hypothesis beats the majority class by 20 points. What does this show?"),
        options=(
            Option(N_("The model understands entailment."),
                   why=N_("It never saw the premise: there is nothing to entail from. It reads cues in the "
                          "hypothesis alone.")),
            Option(N_("The hypotheses carry cues to their labels (annotation artefacts); a pair model's accuracy "
                      "mixes reading the pair with reading such cues."),
                   why=N_("Right: annotators wrote contradictions with negations (not, nobody) and entailments with "
                          "generic words (person, outdoors) (Gururangan et al. 2018; Poliak et al. 2018). A pair "
                          "model can score with these cues too, so its accuracy overstates how well it reads the "
                          "pair."), correct=True),
            Option(N_("The test set leaks into training."),
                   why=N_("No: no premise is in two splits. The cues come from how the hypotheses were written, by "
                          "annotators with the same habits in every split: a property of the data, not a leak.")),
            Option(N_("The premise is not needed for NLI."),
                   why=N_("The task needs it: one hypothesis can be entailed by one premise and contradicted by "
                          "another. It shows that the data has a shortcut, not that the task has one.")),
        )),
    Question(
        N_("After swapping premise and hypothesis, the predictions for which true label should change most often?"),
        options=(
            Option(N_("Entailment."),
                   why=N_("Right: entailment goes one way. 'A man plays a guitar' entails 'A person plays music', "
                          "but the reverse is usually neutral: a person playing music need not be a man with a "
                          "guitar. Contradiction is nearly symmetric."), correct=True),
            Option(N_("Neutral."),
                   why=N_("Less often than entailment: a neutral pair often stays neutral swapped, since each text "
                          "says things the other does not; only a hypothesis that merely adds a detail becomes "
                          "entailed when swapped. Section 4 measures it: entailments change most often.")),
            Option(N_("Contradiction."),
                   why=N_("Contradiction is nearly symmetric: if the premise rules the hypothesis out, the "
                          "hypothesis rules the premise out ('a man is sleeping' and 'a man is running').")),
            Option(N_("None: a good model is symmetric."),
                   why=N_("A good model must not be symmetric: entailment goes one way, so a model that gives a "
                          "pair and its swap the same label is wrong on one of them for most entailment pairs.")),
        )),
    Question(
        N_("A pair model gets 0.70 accuracy on 1,000 test pairs. What is the binomial standard error of that "
           "accuracy, in percentage points? (a number, e.g. 2.5)"),
        answer=1.449, tolerance=0.06,
        why=N_("Right: sqrt(0.7 × 0.3 / 1000) = 0.0145, 1.45 points. Two models a point or two apart on these "
               "1,000 pairs are within noise of each other."),
        why_low=N_("Too low: 0.7 × 0.3 / 1000 = 0.00021 is the variance; the standard error is its square root, "
                   "0.0145, which is 1.45 percentage points."),
        why_high=N_("Too high: divide p(1 − p) by n before taking the square root: sqrt(0.7 × 0.3 / 1000) = 0.0145, "
                    "1.45 percentage points (sqrt(0.21) = 0.46 is the spread of one pair, not of a mean over "
                    "1,000)."),
    ),
])

"""Chapter 6 exercises: next sentence prediction.

In the notebook::

    from bertcourse.exercises.ch06 import q1, q2, q3, q4, q5, quiz, q1_pairs

* ``q1`` — ``pair_labels``: the labels (0 = IsNext, 1 = NotNext) of six pairs drawn from
  the corpus by :func:`bertcourse.data.make_nsp_pair` (``q1_pairs()`` lists them).
* ``q2`` — ``my_truncate_pair(tokens_a, tokens_b, max_len)``: make ``[CLS] A [SEP] B [SEP]``
  fit, cutting the longer sentence first.
* ``q3`` — ``nsp_logits_by_hand(encoded, pool_w, pool_b, cls_w, cls_b)``: the NSP head
  (pooler + classifier) on the ``[CLS]`` state, written with tensor operations.
* ``q4`` — ``nsp_cross_entropy(logits, labels)``: the NSP loss.
* ``q5`` — ``prediction``: *before* running the experiment, predict at how many positions
  the NSP loss's gradient is non-zero, in the last block's output and in the embeddings.
  The check runs the experiment itself (:func:`nsp_gradient_positions`).
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

The references are the package's :func:`bertcourse.data.make_nsp_pair` (through the pair
sampler :func:`bertcourse.data.sample_pair`), :func:`bertcourse.data.truncate_pair`,
:class:`bertcourse.bert.Pooler` + :class:`bertcourse.bert.NextSentencePred`, and
:func:`bertcourse.pretrain.nsp_loss`.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from .. import bert, data

from ..bert import BERTModel, NextSentencePred, Pooler, get_config
from ..data import IS_NEXT, NOT_NEXT, PretrainDataset, generate_corpus, get_tokenizer, sample_pair, truncate_pair
from ..pretrain import nsp_loss
from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, Exercise, check_positive_int, equal_values, randn, run_cases, seeded
from .guesses import predicted_dict
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "q1_pairs", "nsp_gradient_positions", "Q5_KEYS"]


# ---------------------------------------------------------------------------------------
# Q1: label six pairs
# ---------------------------------------------------------------------------------------

# Draws of the pair sampler (seed 5) whose labels a careful reader can tell from the text
Q1_SEED, Q1_DRAWS = 5, (6, 3, 9, 11, 14, 12)


def _q1_examples() -> list:
    paragraphs = generate_corpus(0).train
    return [sample_pair(paragraphs, Q1_SEED, d)[:3] for d in Q1_DRAWS]


def q1_pairs() -> list:
    """The six ``(sentence_a, sentence_b)`` pairs of Q1."""
    return [(a, b) for a, b, _ in _q1_examples()]


def _ref_pair_labels() -> list:
    return [label for _, _, label in _q1_examples()]


def _check_q1(answer) -> str:
    expected = _ref_pair_labels()
    if isinstance(answer, torch.Tensor):
        answer = answer.tolist()
    if not isinstance(answer, (list, tuple)):
        raise CheckFailed(_("pair_labels must be a list of {n} labels, got {type}").format(
            n=len(expected), type=type(answer).__name__))
    if len(answer) != len(expected):
        raise CheckFailed(_("pair_labels must hold {n} labels (one per pair), got {got}").format(
            n=len(expected), got=len(answer)))
    for i, x in enumerate(answer):
        if isinstance(x, str):
            raise CheckFailed(_("label {i} is the string {x!r}: write the numbers, {is_next} for IsNext and "
                                "{not_next} for NotNext").format(i=i, x=x, is_next=IS_NEXT, not_next=NOT_NEXT))
        if isinstance(x, bool) or x not in (IS_NEXT, NOT_NEXT):
            raise CheckFailed(_("label {i} is {x!r}; a label is {is_next} (IsNext: B follows A) or {not_next} "
                                "(NotNext: B is random)").format(i=i, x=x, is_next=IS_NEXT, not_next=NOT_NEXT))
    answer = [int(x) for x in answer]
    if answer == [1 - x for x in expected]:
        raise CheckFailed(_("every label is flipped: you used 1 = IsNext (as d2l's code does). This course "
                            "follows Hugging Face: 0 = IsNext (B follows A), 1 = NotNext (B is random)."))
    wrong = [i for i, (x, y) in enumerate(zip(answer, expected)) if x != y]
    if wrong:
        i = wrong[0]
        raise CheckFailed(_("{wrong} of {n} labels are wrong, the first is pair {i} (you wrote {got}). Who is B "
                            "about? Does its pronoun fit A?").format(wrong=len(wrong), n=len(expected), i=i,
                                                                     got=answer[i]))
    return _("all {n} labels right (0 = IsNext, 1 = NotNext)").format(n=len(expected))


q1 = Exercise(
    name=N_("Q1 (label the pairs)"),
    var="pair_labels",
    checker=_check_q1,
    hints=[
        N_("The labels follow Hugging Face: 0 = IsNext (B is the sentence after A), 1 = NotNext "
           "(B is a random sentence of another paragraph)."),
        N_("A paragraph stays on one entity. If B talks about somebody or something else, uses the "
           "wrong pronoun (she after a man, it after a person), or is a first sentence that introduces "
           "someone ('meet ...'), it is probably random."),
    ],
    solution=N_('''
pair_labels = [
    1,   # a person is introduced ("meet ..."), then an animal eats berries: another paragraph
    0,   # a judge called ugeirn, then "she has a sister called ... ugeirn": the same family
    0,   # stuthaa gets up at dawn, "then stuthaa goes to the court": the day goes on
    1,   # "he speaks ...", then "she goes to a forge": the pronoun changed
    1,   # a nurse, then "the jeileisvyo is a tiny animal": the first sentence of an animal paragraph
    0,   # he keeps a fesreses, then "the fesreses lives in the forest": a chain about the pet
]
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: truncate a pair
# ---------------------------------------------------------------------------------------

def _ref_truncate(tokens_a, tokens_b, max_len):
    return truncate_pair(tokens_a, tokens_b, max_len)


def _trunc_front(a, b, max_len):
    """you removed tokens from the front; remove the LAST token of the longer sentence."""
    a, b = list(a), list(b)
    while len(a) + len(b) + 3 > max_len:
        (a if len(a) > len(b) else b).pop(0)
    return a, b


def _trunc_a_first(a, b, max_len):
    """cut the longer sentence, one token at a time, not always A first: a short sentence is
    only touched once the long one is as short."""
    a, b = list(a), list(b)
    while len(a) + len(b) + 3 > max_len:
        (a if a else b).pop()
    return a, b


def _trunc_no_specials(a, b, max_len):
    """the limit counts [CLS] and the two [SEP] as well: len(A) + len(B) + 3 <= max_len."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_len:
        (a if len(a) > len(b) else b).pop()
    return a, b


def _trunc_ties_a(a, b, max_len):
    """when A and B are equally long, B loses its last token (cut A only when it is strictly
    longer)."""
    a, b = list(a), list(b)
    while len(a) + len(b) + 3 > max_len:
        (a if len(a) >= len(b) else b).pop()
    return a, b


def _trunc_two_specials(a, b, max_len):
    """a pair has three special tokens, [CLS] A [SEP] B [SEP]: len(A) + len(B) + 3 <=
    max_len."""
    a, b = list(a), list(b)
    while len(a) + len(b) + 2 > max_len:
        (a if len(a) > len(b) else b).pop()
    return a, b


def _words(prefix: str, n: int) -> list:
    return [f"{prefix}{i}" for i in range(n)]


Q2_CASES = [
    (N_("A 10 tokens, B 4, max_len 12 (only A is cut)"), (_words("a", 10), _words("b", 4), 12)),
    (N_("A 3 tokens, B 9, max_len 10 (only B is cut)"), (_words("a", 3), _words("b", 9), 10)),
    (N_("A 6, B 6, max_len 12 (equally long: B loses a token first)"), (_words("a", 6), _words("b", 6), 12)),
    (N_("A 8, B 5, max_len 11 (A is cut to B's length, then both take turns)"), (_words("a", 8), _words("b", 5), 11)),
    (N_("the pair already fits (A 2, B 3, max_len 8)"), (_words("a", 2), _words("b", 3), 8)),
    (N_("max_len 3: only [CLS] [SEP] [SEP] fit"), (_words("a", 4), _words("b", 2), 3)),
    (N_("B is empty"), (_words("a", 7), [], 6)),
]

Q2_DIAGNOSES = [_trunc_front, _trunc_no_specials, _trunc_two_specials, _trunc_ties_a,
                _trunc_a_first]


def _q2_result(got, where, *args) -> tuple:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(_("on {where}: return a pair (tokens_a, tokens_b), got {got!r}").format(where=where, got=got))
    return list(got[0]), list(got[1])


def _check_q2(answer) -> str:
    run_cases(answer, _ref_truncate, Q2_CASES, Q2_DIAGNOSES, prepare=_q2_result,
              compare=equal_values(N_("on {where}: expected A={expected[0]}, B={expected[1]}; "
                                      "got A={got[0]}, B={got[1]}")),
              in_place=N_("on {where}: the result is right, but you changed the lists you were given "
                          "(the caller's sentences lost tokens). Copy them first: "
                          "a, b = list(tokens_a), list(tokens_b)."))
    return _("correct on all {n} cases (the longer sentence loses its last token first)").format(n=len(Q2_CASES))


q2 = Exercise(
    name=N_("Q2 (truncate a pair)"),
    var="my_truncate_pair",
    checker=_check_q2,
    forbidden=[(data, "truncate_pair", "truncate_pair")],
    hints=[
        N_("The pair takes len(A) + len(B) + 3 positions ([CLS], [SEP], [SEP]). While that is more "
           "than max_len, remove one token."),
        N_("Which one? The last token of the longer sentence; of B when both are equally long."),
        N_("Work on copies (list(tokens_a)) so that the caller's lists stay as they were; list.pop() "
           "removes the last element."),
    ],
    solution=N_('''
def my_truncate_pair(tokens_a, tokens_b, max_len):
    a, b = list(tokens_a), list(tokens_b)          # copies: never change the caller's lists
    while len(a) + len(b) + 3 > max_len:           # [CLS] A [SEP] B [SEP]
        (a if len(a) > len(b) else b).pop()        # the longer one loses its last token
    return a, b
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the NSP head by hand
# ---------------------------------------------------------------------------------------

def _ref_head(encoded, pool_w, pool_b, cls_w, cls_b):
    hidden = encoded.shape[-1]
    pooler, classifier = Pooler(hidden), NextSentencePred(hidden)
    with torch.no_grad():
        pooler.dense.weight.copy_(pool_w)
        pooler.dense.bias.copy_(pool_b)
        classifier.output.weight.copy_(cls_w)
        classifier.output.bias.copy_(cls_b)
        return classifier(pooler(encoded))


def _head_mean(encoded, pool_w, pool_b, cls_w, cls_b):
    """you averaged over the sequence; BERT's head reads only the [CLS] state, encoded[:, 0]."""
    return torch.tanh(encoded.mean(1) @ pool_w.T + pool_b) @ cls_w.T + cls_b


def _head_last(encoded, pool_w, pool_b, cls_w, cls_b):
    """you read the last position; [CLS] is the FIRST token: encoded[:, 0]."""
    return torch.tanh(encoded[:, -1] @ pool_w.T + pool_b) @ cls_w.T + cls_b


def _head_no_tanh(encoded, pool_w, pool_b, cls_w, cls_b):
    """the pooler is dense + tanh: torch.tanh(cls @ pool_w.T + pool_b)."""
    return (encoded[:, 0] @ pool_w.T + pool_b) @ cls_w.T + cls_b


def _head_no_transpose(encoded, pool_w, pool_b, cls_w, cls_b):
    """nn.Linear stores its weight as (out_features, in_features) and computes x @ weight.T +
    bias; you multiplied by the weight without .T (same shape here, so no error — but the
    wrong numbers)."""
    return torch.tanh(encoded[:, 0] @ pool_w + pool_b) @ cls_w.T + cls_b


def _head_no_pooler(encoded, pool_w, pool_b, cls_w, cls_b):
    """you skipped the pooler: the classifier reads tanh(dense(cls)), not cls itself."""
    return encoded[:, 0] @ cls_w.T + cls_b


def _head_flattened(encoded, pool_w, pool_b, cls_w, cls_b):
    """you flattened the whole sequence into the pooler (the pitfall "flattening the whole
    sequence into the classifier"): the pooler reads one state, encoded[:, 0], (batch, hidden)."""
    return torch.tanh(encoded.flatten(1) @ pool_w.T + pool_b) @ cls_w.T + cls_b


def _head_cls_w_not_transposed(encoded, pool_w, pool_b, cls_w, cls_b):
    """cls_w is stored like nn.Linear's weight, (2, hidden): multiply by cls_w.T (or use
    F.linear(pooled, cls_w, cls_b))."""
    return torch.tanh(encoded[:, 0] @ pool_w.T + pool_b) @ cls_w + cls_b


def _head_softmax(encoded, pool_w, pool_b, cls_w, cls_b):
    """you returned probabilities (a softmax over the two classes): the head returns logits, and
    the loss (cross-entropy) applies the softmax itself. Leave the softmax out."""
    return torch.softmax(_ref_head(encoded, pool_w, pool_b, cls_w, cls_b), dim=-1)


def _q3_case(batch: int, seq: int, hidden: int, seed: int):
    g = seeded(seed)
    return (randn(batch, seq, hidden, seed=g), randn(hidden, hidden, seed=g) / hidden ** 0.5,
            randn(hidden, seed=g, scale=0.1), randn(2, hidden, seed=g), randn(2, seed=g, scale=0.1))


Q3_CASES = [
    (N_("batch=3, seq=5, hidden=8"), _q3_case(3, 5, 8, 1)),
    (N_("a batch of one, seq=7, hidden=4"), _q3_case(1, 7, 4, 2)),
    (N_("seq=1 (only [CLS])"), _q3_case(2, 1, 6, 3)),
    (N_("hidden=16, seq=12"), _q3_case(2, 12, 16, 4)),
]

Q3_DIAGNOSES = [_head_mean, _head_last, _head_no_tanh, _head_no_transpose, _head_no_pooler, _head_softmax,
                _head_flattened, _head_cls_w_not_transposed]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_head, Q3_CASES, Q3_DIAGNOSES)


q3 = Exercise(
    name=N_("Q3 (the NSP head by hand)"),
    var="nsp_logits_by_hand",
    checker=_check_q3,
    hints=[
        N_("Three steps: cls = encoded[:, 0] (batch, hidden); pooled = tanh(cls @ pool_w.T + pool_b); "
           "logits = pooled @ cls_w.T + cls_b (batch, 2)."),
        N_("The weights are stored like nn.Linear's: pool_w is (hidden_out, hidden_in), cls_w is (2, hidden). "
           "F.linear(x, w, b) computes x @ w.T + b."),
    ],
    solution=N_('''
def nsp_logits_by_hand(encoded, pool_w, pool_b, cls_w, cls_b):
    cls = encoded[:, 0]                                   # (batch, hidden): only [CLS]
    pooled = torch.tanh(cls @ pool_w.T + pool_b)          # the pooler: dense + tanh
    return pooled @ cls_w.T + cls_b                       # (batch, 2)
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: the NSP loss
# ---------------------------------------------------------------------------------------

def _ref_nsp(logits, labels):
    return nsp_loss(logits, labels)


def _nsp_flipped(logits, labels):
    """your labels are flipped: column 0 is IsNext and label 0 means IsNext, so the loss is
    -log softmax(logits)[label] with the label as given."""
    return F.cross_entropy(logits, 1 - labels)


def _nsp_sum(logits, labels):
    """you summed over the batch; take the mean."""
    return F.cross_entropy(logits, labels, reduction="sum")


def _nsp_no_log(logits, labels):
    """cross-entropy is -log p(label), not 1 - p(label)."""
    p = torch.softmax(logits, -1).gather(1, labels[:, None]).squeeze(1)
    return (1 - p).mean()


def _nsp_no_softmax(logits, labels):
    """a loss needs log-probabilities: log_softmax(logits), not the raw logits."""
    return -logits.gather(1, labels[:, None]).squeeze(1).mean()


def _q4_case(batch: int, labels, seed: int):
    return randn(batch, 2, seed=seed, scale=2.0), torch.tensor(labels)


Q4_CASES = [
    (N_("6 pairs, labels [0, 1, 1, 0, 0, 1]"), _q4_case(6, [0, 1, 1, 0, 0, 1], 1)),
    (N_("all IsNext"), _q4_case(3, [0, 0, 0], 2)),
    (N_("one pair, NotNext"), _q4_case(1, [1], 3)),
    (N_("confident logits (|logit| up to ~20)"), (torch.tensor([[20.0, -20.0], [-15.0, 15.0], [3.0, -1.0]]),
                                              torch.tensor([0, 0, 1]))),
]

def _log_p(logits):
    return torch.log_softmax(logits, dim=-1)


def _sized(template: str):
    # a diagnosis message: `template` (marked with N_) filled in with the case's sizes
    return lambda logits, labels: _(template).format(batch=len(labels), dtype=str(labels.dtype).removeprefix("torch."))


_FLOAT_LABELS = _sized(N_(
    "the labels are class ids that pick a column, so they must stay whole numbers: labels is {dtype}, and .float() "
    "makes them unusable as an index (or for F.one_hot). Use them as they are: log_p[torch.arange(batch), labels]."))

# A mistake that raises is named when the learner's code raises alike, with the case's sizes; the others when
# their numbers are the learner's.
Q4_DIAGNOSES = [
    _nsp_flipped, _nsp_sum, _nsp_no_softmax, _nsp_no_log,
    (lambda lo, la: -_log_p(lo)[torch.arange(len(la)), la.float()].mean(), _FLOAT_LABELS),
    (lambda lo, la: -_log_p(lo).gather(1, la[:, None].float()).mean(), _FLOAT_LABELS),
    (lambda lo, la: -(_log_p(lo) * F.one_hot(la.float(), 2)).sum(-1).mean(), _FLOAT_LABELS),
    (lambda lo, la: -_log_p(lo).gather(1, la).mean(), _sized(N_(
        "log_p.gather(1, index) needs an index with the two axes of the (batch, 2) = ({batch}, 2) log-probabilities: "
        "labels is (batch,) = ({batch},), so make it a column, labels[:, None], ({batch}, 1), then .squeeze(1)."))),
    (lambda lo, la: -_log_p(lo)[torch.arange(2), la].mean(), _sized(N_(
        "the row index counts the pairs, torch.arange(batch) = torch.arange({batch}) (len(labels)), one row per "
        "label; torch.arange(2) counts the two classes, which the labels already pick."))),
    (lambda lo, la: -(_log_p(lo) * la).sum(-1).mean(), _sized(N_(
        "labels is (batch,) = ({batch},), one class id per pair, not a one-hot (batch, 2) table: it does not line up "
        "with the (batch, 2) = ({batch}, 2) log-probabilities. Pick each pair's column, log_p[torch.arange(batch), "
        "labels], or make the table with F.one_hot(labels, num_classes=2)."))),
    (lambda lo, la: -_log_p(lo.T)[torch.arange(len(la)), la].mean(), _sized(N_(
        "logits is already (batch, 2) = ({batch}, 2), one row per pair and a column per class: no transpose. "
        "log_softmax over the last axis, then log_p[torch.arange(batch), labels]."))),
    (lambda lo, la: -_log_p(lo)[la, torch.arange(len(la))].mean(), _sized(N_(
        "you swapped the two indices: the rows are the {batch} pairs and the columns the 2 classes, so "
        "log_p[torch.arange(batch), labels], pair index first."))),
    (lambda lo, la: -torch.log_softmax(lo)[torch.arange(len(la)), la].mean(), _sized(N_(
        "torch.log_softmax needs the axis of the classes: dim=-1, the 2 logits of each pair (logits is (batch, 2) = "
        "({batch}, 2))."))),
    # near misses: the code runs, one known step is off
    (lambda lo, la: -_log_p(lo)[:, la].mean(), _sized(N_(   # or a (batch, 1) column of rows, as in chapter 5
        "your picks form a (batch, batch) = ({batch}, {batch}) table, every pair's log-probabilities with every "
        "pair's label (log_p[:, labels], or a (batch, 1) column of row indices against the (batch,) labels). Pair i "
        "needs its own label only: log_p[torch.arange(batch), labels], two (batch,) indices side by side."))),
    (lambda lo, la: -_log_p(lo)[la].mean(), N_(
        "log_p[labels] picks whole rows (pair 0 or pair 1) by the label; the label picks a column of each pair: "
        "log_p[torch.arange(batch), labels].")),
    (lambda lo, la: -_log_p(lo).gather(0, la[:, None]).mean(), N_(
        "gather(0, ...) picks along axis 0, the pairs; a label picks one of the 2 columns: log_p.gather(1, "
        "labels[:, None]).")),
    (lambda lo, la: -torch.log_softmax(lo, dim=0)[torch.arange(len(la)), la].mean(), N_(
        "your log_softmax normalised over axis 0, the pairs of the batch; each pair's 2 classes are the last axis: "
        "torch.log_softmax(logits, dim=-1).")),
    (lambda lo, la: -(_log_p(lo) * F.one_hot(la)).sum(-1).mean(), N_(
        "F.one_hot(labels) guesses the number of classes from the largest label, so a batch of only IsNext (0) gets "
        "a single column: say it, F.one_hot(labels, num_classes=2).")),
    (lambda lo, la: -_log_p(lo)[torch.arange(len(la)), la], _sized(N_(
        "you returned one loss per pair, (batch,) = ({batch},): the loss is their mean, a single number (.mean())."))),
]


def _q4_result(got, where, *args):
    # a Python float is fine too
    return torch.as_tensor(got, dtype=torch.float32) if isinstance(got, float) else got


def _check_q4(answer) -> str:
    return run_cases(answer, _ref_nsp, Q4_CASES, Q4_DIAGNOSES, prepare=_q4_result)


q4 = Exercise(
    name=N_("Q4 (the NSP loss)"),
    var="nsp_cross_entropy",
    checker=_check_q4,
    forbidden=[(F, "cross_entropy", N_("F.cross_entropy (nn.CrossEntropyLoss calls it)")),
               (bert, "nsp_loss", "nsp_loss")],
    hints=[
        N_("For each pair: log-probabilities log_softmax(logits) over the 2 classes, pick the one of "
           "its label, negate. Then average over the batch."),
        N_("torch.log_softmax(logits, dim=-1) is (batch, 2); .gather(1, labels[:, None]) picks each "
           "row's label column."),
        N_("-torch.log_softmax(logits, -1)[torch.arange(len(labels)), labels].mean()"),
    ],
    solution=N_('''
def nsp_cross_entropy(logits, labels):
    # logits: (batch, 2), labels: (batch,) with 0 = IsNext, 1 = NotNext
    log_p = torch.log_softmax(logits, dim=-1)
    return -log_p[torch.arange(len(labels)), labels].mean()
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — where does the NSP gradient reach?
# ---------------------------------------------------------------------------------------

Q5_KEYS = ("last layer", "embeddings")
"""q5's two places: the last block's output and the embedding layer's output."""


@functools.lru_cache(maxsize=None)
def _nsp_gradient_positions(seed: int) -> dict:
    corpus, tok = generate_corpus(seed), get_tokenizer(seed)
    example = PretrainDataset(corpus.held_out[:40], tok, max_len=32)[0]         # section 3's first pair
    with torch.random.fork_rng(devices=[]):      # leave the notebook's random numbers alone
        torch.manual_seed(seed)
        model = BERTModel(get_config("tiny", vocab_size=len(tok.vocab))).eval()
    tokens, segments = example["tokens"][None], example["segments"][None]       # (1, 32)
    valid_lens = example["valid_lens"][None]                                    # (1,)
    encoded, hidden = model.encoder(tokens, segments, valid_lens, return_hidden_states=True)
    for h in hidden:
        h.retain_grad()                      # keep the gradient of these intermediate tensors
    nsp_loss(model.nsp(model.pooler(encoded)), example["nsp_labels"][None]).backward()
    reached = [int((h.grad[0].abs().amax(-1) > 0).sum()) for h in hidden]      # per hidden state
    return {"real tokens": int(valid_lens), "positions": tokens.shape[1], "per layer": reached}


def nsp_gradient_positions(seed: int = 0) -> dict:
    """The experiment of q5. Section 3's first pair (the held-out pairs with ``max_len=32``)
    goes through a fresh, seeded tiny :class:`~bertcourse.bert.BERTModel` (eval mode); its
    NSP loss is backpropagated. Returns ``{"real tokens", "positions", "per layer"}``:
    ``per layer[k]`` is the number of positions whose gradient is non-zero in hidden state
    ``k`` (0 = the embedding layer's output, then the output of each block)."""
    check_positive_int("seed", seed, allow_zero=True)     # before the cache: a list cannot be a key
    result = _nsp_gradient_positions(seed)
    return {**result, "per layer": list(result["per layer"])}


_Q5_WHY = {
    ("last layer", "more"): N_("the pooler reads only position 0 of the last block's output (X[:, 0]); no other "
                               "state of that layer takes part in the NSP loss, so its gradient is exactly 0."),
    ("last layer", "fewer"): N_("the [CLS] state of the last layer does reach the loss, through the pooler."),
    ("embeddings", "more"): N_("padding: every query gives the padded keys a weight of exactly 0, so nothing "
                               "computed from a padded position ever reaches [CLS]: their gradient is exactly 0."),
    ("embeddings", "fewer"): N_("attention carries the gradient down: in every block the [CLS] query reads the "
                                "keys and values of every real token, so the last [CLS] state depends on every "
                                "real position of the layer below — and so on down to the embeddings."),
}


def _check_q5(answer) -> str:
    measured = nsp_gradient_positions()
    n = measured["positions"]
    guess = predicted_dict(answer, Q5_KEYS, "prediction", _("a count of positions from 0 to {n} each "
                           "({{'last layer': <count>, 'embeddings': <count>}})").format(n=n), low=0, high=n,
                           must=_("a whole number from 0 to {n}").format(n=n),
                           in_range=_("a count of positions from 0 to {n}").format(n=n),
                           whole=True, blank=_("a count from 0 to {n}").format(n=n))
    truth = {"last layer": measured["per layer"][-1], "embeddings": measured["per layer"][0]}
    wrong = [k for k in Q5_KEYS if guess[k] != truth[k]]
    if wrong:
        raise CheckFailed(_(" And ").join(
            (_("{key!r}: {guess} is too many: {why}") if guess[k] > truth[k] else
             _("{key!r}: {guess} is too few: {why}")).format(
                key=k, guess=guess[k], why=_(_Q5_WHY[k, "more" if guess[k] > truth[k] else "fewer"])) for k in wrong))
    return _("last layer: {last} position ([CLS]); embeddings: {embeddings} positions, every real token and no "
             "padding. The head reads one state, but attention has made that state a summary of the whole pair, "
             "so NSP trains every token's embedding.").format(last=truth["last layer"], embeddings=truth["embeddings"])


q5 = Exercise(
    name=N_("Q5 (predict: where the NSP gradient reaches)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("Section 3: the NSP head reads one hidden state of the last layer. Which one?"),
        N_("That state was computed by attention over the layer below it. Which positions' keys and "
           "values did the [CLS] query read — all 32, or only some?"),
        N_("Padded keys get a weight of exactly 0 in every query's softmax."),
    ],
    solution=N_('''
# The pooler reads only X[:, 0], so in the last block's output only [CLS] gets a gradient.
# But that [CLS] state attended to every real token of the layer below (padding gets weight
# exactly 0), and those to every real token below them: in the embeddings all 21 real
# positions get a gradient, the 11 padded ones none.
prediction = {"last layer": 1, "embeddings": 21}
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 6)"), [
    Question(
        N_("Section 3 replaced every hidden state but [CLS] with random numbers. What happened to the NSP logits, "
           "and how can the head still judge the whole pair?"),
        options=(
            Option(N_("They changed a little: the pooler averages all the states."),
                   why=N_("The pooler reads X[:, 0] only: the logits changed by exactly 0.0.")),
            Option(N_("They did not change, so the NSP head cannot use sentence B."),
                   why=N_("The [CLS] state itself depends on every token: changing the last token of B in the input "
                          "moved it (by 0.22).")),
            Option(N_("They did not change at all; the head sees the pair through the [CLS] state, which attention "
                      "fills from every token of A and B."),
                   why=N_("The change was 0.0, yet replacing one token of B in the input moved the encoder's [CLS] "
                          "state: attention carries the whole pair into [CLS]."), correct=True),
            Option(N_("They changed a lot, because the padding states count too."),
                   why=N_("Nothing but [CLS] reaches the head: the scrambled states, padding included, changed the "
                          "logits by 0.0.")),
        )),
    Question(
        N_("Section 5's hand-written rule was right on 70.3 % of its pairs. Scored against the same labels written "
           "in d2l's convention (1 = IsNext), what accuracy did it get, as a share between 0 and 1?"),
        answer=0.297, tolerance=0.01,
        why=N_("1 − 0.703 = 0.297. Mixing the conventions turns every right answer into a wrong one and every wrong "
               "one into a right one: no error, only the accuracy 1 − acc."),
        why_low=N_("Too low: every answer flips, right to wrong and wrong to right, so the accuracy becomes exactly "
                   "1 − 0.703 = 0.297; it does not fall to 0."),
        why_high=N_("Too high (a share between 0 and 1 is asked): neither 0.703 nor 0.5. Every answer flips, right "
                    "to wrong and wrong to right, so the accuracy is exactly 1 − 0.703 = 0.297.")),
    Question(
        N_("d2l's NSP demo flattens the whole sequence, seq × hidden numbers, into the classifier. What did "
           "the chapter measure in the pitfall \"flattening the whole sequence into the classifier\"?"),
        options=(
            Option(N_("It cannot train: no gradient reaches it."),
                   why=N_("It runs, and it even trains; its problems lie elsewhere.")),
            Option(N_("Its size grows with max_len, it fails on a batch padded to another length, and zeroing the "
                      "padding states changes its logits."),
                   why=N_("786,434 parameters at max_len 512 against 1,538, a RuntimeError at 21 positions, other "
                          "logits with zeroed padding: one weight per (position, dimension). BERT's head reads only "
                          "[CLS]."), correct=True),
            Option(N_("It behaves like BERT's head, only with more parameters."),
                   why=N_("It fails on another length and changes its answer when the padding states are zeroed; "
                          "BERT's head does neither.")),
            Option(N_("It gives the same logits when the padding states are zeroed, because padding is masked."),
                   why=N_("The attention mask keeps padding out of attention, but the flat classifier reads the "
                          "padding states directly: its logits changed, the logits of BERT's head did not.")),
        )),
    Question(
        N_("The course truncates a pair at the end of the longer sentence (Google's fine-tuning rule), not at the "
           "front or back at random (Google's pretraining rule). Why does that change nothing in chapter 7's "
           "pretraining?"),
        options=(
            Option(N_("Both rules keep the same tokens."),
                   why=N_("They keep the same number of tokens, but the random rule keeps a window that can start "
                          "anywhere: it cut the start of A for 22 of 28 values of max_len.")),
            Option(N_("The random rule would cut the shorter sentence first."),
                   why=N_("Both rules shorten the longer sentence first; they differ only in which end loses a "
                          "token.")),
            Option(N_("Chapter 7 pretrains with max_len = 512, like BERT."),
                   why=N_("It pretrains with max_len = 64; and no pair of this corpus is longer than 45 tokens.")),
            Option(N_("No pair is cut: the longest training sentence has 21 tokens, so a pair has at most 45 tokens, "
                      "fewer than max_len = 64."),
                   why=N_("Measured in section 2: either rule matters only for pairs longer than max_len, and this "
                          "corpus has none at 64."), correct=True),
        )),
    Question(
        N_("A three-line rule that knows only shared content words and pronoun agreement was right on 70.3 % of "
           "14,824 pairs. What does that say?"),
        options=(
            Option(N_("The order of the sentences leaves clues in their words, so NSP gives a real signal on this "
                      "corpus."),
                   why=N_("Paragraphs stay on one entity and refer back with pronouns. ALBERT's point: a random B "
                          "is often caught by its topic alone, the easy part."), correct=True),
            Option(N_("Nothing: 70 % is within chance."),
                   why=N_("Chance is 50 %, with a standard error of 0.4 %: 70.3 % is about 50 standard errors "
                          "above it.")),
            Option(N_("The labels are unbalanced: always answering IsNext would get 70 % too."),
                   why=N_("The pairs are half and half (0.5001 IsNext over 20,000 pairs): always answering IsNext "
                          "gets 50 %.")),
            Option(N_("A BERT can reach at most 70 % on NSP here."),
                   why=N_("The rule uses two clues only; a BERT can learn these and subtler ones (is B the first "
                          "sentence of a paragraph? does a chain of facts continue?).")),
        )),
])

"""Chapter 8 exercises: a real pretrained BERT.

In the notebook::

    from bertcourse.exercises.ch08 import q1, q2, q3, q4, q5, quiz

* ``q1`` — ``to_course_name(hf_name)``: translate a Hugging Face weight name to the name
  of the same parameter in the course's ``BERTModel``.
* ``q2`` — ``mean_pooling(hidden, mask)``: the sentence embedding of all-MiniLM-L6-v2,
  the mean of the hidden states over the real tokens only.
* ``q3`` — ``attention_entropy(weights)``: the entropy (nats) of every attention row,
  with padded keys (weight exactly 0) contributing 0.
* ``q4`` — ``previous_token_share(weights)``: for every head, the mean weight a token
  puts on the token just before it.
* ``q5`` — ``prediction``: one of ``"low"``, ``"medium"``, ``"high"``; *before* running the
  experiment, predict the cosine similarity of the MiniLM sentence embeddings of
  *A man bites a dog.* and *A dog bites a man.* The check runs the experiment itself
  (:func:`sentence_cosine`).
* ``quiz`` — five questions on what the chapter measured, and why (answers in
  ``quiz_answers``, a letter or a number each; see :mod:`bertcourse.exercises.quiz`).

The references are the package's own functions (:func:`bertcourse.pretrained_bert.course_name`,
:func:`~bertcourse.bert.mean_pool`, :func:`bertcourse.attention.entropy` (chapter 1's
attention widget shows it), :func:`~bertcourse.inspection.head_statistics`).
"""
from __future__ import annotations

import contextlib
import functools
import math
import re

import torch

from ..attention import entropy
from ..inspection import head_statistics
from ..bert import mean_pool
from ..pretrained_bert import course_name, load_pretrained
from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, Exercise, Symptom, call_answer, equal_values, randn, run_cases
from .guesses import predicted_choice
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "sentence_cosine", "Q5_PAIR", "Q5_CHOICES"]


# ---------------------------------------------------------------------------------------
# Q1: Hugging Face names -> course names
# ---------------------------------------------------------------------------------------

Q1_NAMES = [
    "embeddings.word_embeddings.weight",
    "embeddings.token_type_embeddings.weight",
    "embeddings.position_embeddings.weight",
    "embeddings.LayerNorm.bias",
    "encoder.layer.0.attention.self.query.weight",
    "encoder.layer.5.attention.self.value.bias",
    "encoder.layer.3.attention.output.dense.weight",
    "encoder.layer.2.attention.output.LayerNorm.weight",
    "encoder.layer.11.intermediate.dense.weight",
    "encoder.layer.4.output.dense.bias",
    "encoder.layer.4.output.LayerNorm.bias",
    "pooler.dense.weight",
    "bert.encoder.layer.1.attention.self.key.bias",     # a BertForPreTraining checkpoint
]

# Parts of Hugging Face names that no course name has: one left in a result is a replacement that did not apply
_HF_ONLY = ("embeddings", "layer.", "LayerNorm", "self.", "intermediate", "output", "query", "key", "value")


def _only_block_number_differs(got, hf: str) -> bool:
    m_exp = course_name(hf).split(".")
    m_got = got.split(".") if isinstance(got, str) else []
    differ = [(a, b) for a, b in zip(m_got, m_exp) if a != b]
    return len(m_got) == len(m_exp) and bool(differ) and all(a.isdigit() and b.isdigit() for a, b in differ)


def _stripped_with(slip):
    # a Symptom: the result starts with what `slip` leaves of a name without 'bert.' ('mbeddings.…', 'dings.…')
    def symptom(got, hf):
        bad, good = slip(hf).split(".")[0], hf.removeprefix("bert.").split(".")[0]
        return isinstance(got, str) and bad != good and got.split(".")[0] == bad
    return Symptom(symptom)


def _attention_output_got(*parts):
    # a Symptom: an attention.output.* name translated to something holding one of `parts`
    return Symptom(lambda got, hf: ".attention.output." in f".{hf}" and isinstance(got, str)
                   and any(part in got for part in parts))


def _leftover(got, hf: str) -> str | None:
    return next((part for part in _HF_ONLY if part in got), None) if isinstance(got, str) else None


_Q1_LSTRIP = N_("str.lstrip('bert.') does not remove the prefix 'bert.': it removes every leading character that is "
                "one of b, e, r, t or '.', so 'embeddings.…' loses its 'e' and 'encoder.…' becomes 'ncoder.…'. Use "
                "hf_name.removeprefix('bert.'), which removes exactly that prefix, and only where it is.")
_Q1_CUT_FIVE = N_("you cut the first five characters off every name (hf_name[5:]), but only the names of "
                  "BertForPreTraining checkpoints start with 'bert.': use hf_name.removeprefix('bert.'), which leaves "
                  "the other names alone.")
_Q1_POOLER = N_("this is the pooler: pooler.dense.weight and pooler.dense.bias are not in an encoder block, and the "
                "course keeps their names as they are (pooler.dense.weight -> pooler.dense.weight). Handle them "
                "before you look for a block number.")
_Q1_EMBEDDINGS = N_("this is one of the embeddings, which are not in an encoder block: embeddings.word_embeddings, "
                    ".token_type_embeddings, .position_embeddings and .LayerNorm are encoder.token_embedding, "
                    "encoder.segment_embedding, encoder.pos_embedding and encoder.embedding_norm (the first four "
                    "rows of NAME_MAP).")
# two ways to cut 'bert.' off that break the other names (lstrip strips any of the characters b, e, r, t, '.')
_SLIPS = ((lambda hf: hf.lstrip("bert."), _Q1_LSTRIP), (lambda hf: hf[5:], _Q1_CUT_FIVE))

# every wrong name gets one of these (the last one always fits)
Q1_DIAGNOSES = [
    *[(_stripped_with(slip), message) for slip, message in _SLIPS],
    (Symptom(lambda got, hf: hf.startswith("bert.") and isinstance(got, str) and "bert." in got),
     N_("BertForPreTraining checkpoints put 'bert.' in front of the encoder's names; "
        "strip it first, the rest is the same as in BertModel.")),
    (Symptom(_only_block_number_differs), N_("the block number is the same on both sides (both count from 0).")),
    (Symptom(lambda got, hf: ".output." in hf and ".attention." not in hf and isinstance(got, str)
             and (".W_o." in got or "addnorm1" in got)),
     N_("encoder.layer.{i}.output.* (without 'attention') is the feed-forward part: "
        "output.dense is ffn.dense2 and output.LayerNorm is addnorm2.ln; "
        "attention.output.* is the attention's W_o and addnorm1.")),
    (Symptom(lambda got, hf: not (isinstance(got, str) and (got.endswith(".weight") or got.endswith(".bias")))),
     N_("keep the suffix: the .weight or .bias at the end stays the same.")),
    # 'attention.output.dense' contains 'output.dense': replaced first, it gives attention.ffn.dense2
    (_attention_output_got("ffn.dense2", "addnorm2"),
     N_("the order of your replacements: 'attention.output.dense' contains 'output.dense' (and "
        "'attention.output.LayerNorm' contains 'output.LayerNorm'), so replacing the shorter name first turns "
        "the attention's output layer into the feed-forward one. Replace the longer names first, or look the "
        "whole layer name up in a dict.")),
    # 'attention.output' as one piece ('attention.W_o.dense'), or addnorm1 put inside the attention
    (_attention_output_got("W_o", "addnorm1"),
     N_("'attention.output' holds two layers: attention.output.dense is the attention's W_o, and "
        "attention.output.LayerNorm is the first add & norm, encoder.blks.{i}.addnorm1.ln (not inside the "
        "attention). Translate each whole layer name, not the 'attention.output' part on its own.")),
    (Symptom(lambda got, hf: hf.removeprefix("bert.").startswith("pooler.")), _Q1_POOLER),
    (Symptom(lambda got, hf: hf.removeprefix("bert.").startswith("embeddings.")), _Q1_EMBEDDINGS),
    (Symptom(lambda got, hf: _leftover(got, hf) is not None),
     lambda got, hf: _("part of the Hugging Face name is still in your result ({part!r}): one of your "
                       "replacements did not apply. Where one name contains another ('attention.output.dense' "
                       "contains 'output.dense'), replace the longer one first.").format(part=_leftover(got, hf))),
    (Symptom(lambda got, hf: True), N_("look the layer up in the table NAME_MAP (bertcourse.pretrained_bert.mapping_table()).")),
]


def _strings_in(error: BaseException) -> list[str]:
    """The strings (also in lists and tuples) that ``error``'s frames held: what the code made of its input."""
    found, tb = [], error.__traceback__
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            items = value if isinstance(value, (list, tuple)) else (value,)
            found += [v for v in items if isinstance(v, str)]
        tb = tb.tb_next
    return found


def _q1_stuck(answer, hf: str, error: BaseException | None) -> str | None:
    """What the code got wrong, raising ``error`` (None: returning None) on the name ``hf``; None if unknown."""
    if isinstance(error, (NameError, AttributeError, SyntaxError, ImportError)):
        return None                      # a typo or a missing name: the error itself says it, not the name's kind
    if error is not None:
        for slip, message in _SLIPS:
            bad, good = slip(hf), hf.removeprefix("bert.")
            made = [s for s in _strings_in(error) if len(s) >= 3 and bad.startswith(s) and not good.startswith(s)]
            if bad != good and made:
                return _(message)
    name = hf.removeprefix("bert.")
    works = False
    with contextlib.suppress(CheckFailed):
        works = name != hf and call_answer(answer, (name,), repr(name)) == course_name(name)
    if works:
        return _("your code fails on names that start with 'bert.' (BertForPreTraining checkpoints put it in front of "
                 "the encoder's names) and works on the same name without it, {name!r}: remove the prefix first, "
                 "hf_name.removeprefix('bert.'); the rest is the same as in BertModel.").format(name=name)
    if name.startswith("pooler."):
        return _(_Q1_POOLER)
    if name.startswith("embeddings."):
        return _(_Q1_EMBEDDINGS)
    parts = name.split(".")
    if parts[:2] == ["encoder", "layer"] and len(parts) > 4:
        return _("your code fails on the block layer {layer!r}: a block has eight layers (attention.self.query, "
                 ".key, .value, attention.output.dense, attention.output.LayerNorm, intermediate.dense, output.dense, "
                 "output.LayerNorm), each with a row in NAME_MAP; handle every one.").format(layer=".".join(parts[3:-1]))
    return None


def _check_q1(answer) -> str:
    # a name the code raised on or returned None for: what it got wrong is found by calling it on a neighbour
    diagnoses = [(Symptom(lambda error, hf: _q1_stuck(answer, hf, error) is not None, raised=True),
                  lambda error, hf: _q1_stuck(answer, hf, error)), *Q1_DIAGNOSES]
    run_cases(answer, course_name, [(repr(hf), (hf,)) for hf in Q1_NAMES], diagnoses,
              compare=equal_values(N_("on {where}: expected {expected!r}, got {got!r}")))
    return _("correct on all {n} names (embeddings, every kind of block layer, pooler, 'bert.' prefix)").format(
        n=len(Q1_NAMES))


q1 = Exercise(
    name=N_("Q1 (Hugging Face names -> course names)"),
    var="to_course_name",
    checker=_check_q1,
    hints=[
        N_("Split the name at the dots: 'encoder.layer.3.attention.self.query.weight' -> the block "
           "number 3, the layer 'attention.self.query' and the suffix 'weight'."),
        N_("A dict from the HF layer ('attention.self.query', 'intermediate.dense', 'output.LayerNorm', …) "
           "to the course layer ('attention.W_q', 'ffn.dense1', 'addnorm2.ln', …) does most of the work; "
           "remove a leading 'bert.' first."),
        N_("The table is printed in the notebook: bertcourse.pretrained_bert.mapping_table(). Watch out for "
           "'attention.output.dense' (W_o) vs 'output.dense' (ffn.dense2)."),
    ],
    solution=N_('''
def to_course_name(hf_name):
    name = hf_name.removeprefix("bert.")
    *path, suffix = name.split(".")                # suffix: "weight" or "bias"
    path = ".".join(path)
    top = {"embeddings.word_embeddings": "encoder.token_embedding",
           "embeddings.token_type_embeddings": "encoder.segment_embedding",
           "embeddings.position_embeddings": "encoder.pos_embedding",
           "embeddings.LayerNorm": "encoder.embedding_norm",
           "pooler.dense": "pooler.dense"}
    if path in top:
        return f"{top[path]}.{suffix}"
    _, _, i, *layer = path.split(".")              # "encoder", "layer", block number, ...
    block = {"attention.self.query": "attention.W_q", "attention.self.key": "attention.W_k",
             "attention.self.value": "attention.W_v", "attention.output.dense": "attention.W_o",
             "attention.output.LayerNorm": "addnorm1.ln", "intermediate.dense": "ffn.dense1",
             "output.dense": "ffn.dense2", "output.LayerNorm": "addnorm2.ln"}
    return f"encoder.blks.{i}.{block['.'.join(layer)]}.{suffix}"
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: mean pooling over the real tokens
# ---------------------------------------------------------------------------------------

def _ref_mean_pooling(hidden, mask):
    return mean_pool(hidden, mask)


def _mp_plain_mean(hidden, mask):
    """you averaged over every position, padding included: a padded sentence then gets a
    different embedding than the same sentence alone. Use the mask."""
    return hidden.mean(1)


def _mp_divide_by_seq(hidden, mask):
    """you summed the real tokens but divided by the padded length; divide by the number of
    real tokens of each row, shape (batch, 1): mask.sum(1, keepdim=True), or m.sum(1) with the
    unsqueezed mask m."""
    return (hidden * mask.unsqueeze(-1).to(hidden.dtype)).sum(1) / hidden.shape[1]


def _mp_masked_sum(hidden, mask):
    """you returned the masked sum; divide it by the number of real tokens."""
    return (hidden * mask.unsqueeze(-1).to(hidden.dtype)).sum(1)


def _mp_cls(hidden, mask):
    """you returned the [CLS] vector; all-MiniLM-L6-v2 was trained with the mean over the
    real tokens."""
    return hidden[:, 0]


def _q2_case(seed, batch, seq, d, lengths, dtype=torch.bool):
    hidden = randn(batch, seq, d, seed=seed)
    mask = (torch.arange(seq) < torch.tensor(lengths)[:, None]).to(dtype)
    return hidden, mask


Q2_CASES = [
    (N_("batch=3, seq=5, d=4, lengths [5, 3, 1] (bool mask)"), _q2_case(1, 3, 5, 4, [5, 3, 1])),
    (N_("the same lengths with a 0/1 integer mask (Hugging Face's attention_mask)"),
     _q2_case(2, 3, 5, 4, [5, 3, 1], torch.long)),
    (N_("no padding at all"), _q2_case(3, 2, 4, 6, [4, 4])),
    (N_("a batch of 1 with a single token"), _q2_case(4, 1, 1, 8, [1])),
    (N_("real hidden-state size d=384, lengths [7, 12]"), _q2_case(5, 2, 12, 384, [7, 12])),
]


def _mp_count_flat(hidden, mask):
    """the number of real tokens, mask.sum(1), has shape (batch,), and it cannot divide the (batch, d) sum row by
    row: keep its axis, mask.sum(1, keepdim=True) (or sum the unsqueezed mask, m.sum(1)), to make it (batch, 1)."""
    return (hidden * mask.unsqueeze(-1).to(hidden.dtype)).sum(1) / mask.sum(1)


def _mp_sum_keepdim_count_flat(hidden, mask):
    """two axes out of line: the sum over seq with keepdim=True is (batch, 1, d), and the number of real tokens
    mask.sum(1) is (batch,). Sum hidden * m over seq *without* keepdim, (batch, d), and divide by a count of
    shape (batch, 1): mask.sum(1, keepdim=True)."""
    return (hidden * mask.unsqueeze(-1).to(hidden.dtype)).sum(1, keepdim=True) / mask.sum(1)


def _mp_mask_not_unsqueezed(hidden, mask):
    """the mask is (batch, seq) and hidden (batch, seq, d): to multiply every feature of a token by its 0 or 1,
    the mask must be (batch, seq, 1): mask.unsqueeze(-1) (not unsqueeze(1), which gives (batch, 1, seq))."""
    return (hidden * mask).sum(1) / mask.sum(1, keepdim=True)


def _shaped(shape):
    # a Symptom: the result has the shape `shape(batch, seq, d)` (and the right one, (batch, d), differs)
    return Symptom(lambda got, hidden, mask: isinstance(got, torch.Tensor) and tuple(got.shape) == shape(*hidden.shape)
                   != (hidden.shape[0], hidden.shape[2]))


Q2_DIAGNOSES = [
    _mp_plain_mean, _mp_divide_by_seq, _mp_masked_sum, _mp_cls,
    _mp_count_flat, _mp_sum_keepdim_count_flat, _mp_mask_not_unsqueezed,
    (_shaped(lambda b, s, d: (b, 1, d)),
     N_("your result is (batch, 1, d): you summed over seq with keepdim=True, so the seq axis stayed. Sum hidden * m "
        "over dim 1 without keepdim, (batch, d); only the count of real tokens keeps its axis, (batch, 1).")),
    (_shaped(lambda b, s, d: (b, s)),
     N_("your result is (batch, seq): you summed over the features (dim 2, or -1). The mean runs over the tokens: "
        "sum over dim 1, the seq axis, to get (batch, d).")),
    (_shaped(lambda b, s, d: (b, b, d)),
     N_("your result is (batch, batch, d): a (batch, d) divided by a (batch, 1, 1), or a (batch, 1, d) by a (batch, "
        "1), broadcasts every sentence's sum against every sentence's count. keepdim=True belongs on the count "
        "only: (hidden * m).sum(1) is (batch, d), and mask.sum(1, keepdim=True) is (batch, 1).")),
    # a shape error that none of the mistakes above raises alike: still say which shapes must meet
    (Symptom(lambda error, hidden, mask: isinstance(error, (RuntimeError, IndexError))
             and re.search(r"size|shape|dimension", str(error)) is not None, raised=True),
     N_("hidden is (batch, seq, d) and mask (batch, seq). Three shapes must fit: the mask as (batch, seq, 1) "
        "(mask.unsqueeze(-1)) to multiply hidden; the sum over seq, (batch, d); and the number of real tokens of "
        "each sentence as (batch, 1) (mask.sum(1, keepdim=True)) to divide it. Print each step's shape.")),
]


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_mean_pooling, Q2_CASES, Q2_DIAGNOSES)


q2 = Exercise(
    name=N_("Q2 (mean pooling)"),
    var="mean_pooling",
    checker=_check_q2,
    hints=[
        N_("hidden is (batch, seq, d) and mask is (batch, seq); you want (batch, d). Make the mask "
           "(batch, seq, 1) with unsqueeze(-1) and turn it into floats so that it can multiply hidden."),
        N_("Sum hidden * mask over the seq axis (dim=1), then divide by the number of real tokens of "
           "each row: mask.sum(1) (shape (batch, 1) after the unsqueeze)."),
        N_("m = mask.unsqueeze(-1).float(); return (hidden * m).sum(1) / m.sum(1)"),
    ],
    solution=N_('''
def mean_pooling(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)     # (batch, seq, 1): 1 on real tokens, 0 on padding
    return (hidden * m).sum(1) / m.sum(1)       # (batch, d): the mean over the real tokens
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: entropy of attention rows
# ---------------------------------------------------------------------------------------

def _ref_entropy(weights):
    return entropy(weights)


def _ent_nan(weights):
    """your entropy is NaN where a weight is exactly 0 (a padded key): 0 * log(0) = 0 * -inf
    = NaN in floating point. By the limit, 0 log 0 = 0: clamp the weights before the log,
    e.g. w.clamp_min(1e-30).log()."""
    return -(weights * weights.log()).sum(-1)


def _ent_bits(weights):
    """you used log base 2 (bits); the course measures entropy in nats (natural log)."""
    return entropy(weights) / math.log(2)


def _ent_no_minus(weights):
    """you forgot the minus sign: entropy = -sum(w log w) is >= 0."""
    return -entropy(weights)


def _ent_wrong_axis(weights):
    """you summed over the wrong axis: each query's row runs over the keys (dim=-1)."""
    w = weights.clamp_min(1e-30)
    return -(weights * w.log()).sum(-2)


def _rows(seed, *shape, lengths=None):
    scores = randn(*shape, seed=seed, scale=2.0)
    if lengths is not None:     # padded keys: weight exactly 0, as in a masked softmax
        visible = torch.arange(shape[-1]) < torch.tensor(lengths).reshape(-1, *[1] * (len(shape) - 1))
        scores = scores.masked_fill(~visible, float("-inf"))
    return (torch.softmax(scores, dim=-1),)


Q3_CASES = [
    (N_("(heads=2, 4 queries, 4 keys)"), _rows(1, 2, 4, 4)),
    (N_("(batch=2, heads=3, 5, 5) with padded keys (weights exactly 0)"), _rows(2, 2, 3, 5, 5, lengths=[3, 5])),
    (N_("uniform rows over 8 keys (entropy log 8)"), (torch.full((2, 8), 1 / 8),)),
    (N_("one-hot rows (entropy 0)"), (torch.eye(5),)),
    (N_("(6 layers, 12 heads, 6, 6) like MiniLM"), _rows(3, 6, 12, 6, 6)),
]

Q3_DIAGNOSES = [_ent_nan, _ent_bits, _ent_no_minus, _ent_wrong_axis]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_entropy, Q3_CASES, Q3_DIAGNOSES)


q3 = Exercise(
    name=N_("Q3 (entropy of attention rows)"),
    var="attention_entropy",
    checker=_check_q3,
    hints=[
        N_("Each row weights[..., i, :] is a distribution over the keys. Its entropy is "
           "-sum_j w_j log w_j, in nats (torch.log is the natural log). The result has one number per "
           "row: the shape of weights without its last axis."),
        N_("Padded keys have weight exactly 0 and log(0) = -inf, so 0 * log(0) is NaN. Take the log of "
           "weights.clamp_min(1e-30) instead: the product is then 0 * (-69) = 0."),
        N_("return -(weights * weights.clamp_min(1e-30).log()).sum(-1)"),
    ],
    solution=N_('''
def attention_entropy(weights):
    # 0 log 0 = 0: clamp before the log so that padded keys (weight 0) add nothing, not NaN
    return -(weights * weights.clamp_min(1e-30).log()).sum(dim=-1)
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: how much attention goes to the previous token
# ---------------------------------------------------------------------------------------

def _ref_prev_share(weights):
    n = weights.shape[-1]
    return head_statistics([(["x"] * n, [0] * n, weights)])["previous token"]


def _prev_next(weights):
    """you took the next token (key i+1); the previous token of query i is key i-1:
    weights[..., i, i-1], the diagonal just *below* the main one (offset=-1)."""
    return weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(-1)


def _prev_self(weights):
    """you took the main diagonal (each token's attention to itself)."""
    return weights.diagonal(dim1=-2, dim2=-1).mean(-1)


def _prev_divide_by_n(weights):
    """you divided by the number of tokens n; only n-1 queries have a previous token (the
    first one has none), so average over those n-1."""
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(-1) / weights.shape[-1]


def _prev_roll(weights):
    """your 'previous token' of the first query wraps around to the last token; the first
    token has no previous token: leave it out."""
    # "previous" with wrap-around: query 0 looks at the last key
    n = weights.shape[-1]
    idx = (torch.arange(n) - 1) % n
    return weights[..., torch.arange(n), idx].mean(-1)


def _q4_case(seed, L, H, n):
    return (torch.softmax(randn(L, H, n, n, seed=seed, scale=2.0), dim=-1),)


def _shifted(L, H, n):
    """Head (l, h) puts weight 1 on the previous token when h is even, else on itself."""
    w = torch.zeros(L, H, n, n)
    for h in range(H):
        w[:, h] = torch.eye(n).roll(-1, dims=1) if h % 2 == 0 else torch.eye(n)
    w[:, ::2, 0] = 0
    w[:, ::2, 0, 0] = 1.0                     # the first token has no previous token
    return (w,)


Q4_CASES = [
    (N_("(layers=2, heads=3, 5 tokens)"), _q4_case(1, 2, 3, 5)),
    (N_("perfect previous-token heads (even heads) and self heads (odd heads)"), _shifted(1, 4, 6)),
    (N_("two tokens only"), _q4_case(2, 1, 2, 2)),
    (N_("(6 layers, 12 heads, 9 tokens) like MiniLM"), _q4_case(3, 6, 12, 9)),
]

Q4_DIAGNOSES = [_prev_next, _prev_self, _prev_divide_by_n, _prev_roll]


def _check_q4(answer) -> str:
    return run_cases(answer, _ref_prev_share, Q4_CASES, Q4_DIAGNOSES)


q4 = Exercise(
    name=N_("Q4 (previous-token share of each head)"),
    var="previous_token_share",
    checker=_check_q4,
    hints=[
        N_("weights is (layers, heads, n, n); the answer is (layers, heads). For query i (i = 1 .. n-1) "
           "you need weights[..., i, i-1]; average them."),
        N_("Those entries form a diagonal just below the main one: "
           "weights.diagonal(offset=-1, dim1=-2, dim2=-1) has shape (layers, heads, n-1)."),
        N_("return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)"),
    ],
    solution=N_('''
def previous_token_share(weights):
    # weights[..., i, i-1] for i = 1 .. n-1: the diagonal below the main one
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)   # (layers, heads)
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — does the sentence embedding see word order?
# ---------------------------------------------------------------------------------------

Q5_PAIR = ("A man bites a dog.", "A dog bites a man.")
"""q5's two sentences: the same words, opposite meanings."""
Q5_CHOICES = {"low": N_("below 0.5"), "medium": N_("from 0.5 to 0.9"), "high": N_("above 0.9")}
"""q5's answers: where the cosine of the two sentence embeddings lies."""


def _minilm():
    # Loaded for each call, not kept: the notebook holds its own copy, and a second 91 MB model
    # kept alive here would take chapter 8 past Binder's memory (benchmarks/README.md).
    with torch.random.fork_rng(devices=[]):      # building the model draws random initial weights
        return load_pretrained("minilm")


def sentence_cosine(text_a: str, text_b: str) -> float:
    """The experiment of q5: the cosine similarity of the all-MiniLM-L6-v2 sentence
    embeddings (mean pooling over the real tokens, L2-normalised; section 7) of two texts."""
    for name, text in (("text_a", text_a), ("text_b", text_b)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    embeddings = _minilm().sentence_embeddings([text_a, text_b])      # (2, 384), unit length
    return float((embeddings[0] * embeddings[1]).sum())


@functools.lru_cache(maxsize=None)
def _q5_cosine() -> float:
    return sentence_cosine(*Q5_PAIR)


def _q5_category(cosine: float) -> str:
    return "low" if cosine < 0.5 else "medium" if cosine <= 0.9 else "high"


_Q5_WHY_NOT = {
    "low": N_("the sentences mean opposite things, but the embedding is a *mean* over tokens, and both "
              "sentences have exactly the same tokens. Each token's final state depends on its context, "
              "but it is still mostly about the token itself; averaged over the sentence, the two come out "
              "close."),
    "medium": N_("closer still. Both sentences have the same tokens; only the context-dependent part of each "
                 "token's state differs, and the average over the sentence dilutes it further."),
    "high": N_("run the experiment below."),
}


def _check_q5(answer) -> str:
    choice = predicted_choice(answer, Q5_CHOICES, "prediction", described=True)
    cosine = _q5_cosine()
    truth = _q5_category(cosine)
    if choice != truth:
        raise CheckFailed(_("{choice!r} ({meaning}) is not what happens: {why}").format(
            choice=choice, meaning=_(Q5_CHOICES[choice]), why=_(_Q5_WHY_NOT[choice])))
    return _("{truth!r}: the cosine is {cosine:.2f}, higher than for the paraphrases of section 7. Mean pooling "
             "keeps little of the word order: this sentence encoder can hardly tell who bit whom.").format(
        truth=truth, cosine=cosine)


q5 = Exercise(
    name=N_("Q5 (predict: who bit whom?)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("Section 7: paraphrases scored about 0.6 to 0.75, unrelated sentences about 0. These two sentences "
           "have opposite meanings — and exactly the same word pieces."),
        N_("The sentence embedding is the mean of the last hidden states. How much of a token's last hidden "
           "state is about the token itself, and how much about its position and its neighbours?"),
    ],
    solution=N_('''
# The embedding is the mean of the tokens' last states, and both sentences have the same
# tokens. Each state depends on its context, but is still mostly about its own token, and
# the mean dilutes what differs: the cosine comes out above 0.9 (about 0.97), higher than
# for real paraphrases. Mean pooling is close to a bag of words.
prediction = "high"
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 8)"), [
    Question(
        N_("all-MiniLM-L6-v2's checkpoint has no cls.* tensor: no MLM head and no NSP head. What does "
           "load_pretrained(\"minilm\") do about them?"),
        options=(
            Option(N_("It adds randomly initialised MLM and NSP heads, so that fill-mask still runs."),
                   why=N_("No: random heads would look loaded and fill in [MASK] with nonsense. The loader does not "
                          "silently leave random heads in the model; for fill-mask the chapter names a checkpoint "
                          "that has the heads (bert-base-uncased, online).")),
            Option(N_("It builds the model without them (model.mlm is None), and its report lists both heads as "
                      "ABSENT."),
                   why=N_("Right: the report says what was loaded (the pooler) and what is absent, rather than "
                          "silently leaving random heads in the model. MiniLM was trained for sentence embeddings: "
                          "it cannot fill in [MASK]."), correct=True),
            Option(N_("It raises a CheckpointError, because the heads' parameters are not filled."),
                   why=N_("No: a CheckpointError is for a tensor with no place, a parameter nobody fills, a shape "
                          "that does not fit or two different tensors for one tied weight. The model is built "
                          "without the heads, so all of its 22,713,216 parameters are filled.")),
        )),
    Question(
        N_("Section 3: 'Hi.' (4 tokens) padded to 14 in a batch gives the same vectors, to 1e-5, as 'Hi.' alone. "
           "What makes that so?"),
        options=(
            Option(N_("BERT's attention looks only backwards, and the padding comes after the real tokens."),
                   why=N_("No: BERT's self-attention looks both ways; every token attends to keys on both sides, "
                          "padding included, unless something keeps it out.")),
            Option(N_("The position embeddings: the real tokens keep positions 0 to 3 in both cases."),
                   why=N_("Their positions are indeed the same, but that is not enough: without a mask the real "
                          "tokens would also attend to the 10 padded positions. The mask keeps them out.")),
            Option(N_("The attention mask: the padded keys get weight exactly 0."),
                   why=N_("Right: with the mask the real tokens attend only to each other, as they do alone. "
                          "Section 3 checked it on 'Hi.', to 1e-5."), correct=True),
        )),
    Question(
        N_("The survey found head L1.H3 putting 99% of its attention on the previous token. Which measurement "
           "shows that it is a real specialist, not an artefact of the short sentences?"),
        options=(
            Option(N_("The average head gives only about 10% to the previous token."),
                   why=N_("Right: on the same sentences the average head gives the previous token about 10%, so "
                          "short sentences alone do not make a head look at its neighbour. L1.H3 is also the "
                          "sharpest head (entropy 0.02 nats)."), correct=True),
            Option(N_("L1.H3 has the highest entropy of all 72 heads."),
                   why=N_("No, the lowest: 0.02 nats, nearly all its weight on one key. The broadest head is L4.H12 "
                          "(2.42 nats).")),
            Option(N_("All heads of layer 1 are sharp, so a sharp head there is expected."),
                   why=N_("The opposite: layer 1 is the broad layer (9 of its 12 heads above 2 nats), apart from "
                          "its one sharp previous-token head.")),
        )),
    Question(
        N_("Averaged over all 72 heads and the survey's tokens, what share of the attention goes to [CLS]? "
           "(a number in percent, e.g. 25 for 25%)"),
        answer=47, tolerance=5, unit="%",
        why=N_("Right, about 47%: from layer 2 on, heads park their weight on [CLS], a token that is always there. "
               "In this distilled model [SEP] gets only 5% (studies of BERT-base found [SEP] as the sink)."),
        why_low=N_("Too low: about 47%, almost half. [CLS] is a sink: in layers 2 to 5 the heads put more than half "
                   "of their attention on it on average (0.51 to 0.58); only layer 1 (0.22) and layer 6 (0.36) give "
                   "it less."),
        why_high=N_("Too high: about 47%, a little under half. Layer 1 gives [CLS] only 0.22 and layer 6 0.36, and "
                    "the positional heads look elsewhere (L1.H3: 99% on the previous token)."),
    ),
    Question(
        N_("Section 7 followed the vector of 'bank' in four money and four river sentences, layer by layer. How "
           "does the gap between the same-sense and the cross-sense cosines change, and why?"),
        options=(
            Option(N_("It stays about 0: only the position of 'bank' differs between the sentences."),
                   why=N_("That holds at layer 0 only (gap 0.00: the input representation, token + segment + "
                          "position). From layer 1 on the gap is 0.06 to 0.12, in every layer.")),
            Option(N_("It grows from 0 to 0.06-0.12: attention mixes in the context, and the trained weights pull "
                      "the vectors apart by meaning."),
                   why=N_("Right: at the input 'bank' is 'bank'; from the first layer on a money-bank is closer to "
                          "the other money-banks than to the river-banks. One word, two vectors: what word2vec and "
                          "GloVe cannot give."), correct=True),
            Option(N_("It is largest at layer 0 and then shrinks: the position embeddings already separate the two "
                      "senses."),
                   why=N_("No: at layer 0 the gap is 0.00; a position says where 'bank' stands, not what it means. "
                          "The gap appears from layer 1 on, once attention has mixed in the context.")),
        )),
])

"""Chapter 3 exercises: the pieces of a Transformer block.

In the notebook::

    from bertcourse.exercises.ch03 import q1, q2, q3, q4, q5, quiz

* ``q1`` — ``add_norm(X, Y, gamma, beta, eps)``: residual connection, then layer norm.
* ``q2`` — ``ffn(X, W1, b1, W2, b2)``: the position-wise feed-forward network (ReLU), with
  weights stored the way ``nn.Linear`` stores them.
* ``q3`` — ``my_causal_mask(num_queries, num_keys)``: the decoder's boolean mask.
* ``q4`` — ``encoder_block_params(d, ffn_hiddens, heads, bias)``: how many parameters an
  encoder block has.
* ``q5`` — ``prediction``: *before* running the experiment, predict at how many of the 8
  target positions a decoder's output changes when the target token at position 3 changes.
  The check runs the experiment itself (:func:`changed_positions`).
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

Every reference answer calls :mod:`bertcourse.transformer` / :mod:`bertcourse.attention`.
"""
from __future__ import annotations

import functools

import torch

from .. import transformer

from ..attention import causal_mask
from ..transformer import AddNorm, EncoderBlock, PositionWiseFFN, TransformerDecoder, TransformerEncoder
from ..i18n import gettext as _, gettext_noop as N_
from .core import (CheckFailed, Exercise, as_number, check_bool, check_choice, check_int, check_positive_int,
                   equal_values, randn, run_cases, seeded)
from .guesses import predicted_number
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "changed_positions", "Q5_TGT_LEN", "Q5_POSITION"]


# ---------------------------------------------------------------------------------------
# Q1: add & norm
# ---------------------------------------------------------------------------------------

def _ref_add_norm(X, Y, gamma, beta, eps):
    layer = AddNorm(X.shape[-1], dropout=0.0, eps=eps)
    with torch.no_grad():
        layer.ln.weight.copy_(gamma)
        layer.ln.bias.copy_(beta)
    with torch.no_grad():
        return layer(X, Y)


def _norm(S, gamma, beta, eps, dim=-1, unbiased=False, eps_outside=False):
    mu = S.mean(dim, keepdim=True)
    var = S.var(dim, unbiased=unbiased, keepdim=True)
    scaled = (S - mu) / (var.sqrt() + eps) if eps_outside else (S - mu) / torch.sqrt(var + eps)
    return scaled * gamma + beta


Q1_CASES = [
    (N_("batch=2, seq=3, d=4, gamma=1, beta=0"),
     (randn(2, 3, 4, seed=1), randn(2, 3, 4, seed=2), torch.ones(4), torch.zeros(4), 1e-5)),
    (N_("random gamma and beta, d=6"),
     (randn(2, 4, 6, seed=3), randn(2, 4, 6, seed=4), randn(6, seed=5), randn(6, seed=6), 1e-5)),
    (N_("a large eps = 0.5 (eps goes inside the square root)"),
     (randn(1, 3, 5, seed=7), randn(1, 3, 5, seed=8), randn(5, seed=9), randn(5, seed=10), 0.5)),
    (N_("a position where X + Y is constant (variance 0)"),
     (torch.ones(1, 2, 4), torch.tensor([[[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 2.0, 3.0]]]),
      torch.ones(4), torch.full((4,), 0.5), 1e-5)),
]

Q1_DIAGNOSES = [
    (lambda X, Y, g, b, e: _norm(X + Y, g, b, e, unbiased=True),
     N_("you used the unbiased variance (divide by d - 1; torch.var's default). Layer norm divides "
        "by d: use X.var(-1, unbiased=False) or ((S - mean) ** 2).mean(-1).")),
    (lambda X, Y, g, b, e: X + _norm(Y, g, b, e),
     N_("you normalised Y and then added X (that is pre-norm-like). Add & norm is LayerNorm(X + Y): "
        "add first, then normalise the sum.")),
    (lambda X, Y, g, b, e: _norm(Y, g, b, e),
     N_("you forgot the residual connection: normalise X + Y, not Y alone.")),
    (lambda X, Y, g, b, e: _norm(X + Y, g, b, e, dim=1),
     N_("you normalised over the sequence axis (dim=1). Layer norm normalises each position over its "
        "own features (dim=-1).")),
    (lambda X, Y, g, b, e: _norm(X + Y, g, b, e, dim=0),
     N_("you normalised over the batch axis (dim=0): that is batch norm, and it makes one sentence's output "
        "depend on the other sentences of its batch. Layer norm normalises each position over its own "
        "features (dim=-1).")),
    (lambda X, Y, g, b, e: _norm(X + Y, g, b, e, eps_outside=True),
     N_("eps goes inside the square root: (S - mean) / sqrt(var + eps).")),
    (lambda X, Y, g, b, e: _norm(X + Y, torch.ones_like(g), torch.zeros_like(b), e),
     N_("you forgot gamma and beta: multiply the normalised values by gamma, then add beta.")),
]


def _check_q1(answer) -> str:
    return run_cases(answer, _ref_add_norm, Q1_CASES, Q1_DIAGNOSES)


q1 = Exercise(
    name=N_("Q1 (add & norm)"),
    var="add_norm",
    checker=_check_q1,
    forbidden=[(torch.nn, "LayerNorm", "nn.LayerNorm")],      # the functional F.layer_norm is accepted
    hints=[
        N_("Add first: S = X + Y, shape (batch, seq, d). Then normalise every position over its d "
           "features."),
        N_("mean = S.mean(-1, keepdim=True); var = S.var(-1, unbiased=False, keepdim=True); "
           "normalised = (S - mean) / sqrt(var + eps)."),
        N_("Finally scale and shift: normalised * gamma + beta (both have shape (d,))."),
    ],
    solution=N_('''
def add_norm(X, Y, gamma, beta, eps):
    S = X + Y                                            # residual connection
    mean = S.mean(-1, keepdim=True)                      # per position, over the features
    var = S.var(-1, unbiased=False, keepdim=True)        # divide by d, not d - 1
    return (S - mean) / torch.sqrt(var + eps) * gamma + beta
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: position-wise FFN
# ---------------------------------------------------------------------------------------

def _ref_ffn(X, W1, b1, W2, b2):
    layer = PositionWiseFFN(W1.shape[1], W1.shape[0], activation="relu")
    with torch.no_grad():
        layer.dense1.weight.copy_(W1)
        layer.dense1.bias.copy_(b1)
        layer.dense2.weight.copy_(W2)
        layer.dense2.bias.copy_(b2)
        return layer(X)


def _ffn_case(batch, seq, d, hidden, seed):
    return (randn(batch, seq, d, seed=seed), randn(hidden, d, seed=seed + 1, scale=0.5),
            randn(hidden, seed=seed + 2, scale=0.5), randn(d, hidden, seed=seed + 3, scale=0.5),
            randn(d, seed=seed + 4, scale=0.5))


# the square case comes first: there a missing transpose gives wrong numbers (diagnosed)
# rather than a shape error
Q2_CASES = [
    (N_("d = ffn_hiddens = 4 (square weights)"), _ffn_case(2, 3, 4, 4, 20)),
    (N_("batch=2, seq=5, d=6, ffn_hiddens=10"), _ffn_case(2, 5, 6, 10, 30)),
    (N_("a single position, d=3, ffn_hiddens=7"), _ffn_case(1, 1, 3, 7, 40)),
]

Q2_DIAGNOSES = [
    (lambda X, W1, b1, W2, b2: (X @ W1 + b1).relu() @ W2 + b2,
     N_("nn.Linear stores its weight as (out_features, in_features) and computes x @ W.T + b: "
        "transpose the weights (X @ W1.T).")),
    (lambda X, W1, b1, W2, b2: (X @ W1.T + b1) @ W2.T + b2,
     N_("you forgot the ReLU between the two layers (without it, two linear layers are one).")),
    (lambda X, W1, b1, W2, b2: ((X @ W1.T + b1).relu() @ W2.T + b2).relu(),
     N_("the ReLU goes only between the layers, not after the second one.")),
    (lambda X, W1, b1, W2, b2: (X @ W1.T).relu() @ W2.T,
     N_("you forgot the biases b1 and b2.")),
]


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_ffn, Q2_CASES, Q2_DIAGNOSES)


q2 = Exercise(
    name=N_("Q2 (position-wise feed-forward network)"),
    var="ffn",
    checker=_check_q2,
    hints=[
        N_("FFN(x) = W2 relu(W1 x + b1) + b2, applied to every position. X is (batch, seq, d), "
           "W1 is (ffn_hiddens, d) and W2 is (d, ffn_hiddens), stored like nn.Linear's weights."),
        N_("With row vectors: H = relu(X @ W1.T + b1) has shape (batch, seq, ffn_hiddens); "
           "the output is H @ W2.T + b2."),
    ],
    solution=N_('''
def ffn(X, W1, b1, W2, b2):
    H = torch.relu(X @ W1.T + b1)      # (batch, seq, ffn_hiddens): every position alike
    return H @ W2.T + b2               # back to (batch, seq, d)
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the causal mask
# ---------------------------------------------------------------------------------------

def _ref_mask(num_queries: int, num_keys: int) -> torch.Tensor:
    return causal_mask(num_queries, num_keys)


Q3_CASES = [
    (N_("4 queries, 4 keys"), (4, 4)),
    (N_("1 query, 1 key"), (1, 1)),
    (N_("decoding with a cache: 1 new query, 5 keys"), (1, 5)),
    (N_("2 new queries, 6 keys"), (2, 6)),
]

Q3_DIAGNOSES = [
    (lambda q, k: ~causal_mask(q, k),
     N_("the mask is inverted: in the course (and in scaled_dot_product_attention) True means "
        "*may attend*. (nn.Transformer's masks use the opposite meaning.)")),
    (lambda q, k: torch.ones(q, k).tril(k - q - 1).bool(),
     N_("each query must also see itself: key j is allowed when j <= i (use <=, not <).")),
    (lambda q, k: torch.ones(q, k).triu(k - q).bool(),
     N_("that lets queries see the future: the allowed keys are on and *below* the diagonal.")),
    (lambda q, k: torch.ones(q, k).tril().bool(),
     N_("with more keys than queries the queries are the *last* positions: query i is position "
        "num_keys - num_queries + i, so align the diagonal to the bottom-right (tril with "
        "diagonal=num_keys - num_queries).")),
]


def _require_bool(got, where, q, k):
    if isinstance(got, torch.Tensor) and got.dtype != torch.bool:
        raise CheckFailed(_("on {q} queries, {k} keys: return a boolean tensor (True = may attend), got dtype "
                            "{dtype}; compare with <= or call .bool().").format(q=q, k=k, dtype=got.dtype))
    return got


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_mask, Q3_CASES, Q3_DIAGNOSES, prepare=_require_bool)


q3 = Exercise(
    name=N_("Q3 (the causal mask)"),
    var="my_causal_mask",
    checker=_check_q3,
    hints=[
        N_("Return a (num_queries, num_keys) boolean tensor, True where the query may attend. With "
           "as many keys as queries, query i sees keys 0..i: the lower triangle with the diagonal."),
        N_("When decoding with a cache there are more keys than queries: the queries are the "
           "*last* num_queries positions, so query i is position num_keys - num_queries + i."),
        N_("k = torch.arange(num_keys)[None, :]; i = torch.arange(num_queries)[:, None]; "
           "return k <= i + (num_keys - num_queries)"),
    ],
    solution=N_('''
def my_causal_mask(num_queries, num_keys):
    i = torch.arange(num_queries)[:, None]          # (queries, 1)
    j = torch.arange(num_keys)[None, :]             # (1, keys)
    return j <= i + (num_keys - num_queries)        # the queries are the last positions
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: parameters of an encoder block
# ---------------------------------------------------------------------------------------

def _ref_params(d: int, ffn_hiddens: int, heads: int, bias: bool) -> int:
    block = EncoderBlock(d, ffn_hiddens, heads, bias=bias)
    return sum(p.numel() for p in block.parameters())


Q4_CASES = [(64, 256, 4, False), (64, 256, 1, True), (768, 3072, 12, True), (6, 10, 3, False)]


def _q4_cases() -> list:
    return [(f"d={d}, ffn_hiddens={f}, heads={h}, bias={b}", (d, f, h, b)) for d, f, h, b in Q4_CASES]

def _attn(d, h, b):
    return 4 * d * d + (4 * d if b else 0)


def _ffn(d, f):
    return 2 * d * f + f + d


Q4_DIAGNOSES = [
    # first: with bias=True it gives the same count as forgetting the layer norms (both are 4d),
    # and the first case, bias=False, already names the layer norms for whoever forgot them
    (lambda d, f, h, b: _attn(d, h, False) + _ffn(d, f) + 4 * d,
     N_("with bias=True each of the four attention projections has d biases too (4d in all); you "
        "counted only their weights.")),
    (lambda d, f, h, b: _attn(d, h, b) + _ffn(d, f),
     N_("you forgot the two layer norms: each has a scale and a shift of d numbers (4d in all).")),
    (lambda d, f, h, b: _attn(d, h, b) + _ffn(d, f) + 2 * d,
     N_("there are two add & norm layers, each with its own layer norm (2 × 2d).")),
    (lambda d, f, h, b: _attn(d, h, b) + 2 * d * f + 4 * d,
     N_("you forgot the FFN's biases (ffn_hiddens + d numbers).")),
    (lambda d, f, h, b: h * _attn(d, h, b) + _ffn(d, f) + 4 * d,
     N_("the attention's parameter count does not depend on the number of heads: the heads split "
        "the d columns of each projection (4 d² weights, + 4d biases with bias=True).")),
    (lambda d, f, h, b: 3 * d * d + (3 * d if b else 0) + _ffn(d, f) + 4 * d,
     N_("you forgot the attention's output projection W_o (d² weights, + d biases).")),
    (lambda d, f, h, b: 4 * d * d + 4 * d + _ffn(d, f) + 4 * d,
     N_("with bias=False the attention projections have no biases (the FFN and the layer norms "
        "still do).")),
]


def _check_q4(answer) -> str:
    run_cases(answer, _ref_params, _q4_cases(), Q4_DIAGNOSES,
              prepare=lambda got, where, *args: as_number(got, where),
              compare=equal_values(N_("on {where}: expected {expected:,} parameters, got {got:,}")))
    return _("correct on all {n} cases: attention 4d² (+4d), FFN 2·d·ffn + ffn + d, two layer norms 4d").format(
        n=len(Q4_CASES))


q4 = Exercise(
    name=N_("Q4 (parameters of an encoder block)"),
    var="encoder_block_params",
    checker=_check_q4,
    forbidden=[(transformer, "EncoderBlock", N_("building an EncoderBlock (count its weights instead)"))],
    hints=[
        N_("Three parts: multi-head attention, the FFN, and two layer norms (one per add & norm)."),
        N_("Attention: W_q, W_k, W_v, W_o are d × d each, plus d biases each when bias=True; the heads "
           "do not change the count. FFN: d × ffn_hiddens + ffn_hiddens, then ffn_hiddens × d + d."),
        N_("Each layer norm has a scale and a shift of d numbers."),
    ],
    solution=N_('''
def encoder_block_params(d, ffn_hiddens, heads, bias):
    attention = 4 * d * d + (4 * d if bias else 0)             # heads only split the columns
    ffn = d * ffn_hiddens + ffn_hiddens + ffn_hiddens * d + d  # two linear layers with biases
    norms = 2 * (2 * d)                                        # two layer norms: scale + shift
    return attention + ffn + norms
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — which decoder outputs see a changed token?
# ---------------------------------------------------------------------------------------

Q5_TGT_LEN, Q5_POSITION = 8, 3
"""q5's decoder reads 8 target positions (0..7); the token at position 3 is changed."""
_Q5_SRC_LEN, _Q5_VOCAB = 6, 20


@functools.lru_cache(maxsize=None)
def _q5_model(causal: bool, seed: int):
    with torch.random.fork_rng(devices=[]):      # leave the notebook's random numbers alone
        torch.manual_seed(seed)
        encoder = TransformerEncoder(_Q5_VOCAB, 16, 32, 2, 2).eval()
        decoder = TransformerDecoder(_Q5_VOCAB, 16, 32, 2, 2, causal=causal).eval()
    return encoder, decoder


def changed_positions(change: str = "target", position: int = Q5_POSITION, causal: bool = True,
                      seed: int = 0) -> list:
    """The experiment of q5. A seeded, untrained Transformer (2 encoder and 2 decoder blocks,
    width 16) reads a random source of 6 tokens and a random target of 8. Then one token is
    changed: the target token at ``position`` (``change="target"``) or the source token at
    ``position`` (``change="source"``). Returns the target positions whose output logits
    changed (by more than 1e-6). ``causal=False`` is the decoder without its causal mask."""
    check_choice("change", change, ("target", "source"))
    length = Q5_TGT_LEN if change == "target" else _Q5_SRC_LEN
    check_int("position", position, low=0, high=length - 1)
    check_bool("causal", causal)
    check_positive_int("seed", seed, allow_zero=True)
    encoder, decoder = _q5_model(causal, seed)
    g = seeded(seed + 1)
    src = torch.randint(3, _Q5_VOCAB, (1, _Q5_SRC_LEN), generator=g)
    tgt = torch.randint(3, _Q5_VOCAB, (1, Q5_TGT_LEN), generator=g)
    src2, tgt2 = src.clone(), tgt.clone()
    changed = tgt2 if change == "target" else src2
    changed[0, position] = 3 + (changed[0, position] - 3 + 1) % (_Q5_VOCAB - 3)    # another token
    with torch.no_grad():
        before = decoder(tgt, encoder(src))                 # (1, tgt_len, vocab)
        after = decoder(tgt2, encoder(src2))
    moved = (after - before).abs().amax(-1)[0] > 1e-6       # (tgt_len,)
    return moved.nonzero().flatten().tolist()


def _check_q5(answer) -> str:
    guess = predicted_number(answer, "prediction", 0, Q5_TGT_LEN,
                             _("a whole number from 0 to {n} (a count of positions)").format(n=Q5_TGT_LEN),
                             _("a count of positions from 0 to {n}").format(n=Q5_TGT_LEN), whole=True)
    measured = changed_positions()
    n = len(measured)
    if guess > n:
        raise CheckFailed(_(
            "{guess} is too many: the causal mask. In the decoder's self-attention a position attends only "
            "to itself and the positions before it — in every block — so no output before position "
            "{position} can see the change, however many layers deep.").format(guess=guess, position=Q5_POSITION))
    if guess == n - 1:
        raise CheckFailed(_("one too few: position {position} itself changes too — its own input token "
                            "changed.").format(position=Q5_POSITION))
    if guess < n:
        raise CheckFailed(_(
            "{guess} is too few: every position after {position} attends to position {position} (position t "
            "sees 0..t), so the change reaches all of them.").format(guess=guess, position=Q5_POSITION) + (
                _(" (Did you count the positions that keep their output?)") if guess == Q5_TGT_LEN - n else ""))
    return _("{n} positions change: {first}..{last}. Position t only sees 0..t, which is what lets training feed "
             "the whole target at once and greedy decoding reuse the earlier steps.").format(
        n=n, first=measured[0], last=measured[-1])


q5 = Exercise(
    name=N_("Q5 (predict: what a changed target token reaches)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("In the decoder's masked self-attention, which positions may position t attend to?"),
        N_("The cross-attention reads the encoder output, which did not change; the FFN works on each "
           "position separately. So a change can only travel through the masked self-attention."),
        N_("Count the positions from {position} to {last}: does position {position} itself count?"),
    ],
    solution=N_('''
# Position t attends only to positions 0..t (the causal mask), in both blocks; the
# cross-attention and the FFN do not mix target positions. So the change at position 3
# reaches positions 3, 4, 5, 6, 7 and no earlier one.
prediction = 5
'''),
    fields={"position": Q5_POSITION, "last": Q5_TGT_LEN - 1},
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 3)"), [
    Question(
        N_("Section 2 batched a 2-token sentence once with a 6-token neighbour and once with a 4-token one, padded "
           "with zeros. How much did the sentence's normalised tokens change between the two batches?"),
        options=(
            Option(N_("Layer norm: not at all (0.0000); batch norm: by up to 0.5430."),
                   why=N_("Layer norm normalises each position over its own d features, so nothing else in the batch "
                          "enters. Batch norm normalises each feature over the batch and the positions: the neighbour "
                          "and the padding (4 of the 12 slots) enter its statistics."), correct=True),
            Option(N_("Neither changed: both normalise the sentence's own numbers."),
                   why=N_("Batch norm's mean of feature 0 counted all 12 slots, padding included: 0.487, against "
                          "0.731 for the real tokens only. Its result depends on the neighbour.")),
            Option(N_("Both changed, since both see the padded batch."),
                   why=N_("Layer norm's statistics are the d numbers of one position: neither a padding slot nor "
                          "another sentence enters them. The change was 0.0000.")),
            Option(N_("Layer norm changed; batch norm did not."),
                   why=N_("The other way round: batch norm mixes statistics across the batch (a change of up to "
                          "0.5430), layer norm does not (0.0000).")),
        )),
    Question(
        N_("Section 7 trained 4 + 4 blocks at a learning rate of 3·10⁻² for 40 steps, from the same initial weights. "
           "What did post-norm without warm-up do?"),
        options=(
            Option(N_("It diverged: the loss became NaN."),
                   why=N_("It did not blow up: its loss stayed on the frequency line (2.27 nats per character), the "
                          "loss of a model that ignores its input.")),
            Option(N_("It learned as well as pre-norm: where the layer norm sits does not matter."),
                   why=N_("With the same weights, batches and learning rate, pre-norm kept learning (about 1.25) while "
                          "post-norm stayed on the frequency line. The order changes the gradients at the start.")),
            Option(N_("It got stuck at the loss of predicting the character frequencies, while pre-norm learned; "
                      "with 20 warm-up steps post-norm learned too."),
                   why=N_("At initialisation post-norm's gradients near the output are large, so a large learning rate "
                          "from the first step derails it. Warm-up rescues it (about 0.67, even below pre-norm in "
                          "this short run): pre-norm is more forgiving, not simply better."), correct=True),
            Option(N_("It learned, and warm-up made no difference."),
                   why=N_("Without warm-up post-norm stayed on the frequency line (2.27 nats per character); only with "
                          "20 warm-up steps did it learn.")),
        )),
    Question(
        N_("In the pitfall \"forgetting the causal mask\", the date model was trained without the causal mask: its "
           "teacher-forced validation loss was about as low as the real model's. Why did it get almost no date "
           "right when generating?"),
        options=(
            Option(N_("It learned the training dates by heart."),
                   why=N_("Its loss was low on unseen validation dates too (about 0.06 with teacher forcing): it learned a "
                          "shortcut that works whenever the answer is in its input, not the training set.")),
            Option(N_("It copied the answer: with teacher forcing the input at step t+1 is the label of step t, and "
                      "at inference there is no next token to peek at."),
                   why=N_("Its decoder self-attention put much of its weight on future positions, and changing only "
                          "the input at step t+1 changed its prediction at step t (about a quarter of the time). Test a sequence "
                          "model by generating, never only by its teacher-forced loss."), correct=True),
            Option(N_("Without the causal mask, cross-attention cannot find the source words."),
                   why=N_("Cross-attention has no causal mask in either model: removing the mask changed only the "
                          "decoder's self-attention, which then read the future target positions.")),
            Option(N_("It was trained for too few steps."),
                   why=N_("Its losses show it learned what it was asked (about 0.08 in training, 0.06 on validation). What "
                          "it learned was to copy the next input, which does not exist at inference; more steps only "
                          "perfect the copying.")),
        )),
    Question(
        N_("Section 8 decoded 200 validation examples greedily with and without the key/value cache. What did the "
           "cache change?"),
        options=(
            Option(N_("The tokens, a little: the cache approximates the full computation."),
                   why=N_("Cached and uncached decoding gave the same tokens on all 200 examples: feeding the "
                          "positions one by one gives exactly the full computation.")),
            Option(N_("The work: step t feeds only the newest token and reuses the keys and values of positions "
                      "0..t-1 and of the encoder."),
                   why=N_("The query of position t still sees positions 0..t: cache['self'] keeps the earlier keys and "
                          "values, cache['cross'] the encoder's, projected once. Same tokens, less work."),
                   correct=True),
            Option(N_("It lets step t see positions after t."),
                   why=N_("The cache holds only the past, positions 0..t-1. The causal mask, with more keys than "
                          "queries, is aligned bottom-right, so the newest query sees the cached keys and itself.")),
        )),
    Question(
        N_("The experiment of exercise Q5 also changed the source token at position 2, with a target of 8 positions. "
           "At how many target positions did the decoder's output logits change?"),
        answer=8, tolerance=0,
        why=N_("All 8: cross-attention lets every target position read the whole source, which has no causal mask. "
               "A changed target token at position 3 reached only positions 3 to 7."),
        why_low=N_("Too few: the causal mask limits what a changed target token reaches, but every target position "
                   "reads the whole source through cross-attention: all 8 changed."),
        why_high=N_("Too many: the target has only 8 positions, and all 8 changed, since cross-attention reads the "
                    "whole source at every position.")),
])

"""Chapter 4 exercises: BERT's input — tokens, segment ids, embeddings.

In the notebook::

    from bertcourse.exercises.ch04 import q1, q2, q3, q4, q5, q6, quiz

* ``q1`` — ``my_tokens_and_segments(tokens_a, tokens_b=None)``: ``[CLS] A [SEP]`` or
  ``[CLS] A [SEP] B [SEP]`` and the segment ids, like
  :func:`bertcourse.bert.get_tokens_and_segments`.
* ``q2`` — ``pair_segment_ids(len_a, len_b)``: the segment ids of a pair of ``len_a`` and ``len_b`` tokens.
* ``q3`` — ``input_embedding(encoder, tokens, segments)``: token + segment + position
  embeddings, then the layer norm — what :meth:`BERTEncoder.embed` returns (eval mode).
* ``q4`` — ``embedding_param_count(config)``: the number of parameters of BERT's
  embedding layer (three tables and the layer norm).
* ``q5`` — ``prediction``: *before* running the experiment, predict what share of an
  encoder's parameters sits in its embedding layer, for BERT-base and for the chapter's
  tiny configuration. The check counts them itself (:func:`encoder_parameter_split`).
* ``q6`` — ``encode_word(word, vocab)``: WordPiece's inner loop, greedy longest match first,
  like :func:`bertcourse.wordpiece.wordpiece_encode_word`.
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

Every reference answer calls :mod:`bertcourse.bert`, so the exercises check the learner
against exactly the code the chapter explains, and each knows the typical wrong answers.
"""
from __future__ import annotations

import dataclasses
import functools

import torch

from ..bert import BERTConfig, BERTEncoder, get_config, get_tokens_and_segments
from ..data import DEFAULT_VOCAB_SIZE
from ..i18n import gettext as _, gettext_noop as N_
from ..wordpiece import wordpiece_encode_word
from .core import CheckFailed, Exercise, Symptom, as_number, equal_values, run_cases, seeded
from .guesses import predicted_dict
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "quiz", "encoder_parameter_split", "Q5_CONFIGS", "Q5_TOLERANCE"]


def _int_list(x, what: str) -> list:
    """A list / tuple of ints or a 1-D integer tensor -> a list of ints (else CheckFailed)."""
    if isinstance(x, torch.Tensor):
        if x.dim() != 1 or x.is_floating_point():
            raise CheckFailed(_("{what}: expected a list of ints or a 1-D integer tensor, got a tensor of shape "
                                "{shape} and dtype {dtype}").format(what=what, shape=tuple(x.shape), dtype=x.dtype))
        return x.tolist()
    if not isinstance(x, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in x):
        raise CheckFailed(_("{what}: expected a list of ints, got {type} {x!r}").format(what=what, type=type(x).__name__, x=x))
    return list(x)


def _show(seq) -> str:
    return " ".join(str(v) for v in seq)


# ---------------------------------------------------------------------------------------
# Q1: tokens and segments
# ---------------------------------------------------------------------------------------

Q1_CASES = [
    (N_("a single text"), (["the", "river", "is", "long", "."], None)),
    (N_("a text pair"), (["she", "goes", "to", "the", "bank", "."], ["it", "is", "busy", "."])),
    (N_("a pair with WordPiece pieces"), (["tar", "##n", "##um"], ["ve", "##lo", "##ra", "is", "far"])),
    (N_("a one-token text"), (["hello"], None)),
    (N_("a pair whose B has one token"), (["a", "b", "c"], ["d"])),
    (N_("tokens_b = [] (a pair with an empty B, not a single text)"), (["a", "b"], [])),
]


def _q1_first_sep_is_b(a, b):
    tokens, segments = get_tokens_and_segments(a, b)
    if b is not None:
        segments[len(a) + 1] = 1
    return tokens, segments


def _q1_last_sep_is_a(a, b):
    tokens, segments = get_tokens_and_segments(a, b)
    if b is not None:
        segments[-1] = 0
    return tokens, segments


def _q1_no_last_sep(a, b):
    tokens, segments = get_tokens_and_segments(a, b)
    return (tokens[:-1], segments[:-1]) if b is not None else (tokens, segments)


def _q1_empty_b_is_single(a, b):
    return get_tokens_and_segments(a, b if b else None)


def _q1_sep_between_missing(a, b):
    if b is None:
        return get_tokens_and_segments(a, b)
    return ["[CLS]", *a, *b, "[SEP]"], [0] * (len(a) + 1) + [1] * (len(b) + 1)


Q1_DIAGNOSES = [
    # first: with an empty B it looks the same as a pair without its last [SEP]
    (_q1_empty_b_is_single, N_("tokens_b=None means a single text, but an empty list is still a pair: "
                               "test `tokens_b is None`, not `if tokens_b:`.")),
    (_q1_first_sep_is_b, N_("the first [SEP] belongs to sentence A: it gets segment 0 (only B and the "
                            "last [SEP] get 1).")),
    (_q1_last_sep_is_a, N_("the last [SEP] belongs to sentence B: it gets segment 1.")),
    (_q1_no_last_sep, N_("a pair ends with a second [SEP] after B: [CLS] A [SEP] B [SEP].")),
    (_q1_sep_between_missing, N_("a pair needs a [SEP] between A and B: [CLS] A [SEP] B [SEP].")),
    (Symptom(lambda got, a, b: len(got[0]) != len(got[1])),
     N_("tokens and segments must have the same length (one segment id per token).")),
]


def _q1_result(got, where, a, b) -> tuple:
    """The learner's (tokens, segments) as (list of str, list of int), or CheckFailed."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(_("on {where}: return two lists, (tokens, segments); got {type}").format(
            where=where, type=type(got).__name__))
    tokens, segments = got
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise CheckFailed(_("on {where}: tokens must be a list of str, got {tokens!r}").format(where=where, tokens=tokens))
    return list(tokens), _int_list(segments, _("on {where}, segments").format(where=where))


def _q1_message(got, expected, where) -> str:
    return _("on {where}: expected tokens [{tokens}] with segments [{segments}], got [{got_tokens}] with "
             "[{got_segments}]").format(where=where, tokens=_show(expected[0]), segments=_show(expected[1]),
                                        got_tokens=_show(got[0]), got_segments=_show(got[1]))


def _check_q1(answer) -> str:
    return run_cases(answer, get_tokens_and_segments, Q1_CASES, Q1_DIAGNOSES, prepare=_q1_result,
                     compare=equal_values(_q1_message))


q1 = Exercise(
    name=N_("Q1 (tokens and segments)"),
    var="my_tokens_and_segments",
    checker=_check_q1,
    hints=[
        N_("Start with ['[CLS]', *tokens_a, '[SEP]'] and one segment id 0 for each of those tokens."),
        N_("Only if tokens_b is not None (an empty list still counts as a pair): append *tokens_b "
           "and a final '[SEP]', each with segment id 1."),
        N_("[0] * n makes a list of n zeros; the first [SEP] is part of sentence A (segment 0), "
           "the last [SEP] part of sentence B (segment 1)."),
    ],
    solution=N_('''
def my_tokens_and_segments(tokens_a, tokens_b=None):
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segments = [0] * len(tokens)                      # [CLS], A and the first [SEP]
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * (len(tokens_b) + 1)         # B and the last [SEP]
    return tokens, segments
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: segment ids of a pair from the lengths
# ---------------------------------------------------------------------------------------

def _ref_pair_segments(len_a: int, len_b: int) -> list:
    return get_tokens_and_segments(["a"] * len_a, ["b"] * len_b)[1]


Q2_CASES = [(5, 4), (1, 1), (10, 3), (3, 10), (0, 2), (2, 0), (0, 0), (60, 1)]


def _q2_cases() -> list:
    return [(f"len_a={a}, len_b={b}", (a, b)) for a, b in Q2_CASES]


Q2_DIAGNOSES = [
    (lambda a, b: [0] * (a + 1) + [1] * (b + 2),
     N_("off by one at the [SEP] boundary: the first [SEP] (position len_a + 1) belongs to A, segment 0.")),
    (lambda a, b: [0] * (a + 3) + [1] * b, N_("the last [SEP] belongs to B: it gets segment 1.")),
    (lambda a, b: [0] * (a + 2) + [1] * b, N_("you forgot the last [SEP]: a pair has len_a + len_b + 3 tokens.")),
    (lambda a, b: [0] * (a + 1) + [1] * (b + 1), N_("you left out one [SEP]: [CLS] A [SEP] B [SEP] "
                                                  "has len_a + len_b + 3 tokens.")),
    (lambda a, b: [0] * a + [1] * b, N_("the special tokens need segment ids too: [CLS] A [SEP] B [SEP] "
                                        "has len_a + len_b + 3 tokens.")),
]


def _check_q2(answer) -> str:
    run_cases(answer, _ref_pair_segments, _q2_cases(), Q2_DIAGNOSES,
              prepare=lambda got, where, *args: _int_list(got, _("on {where}").format(where=where)),
              compare=equal_values(N_("on {where}: expected [{expected}], got [{got}]"), show=_show))
    return _("correct on all {n} cases (including empty sentences)").format(n=len(Q2_CASES))


q2 = Exercise(
    name=N_("Q2 (segment ids of a pair)"),
    var="pair_segment_ids",
    checker=_check_q2,
    hints=[
        N_("Write the pair out: [CLS] A [SEP] B [SEP] has len_a + len_b + 3 tokens."),
        N_("Segment 0 covers [CLS], the len_a tokens of A and the first [SEP]: len_a + 2 zeros. "
           "Segment 1 covers the len_b tokens of B and the last [SEP]: len_b + 1 ones."),
    ],
    solution=N_('''
def pair_segment_ids(len_a, len_b):
    return [0] * (len_a + 2) + [1] * (len_b + 1)
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the input embedding from the three tables
# ---------------------------------------------------------------------------------------

def _encoder(seed: int, **overrides) -> BERTEncoder:
    """A small BERTEncoder in eval mode with seeded weights and a non-trivial layer norm.
    Built under ``fork_rng`` so that making the exercise does not move the notebook's RNG."""
    config = get_config("tiny", **{**dict(vocab_size=40, num_hiddens=16, ffn_num_hiddens=32,
                                          num_blks=1, max_len=12), **overrides})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        enc = BERTEncoder(config).eval()
        with torch.no_grad():
            # scales as in BERT's initialisation, so no table dominates the sum
            for table in (enc.token_embedding.weight, enc.segment_embedding.weight, enc.pos_embedding.weight):
                table.normal_(0.0, 0.5)
            enc.embedding_norm.weight.uniform_(0.5, 1.5)
            enc.embedding_norm.bias.uniform_(-0.5, 0.5)
    return enc


def _ids(seed: int, shape: tuple, high: int) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=seeded(seed))


def _pair_segments(batch: int, seq: int, len_a: int) -> torch.Tensor:
    segments = torch.zeros(batch, seq, dtype=torch.long)
    segments[:, len_a + 2:] = 1
    return segments


_E1, _E2, _E3 = _encoder(1), _encoder(2, num_hiddens=8, max_len=6), _encoder(3)

Q3_CASES = [
    # batch 3: neither the seq (9) nor num_segments (2) nor max_len (12), so each wrong shape raises its own error
    (N_("batch=3, a pair of 9 tokens"), (_E1, _ids(11, (3, 9), 40), _pair_segments(3, 9, 3))),
    (N_("a single text (all segment ids 0)"), (_E1, _ids(12, (1, 5), 40), torch.zeros(1, 5, dtype=torch.long))),
    (N_("seq = max_len (every row of the position table used)"),
     (_E2, _ids(13, (3, 6), 40), _pair_segments(3, 6, 1))),
    (N_("a batch of 1 with one token"), (_E3, _ids(14, (1, 1), 40), torch.zeros(1, 1, dtype=torch.long))),
    (N_("a repeated token id"), (_E3, torch.tensor([[7, 7, 7, 7]]), torch.tensor([[0, 0, 1, 1]]))),
]


def _ref_input_embedding(encoder, tokens, segments):
    with torch.no_grad():
        return encoder.embed(tokens, segments)


def _ln(encoder, X):
    return torch.nn.functional.layer_norm(X, X.shape[-1:], encoder.embedding_norm.weight,
                                          encoder.embedding_norm.bias, encoder.config.norm_eps)


# The three terms of the right sum, each (encoder, tokens, segments) -> tensor; a mistake replaces one.
def _tok(e, t, s): return e.token_embedding.weight[t]                 # noqa: E704
def _seg(e, t, s): return e.segment_embedding.weight[s]               # noqa: E704
def _pos(e, t, s): return e.pos_embedding.weight[:t.shape[1]]         # noqa: E704


def _made(tok=_tok, seg=_seg, pos=_pos, norm=_ln):
    # a typical wrong answer: the right one with one part (a term, the norm) replaced
    return lambda e, t, s: norm(e, tok(e, t, s) + seg(e, t, s) + pos(e, t, s))


def _sized(template: str):
    # a diagnosis message: `template` (marked with N_) filled in with the case's sizes
    def message(*args):                                       # (got, ...) for a Symptom
        e, t, s = args[-3:]
        return _(template).format(batch=t.shape[0], seq=t.shape[1], d=e.config.num_hiddens,
                                  max_len=e.config.max_len, segments=e.config.num_segments)
    return message


_D2L_SLICE = _sized(N_("the position table is 2-D, (max_len, num_hiddens) = ({max_len}, {d}): d2l's [:, :seq, :] "
                          "is for one with a batch axis in front, and [:, :seq] (or .T) puts seq last. Take "
                          "weight[:tokens.shape[1]], (seq, num_hiddens) = ({seq}, {d})."))
_POSITION_MODULE = _sized(N_("encoder.pos_embedding(X) looks no ids up: it returns the embeddings X, (batch, seq, "
                             "num_hiddens) = ({batch}, {seq}, {d}), plus the position rows. Call it on the sum of the "
                             "other two, or add encoder.pos_embedding.weight[:seq]."))


Q3_DIAGNOSES = [
    (_made(norm=lambda e, X: X), N_("you returned the sum; BERT then applies its layer norm, encoder.embedding_norm.")),
    (_made(norm=lambda e, X: torch.nn.functional.layer_norm(X, X.shape[-1:], eps=e.config.norm_eps)),
     N_("your layer norm has no learned scale and shift: use encoder.embedding_norm (its weight and bias), not a "
        "bare normalisation.")),
    (_made(seg=lambda e, t, s: 0), N_("you left out the segment embedding: add encoder.segment_embedding(segments).")),
    (_made(pos=lambda e, t, s: 0),
     N_("you left out the position embedding: add the first seq rows of encoder.pos_embedding.weight.")),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight[t.clamp(max=e.config.max_len - 1)]),
     N_("you looked the position table up with the token ids; it is indexed by position 0, 1, ..., seq-1.")),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight[torch.arange(1, t.shape[1] + 1).clamp(max=e.config.max_len - 1)]),
     N_("off by one: positions start at 0 ([CLS] is position 0).")),
    (_made(seg=lambda e, t, s: e.segment_embedding.weight[0]),
     N_("you added segment 0's row everywhere: look the segment table up with the segments tensor.")),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight[:len(t)]), _sized(N_(
        "the position rows follow the seq axis: tokens is (batch, seq) = ({batch}, {seq}), and len(tokens) (or "
        "tokens.shape[0]) is the batch size, {batch}. Take encoder.pos_embedding.weight[:tokens.shape[1]], (seq, "
        "num_hiddens) = ({seq}, {d}), which broadcasts over the batch."))),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight), _sized(N_(
        "you added the whole position table, (max_len, num_hiddens) = ({max_len}, {d}), for seq = {seq} positions: "
        "take its first seq rows, encoder.pos_embedding.weight[:tokens.shape[1]], ({seq}, {d})."))),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight[:, :t.shape[1]]), _D2L_SLICE),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight[:, :t.shape[1], :]), _D2L_SLICE),
    (_made(pos=lambda e, t, s: _pos(e, t, s).unsqueeze(1)), _sized(N_(
        "your position rows are (seq, 1, num_hiddens) = ({seq}, 1, {d}), which lines seq up with the batch axis of "
        "the ({batch}, {seq}, {d}) embeddings: put the new axis in front, .unsqueeze(0), or add none."))),
    (_made(pos=lambda e, t, s: e.pos_embedding(t)), _POSITION_MODULE),
    (_made(pos=lambda e, t, s: e.pos_embedding(torch.arange(t.shape[1]))), _POSITION_MODULE),
    (_made(pos=lambda e, t, s: e.pos_embedding.weight[t]), _sized(N_(
        "you looked the position table up with the token ids; its max_len = {max_len} rows are positions 0, 1, ..., "
        "and a token id can be larger. Take its first seq rows, encoder.pos_embedding.weight[:tokens.shape[1]]."))),
    (_made(seg=lambda e, t, s: e.segment_embedding.weight), _sized(N_(
        "encoder.segment_embedding.weight is the whole table, (num_segments, num_hiddens) = ({segments}, {d}); look "
        "the ids up: encoder.segment_embedding(segments), (batch, seq, num_hiddens) = ({batch}, {seq}, {d})."))),
    # near misses: the code runs, one known step is off
    (_made(pos=lambda e, t, s: e.pos_embedding(_tok(e, t, s) + _seg(e, t, s))),
     N_("encoder.pos_embedding(X) already returns X plus the position rows: adding X to it again counts the token "
        "and segment embeddings twice.")),
    (_made(seg=lambda e, t, s: e.token_embedding.weight[s]),
     N_("you looked the segment ids up in the token table; they have their own: encoder.segment_embedding(segments).")),
    (Symptom(lambda got, e, t, s: isinstance(got, torch.Tensor) and got.shape == (t.shape[1], e.config.num_hiddens)),
     _sized(N_(
        "you returned one sequence's embeddings, (seq, num_hiddens) = ({seq}, {d}): keep the batch axis and return "
        "(batch, seq, num_hiddens) = ({batch}, {seq}, {d})."))),
]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_input_embedding, Q3_CASES, Q3_DIAGNOSES, no_grad=True)


q3 = Exercise(
    name=N_("Q3 (the input embedding)"),
    var="input_embedding",
    checker=_check_q3,
    forbidden=[(BERTEncoder, "embed", "encoder.embed")],
    hints=[
        N_("Three lookups, each (batch, seq, num_hiddens) or broadcastable to it: "
           "encoder.token_embedding(tokens), encoder.segment_embedding(segments), and the first "
           "seq rows of encoder.pos_embedding.weight."),
        N_("Positions are 0, 1, ..., seq-1 whatever the tokens are: "
           "encoder.pos_embedding.weight[:tokens.shape[1]] has shape (seq, num_hiddens) and "
           "broadcasts over the batch."),
        N_("Then normalise the sum with encoder.embedding_norm (a LayerNorm with learned scale and shift)."),
    ],
    solution=N_('''
def input_embedding(encoder, tokens, segments):
    seq = tokens.shape[1]
    X = (encoder.token_embedding(tokens)                 # (batch, seq, num_hiddens)
         + encoder.segment_embedding(segments)           # (batch, seq, num_hiddens)
         + encoder.pos_embedding.weight[:seq])           # (seq, num_hiddens), broadcast
    return encoder.embedding_norm(X)
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: parameters of the embedding layer
# ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _count_embedding_params(fields: tuple) -> int:
    # The embedding layer is the encoder without its blocks. A config needs at least one
    # block, so build one, as small as the config allows, and leave it out of the count.
    # (Building on the "meta" device would allocate nothing, but its first use imports
    # torch's compiler stack, which takes seconds; BERT-large's tables take ~0.1 s, once.)
    config = dataclasses.replace(BERTConfig(*fields), num_blks=1, num_heads=1, ffn_num_hiddens=1)
    with torch.random.fork_rng(devices=[]):      # leave the notebook's random numbers alone
        enc = BERTEncoder(config)
    modules = (enc.token_embedding, enc.segment_embedding, enc.pos_embedding, enc.embedding_norm)
    outside_blocks = sum(p.numel() for p in enc.parameters()) - sum(p.numel() for p in enc.blks.parameters())
    assert outside_blocks == sum(p.numel() for m in modules for p in m.parameters())
    return outside_blocks


def _ref_embedding_params(config: BERTConfig) -> int:
    return _count_embedding_params(dataclasses.astuple(config))


Q4_CASES = [("tiny", get_config("tiny")), ("d2l-small", get_config("d2l-small")),
            ("base", get_config("base")), ("large", get_config("large")),
            (N_("tiny with max_len=128"), get_config("tiny", max_len=128)),
            (N_("tiny with num_segments=3"), get_config("tiny", num_segments=3))]

Q4_DIAGNOSES = [
    (lambda c: (c.vocab_size + c.num_segments + c.max_len) * c.num_hiddens,
     N_("you forgot the layer norm after the sum: its scale and shift add 2 × num_hiddens.")),
    (lambda c: (c.vocab_size + c.max_len + 2) * c.num_hiddens,
     N_("you forgot the segment table (num_segments × num_hiddens).")),
    (lambda c: (c.vocab_size + 2 + c.max_len + 2) * c.num_hiddens,
     N_("the segment table has config.num_segments rows (2 in BERT, but read it from the config).")),
    (lambda c: (c.vocab_size + c.num_segments + 2) * c.num_hiddens,
     N_("you forgot the position table: BERT's positions are learned, max_len × num_hiddens "
        "parameters (the sinusoids of chapter 2 have none).")),
    (lambda c: (c.vocab_size + 2) * c.num_hiddens,
     N_("you counted only the token table (and the layer norm): the segment and position tables are parameters too.")),
    (lambda c: c.vocab_size * c.num_hiddens,
     N_("you counted only the token table: add the segment and position tables and the layer norm.")),
]


def _check_q4(answer) -> str:
    # with num_segments = 2 some mistakes give the same number (forgetting the segment
    # table's 2 rows or the layer norm's 2 vectors): name all that fit
    run_cases(answer, _ref_embedding_params, [(_("the {name} config").format(name=name), (c,)) for name, c in Q4_CASES],
              Q4_DIAGNOSES, prepare=lambda got, where, *args: as_number(got, where),
              compare=equal_values(N_("on {where}: expected {expected:,} parameters, got {got:,}")),
              all_diagnoses=True)
    return _("correct on all {n} configs (BERT-base's embedding layer: {count:,} parameters)").format(
        n=len(Q4_CASES), count=_ref_embedding_params(get_config("base")))


q4 = Exercise(
    name=N_("Q4 (parameters of the embedding layer)"),
    var="embedding_param_count",
    checker=_check_q4,
    hints=[
        N_("The embedding layer has three tables, each with num_hiddens columns: one row per token "
           "of the vocabulary, per segment and per position."),
        N_("After the sum comes a LayerNorm with a scale and a shift vector of num_hiddens each."),
    ],
    solution=N_('''
def embedding_param_count(config):
    c = config
    tables = (c.vocab_size + c.num_segments + c.max_len) * c.num_hiddens
    return tables + 2 * c.num_hiddens                   # + layer norm scale and shift
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then count — how much of BERT is its embedding layer?
# ---------------------------------------------------------------------------------------

Q5_CONFIGS = {"base": get_config("base"), "tiny": get_config("tiny", vocab_size=DEFAULT_VOCAB_SIZE)}
"""q5's two encoders: BERT-base, and the chapter's tiny one (the course vocabulary of 3,000)."""
Q5_TOLERANCE = 0.05


@functools.lru_cache(maxsize=None)
def _split(fields: tuple) -> dict:
    config = BERTConfig(*fields)
    # every block has the same parameters, so one block, counted num_blks times, is the whole
    # stack (building BERT-large's 24 blocks would take a second and 1.3 GB for nothing)
    with torch.random.fork_rng(devices=[]):      # leave the notebook's random numbers alone
        enc = BERTEncoder(dataclasses.replace(config, num_blks=1))
    embedding = sum(p.numel() for m in (enc.token_embedding, enc.segment_embedding, enc.pos_embedding,
                                         enc.embedding_norm) for p in m.parameters())
    block = sum(p.numel() for p in enc.blks[0].parameters())
    assert embedding + block == sum(p.numel() for p in enc.parameters())
    blocks = config.num_blks * block
    return {"embedding": embedding, "blocks": blocks, "total": embedding + blocks,
            "share": embedding / (embedding + blocks)}


def encoder_parameter_split(config: BERTConfig) -> dict:
    """The count of q5: a :class:`~bertcourse.bert.BERTEncoder`'s parameters (no pooler, no
    pretraining heads), split into the embedding layer (three tables and its layer norm) and
    the blocks. Returns ``{"embedding", "blocks", "total", "share"}``, ``share`` being the
    embedding layer's share of the total."""
    if not isinstance(config, BERTConfig):
        raise TypeError(f"config must be a BERTConfig (e.g. get_config('base')), got {type(config).__name__}")
    return dict(_split(dataclasses.astuple(config)))


_Q5_WHY = {
    ("base", "high"): N_("BERT-base's blocks weigh more than that: each of its 12 blocks has about 12·d² "
                         "parameters (4d² in the attention, 2·d·4d in the FFN), and d = 768 is wide."),
    ("base", "low"): N_("the token table alone is vocab_size × d = 30,522 × 768: as large as several blocks."),
    ("tiny", "high"): N_("the blocks still count: 2 blocks of about 4d² (attention) + 2·d·ffn (FFN) each."),
    ("tiny", "low"): N_("in a small model the vocabulary dominates: the token table grows like vocab_size × d, "
                        "a block like d². With d = 64, compare 3,000 × 64 with 2 blocks of about 12 × 64² each."),
}


def _check_q5(answer) -> str:
    keys = tuple(Q5_CONFIGS)
    guess = predicted_dict(answer, keys, "prediction", _("a share between 0 and 1 each ({'base': <share>, "
                           "'tiny': <share>})"), low=0.0, high=1.0, must=_("a number between 0 and 1"),
                           in_range=_("a share between 0 and 1 (0.5 for half)"), blank=_("a share between 0 and 1"))
    measured = {key: encoder_parameter_split(c)["share"] for key, c in Q5_CONFIGS.items()}
    off = [k for k in keys if abs(guess[k] - measured[k]) > Q5_TOLERANCE]
    if off:
        reasons = [(_("{key!r}: {guess:.2f} is too high: {why}") if guess[k] > measured[k] else
                    _("{key!r}: {guess:.2f} is too low: {why}")).format(
            key=k, guess=guess[k], why=_(_Q5_WHY[k, "high" if guess[k] > measured[k] else "low"])) for k in off]
        raise CheckFailed(_("off by more than {tolerance} on {keys}. ").format(
            tolerance=Q5_TOLERANCE, keys=_(" and ").join(repr(k) for k in off)) + _(" And ").join(reasons))
    return _("BERT-base: {base:.1%} of the encoder is embeddings (you said {guess_base:.0%}); tiny: {tiny:.1%} "
             "(you said {guess_tiny:.0%}). The token table grows with the vocabulary, the blocks with d²: small "
             "models are mostly vocabulary.").format(base=measured["base"], guess_base=guess["base"],
                                                     tiny=measured["tiny"], guess_tiny=guess["tiny"])


q5 = Exercise(
    name=N_("Q5 (predict: how much of BERT is embeddings?)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("Your Q4 counts the embedding layer. For a block, chapter 3's Q4: attention 4d² + 4d, FFN "
           "2·d·ffn + ffn + d, two layer norms 4d."),
        N_("BERT-base: d = 768, ffn = 3,072, 12 blocks, vocabulary 30,522. Tiny: d = 64, ffn = 128, 2 blocks, "
           "vocabulary 3,000, max_len 64."),
        N_("Roughly: a block is about 4d² + 2·d·ffn, the embeddings about vocab_size × d. Divide."),
    ],
    solution=N_('''
# BERT-base: embeddings (30,522 + 2 + 512) × 768 + 2·768 ≈ 23.8M; each of 12 blocks
# 4·768² + 2·768·3,072 (+ biases, norms) ≈ 7.1M, so 85M for the blocks: 22 % embeddings.
# Tiny: embeddings (3,000 + 2 + 64) × 64 + 128 ≈ 196k; each of 2 blocks
# 4·64² + 2·64·128 (+ biases, norms) ≈ 33k: 75 % embeddings.
prediction = {"base": 0.22, "tiny": 0.75}
'''),
)


# ---------------------------------------------------------------------------------------
# Q6: WordPiece's inner loop, greedy longest match first
# ---------------------------------------------------------------------------------------

# Small vocabularies in which each usual mistake gives another answer than the encoder.
_Q6_PIECES = {"un", "##aff", "##able", "u", "##n", "##a", "##f", "##b", "##l", "##e", "aff", "able",
              "play", "##ing", "p", "##l", "##y", "##i", "##g", "ing", "capital", "ab", "a", "##bc"}
Q6_CASES = [("unaffable", _Q6_PIECES), ("playing", _Q6_PIECES), ("capital", _Q6_PIECES),
            ("abc", _Q6_PIECES), ("playx", _Q6_PIECES), ("xyz", _Q6_PIECES), ("a", _Q6_PIECES)]


def _q6_cases() -> list:
    # a frozenset: the answer cannot change the shared vocabulary in place
    return [(_("word={word!r}").format(word=word), (word, frozenset(vocab))) for word, vocab in Q6_CASES]


# The encoder's loop with one knob per usual mistake (what a wrong answer computes). A comment, not a
# docstring: Q6_DIAGNOSES names this function, and a diagnosis's docstring is its message.
def _q6_greedy(word, vocab, longest: bool = True, prefix: str = "##", partial: bool = False) -> list:
    pieces, start = [], 0
    while start < len(word):
        ends = range(len(word), start, -1) if longest else range(start + 1, len(word) + 1)
        piece = next((prefix * (start > 0) + word[start:end] for end in ends
                      if prefix * (start > 0) + word[start:end] in vocab), None)
        if piece is None:
            return pieces + ["[UNK]"] if partial else ["[UNK]"]
        pieces.append(piece)
        start += len(piece) - len(prefix) * (start > 0)
    return pieces


Q6_DIAGNOSES = [
    (lambda word, vocab: _q6_greedy(word, vocab, longest=False),
     N_("you take the shortest piece first; WordPiece takes the longest piece that is in the vocabulary "
        "(try the end of the word first, then shorten).")),
    (lambda word, vocab: _q6_greedy(word, vocab, prefix=""),
     N_("a piece that continues a word is spelled with '##' in the vocabulary ('##able', not 'able'): "
        "look up '##' + the rest for every piece but the first, and keep the '##' in the result.")),
    (lambda word, vocab: _q6_greedy(word, vocab, partial=True),
     N_("when no piece fits, the WHOLE word becomes ['[UNK]'], not the pieces found so far plus '[UNK]'.")),
]


def _str_list(x, what: str) -> list:
    if not isinstance(x, (list, tuple)) or not all(isinstance(v, str) for v in x):
        raise CheckFailed(_("{what}: expected a list of str (the pieces), got {type} {x!r}").format(
            what=what, type=type(x).__name__, x=x))
    return list(x)


def _check_q6(answer) -> str:
    run_cases(answer, wordpiece_encode_word, _q6_cases(), Q6_DIAGNOSES,
              prepare=lambda got, where, *args: _str_list(got, _("on {where}").format(where=where)),
              compare=equal_values(N_("on {where}: expected {expected}, got {got}")))
    return _("correct on all {n} words, the one greedy cannot finish ('abc') and the unknown ones included").format(
        n=len(Q6_CASES))


q6 = Exercise(
    name=N_("Q6 (WordPiece's inner loop)"),
    var="encode_word",
    checker=_check_q6,
    hints=[
        N_("Keep a start position. From it, try the longest rest of the word first and shorten it until the "
           "piece is in the vocabulary; then continue after that piece."),
        N_("Every piece but the first is looked up (and returned) as '##' + piece."),
        N_("If no piece fits at some position, return ['[UNK]'] for the whole word: BERT does not keep the "
           "pieces it found before."),
    ],
    solution=N_('''
def encode_word(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):          # the longest piece first
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:                                            # no piece fits: the whole word is unknown
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 4)"), [
    Question(
        N_("Section 1: in the untrained encoder, bank | money and bank | river have cosine 0.997; bank | money and "
           "bank among 200 contexts of random tokens, 0.991 to 0.998. What does that show?"),
        options=(
            Option(N_("The encoder already tells the money bank from the river bank."),
                   why=N_("Random tokens move bank just as far, and the river sentence lies inside their range. "
                          "An untrained encoder reacts to any change of context, meaningful or not.")),
            Option(N_("The output depends on the other tokens, but the difference means nothing yet."),
                   why=N_("Attention mixes the other tokens into every position (the mechanics), but with "
                          "random weights a river moves bank no further than noise does. Meaning needs training "
                          "(chapters 7 and 8)."), correct=True),
            Option(N_("The two output vectors are identical, because bank's two input vectors are."),
                   why=N_("The input vectors are identical (cosine 1.0: same token, segment and position), but "
                          "after two blocks they differ (0.997): attention mixes in the other tokens.")),
            Option(N_("The vectors differ because bank stands at a different position in each sentence."),
                   why=N_("The word bank stands at position 7 in both sentences, so even its position embedding is the "
                          "same; only the other words differ.")),
        )),
    Question(
        N_("The pitfall \"segment ids off by one at the [SEP] boundary\" gives the first [SEP] of a pair segment 1 "
           "instead of 0. What changes?"),
        options=(
            Option(N_("The encoder raises an error about the segment ids."),
                   why=N_("Segment 1 is a valid id at any position; the wrong version runs without an error, "
                          "which is what makes it dangerous.")),
            Option(N_("Every token of sentence B gets another input vector."),
                   why=N_("The tokens of B have segment 1 in both versions. The comparison found one position "
                          "whose input vector differs.")),
            Option(N_("Exactly one input vector, the first [SEP]'s, and nothing fails."),
                   why=N_("Only that position's segment embedding changes (row 1 instead of row 0). A "
                          "pretrained model gets a slightly wrong input for every pair, silently."), correct=True),
            Option(N_("The position embeddings of sentence B shift by one."),
                   why=N_("Positions do not depend on the segment ids; only the segment embedding of the first "
                          "[SEP] changes.")),
        )),
    Question(
        N_("The pitfall \"pos_embedding.data — a position table that never learns\" adds the position table as "
           "pos_embedding.weight.data. What did the chapter measure?"),
        options=(
            Option(N_("The forward pass gives other numbers than BERTEncoder.embed."),
                   why=N_("The two outputs are exactly equal; .data changes nothing in the forward pass, which "
                          "is why the bug hides.")),
            Option(N_("backward() raises a RuntimeError."),
                   why=N_("backward() runs without an error; autograd simply never reaches the detached table.")),
            Option(N_("The table gets a gradient in the rows of the used positions only."),
                   why=N_("That is the correct version, BERTEncoder.embed (a gradient in rows 0..15, the 16 "
                          "positions used). With .data the gradient is None.")),
            Option(N_("The position table gets no gradient (None), so an SGD step leaves it at its random start."),
                   why=N_(".data is the tensor detached from autograd, so the table never learns while the "
                          "loss still falls. The gradient check of tests/test_bert.py catches it."), correct=True),
        )),
    Question(
        N_("Section 3: each of the three tables starts at N(0, 0.02²). What standard deviation did their raw sum, "
           "token + segment + position, have before the layer norm?"),
        answer=0.0353, tolerance=0.003,
        why=N_("0.0353 ≈ 0.02·√3. Independent random vectors add their variances, 3 × 0.02², so the "
               "standard deviation grows by √3, not by 3. The layer norm then brings every position to variance 1."),
        why_low=N_("Too low: 0.02 is one table. Adding three independent tables adds their variances, 3 × 0.02², so "
                   "the standard deviation is 0.02·√3 ≈ 0.035."),
        why_high=N_("Too high: 3 × 0.02 = 0.06 would need three tables whose entries always have the same sign; "
                    "independent ones add their variances: 0.02·√3 ≈ 0.035. (After the layer norm it is 1.)")),
    Question(
        N_("Section 4.2 trained two vocabularies of 3,000 pieces on the same text. Held-out words took 2.57 pieces "
           "with one and 1.06 with the other. Which rule gave 1.06, and why?"),
        options=(
            Option(N_("Merging the most frequent pair (the tokenizers library): it keeps the frequent words whole."),
                   why=N_("Frequent pairs build the frequent words first; with 3,000 pieces nearly every word of "
                          "running text is one piece (rare words are still split), so every later chapter gets "
                          "shorter sequences."), correct=True),
            Option(N_("The score rule, freq(ab) / (freq(a) × freq(b)): it prefers pairs whose parts rarely occur "
                      "apart."),
                   why=N_("That rule gave 2.57. Its first merges go to pairs that always occur together (of, sq, "
                          "qu, then the letters of rare made-up names), so it builds words up one piece at a time.")),
            Option(N_("Neither: the encoder is the same, so both give the same pieces."),
                   why=N_("The encoder (greedy, longest match first) is the same, but the vocabularies differ "
                          "(only 554 tokens are in both), and so do the pieces.")),
            Option(N_("The score rule, because the other one leaves words unknown."),
                   why=N_("Neither vocabulary leaves a held-out word unknown (0 and 0), since single characters "
                          "are pieces too. The score rule gave 2.57.")),
        )),
])

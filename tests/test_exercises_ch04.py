"""Tests for the chapter 4 exercises (bertcourse.exercises.ch04).

The wrong answers below are written the way a learner would write them (not imported
from the module), so the tests check that real mistakes get a message naming them.
"""
import pytest
import torch

from bertcourse.bert import BERTEncoder, get_config, get_tokens_and_segments
from bertcourse.exercises import ch04
from bertcourse.exercises.ch04 import q1, q2, q3, q4, q5
from test_exercises import assert_fails_with, assert_passes_with


# --- references and solutions pass -------------------------------------------------------

def test_reference_implementations_pass_their_own_check():
    assert q1.check(get_tokens_and_segments)
    assert q2.check(ch04._ref_pair_segments)
    assert q3.check(ch04._ref_input_embedding)
    assert q4.check(ch04._ref_embedding_params)


def test_references_agree_with_hand_computations():
    assert ch04._ref_pair_segments(2, 3) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert ch04._ref_pair_segments(0, 0) == [0, 0, 1]
    # BERT-base: (30522 + 2 + 512) * 768 table entries + 2 * 768 layer-norm parameters
    assert ch04._ref_embedding_params(get_config("base")) == 23_837_184
    # q3's reference is token + segment + position, then the encoder's layer norm
    enc, tokens, segments = ch04.Q3_CASES[0][1]
    n = tokens.shape[1]
    by_hand = (enc.token_embedding.weight[tokens] + enc.segment_embedding.weight[segments]
               + enc.pos_embedding.weight[:n])
    by_hand = torch.nn.functional.layer_norm(by_hand, (16,), enc.embedding_norm.weight,
                                             enc.embedding_norm.bias, 1e-12)
    torch.testing.assert_close(ch04._ref_input_embedding(enc, tokens, segments), by_hand.detach())


def test_cases_include_edge_cases():
    q1_args = [args for _, args in ch04.Q1_CASES]
    assert any(b is None for _, b in q1_args) and any(b == [] for _, b in q1_args)
    assert any(len(a) == 1 for a, _ in q1_args)
    assert any(c.num_segments != 2 for _, c in ch04.Q4_CASES)
    assert (0, 0) in ch04.Q2_CASES and (0, 2) in ch04.Q2_CASES and (2, 0) in ch04.Q2_CASES
    assert any(t.shape[1] == enc.config.max_len for _, (enc, t, s) in ch04.Q3_CASES)
    assert any(t.shape == (1, 1) for _, (enc, t, s) in ch04.Q3_CASES)
    assert any((s == 1).any() for _, (enc, t, s) in ch04.Q3_CASES)
    # the layer norms of the q3 encoders are not the identity (so forgetting their scale shows)
    assert all(not torch.allclose(enc.embedding_norm.weight, torch.ones(enc.config.num_hiddens))
               for _, (enc, t, s) in ch04.Q3_CASES)


def test_making_the_exercises_does_not_move_the_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ch04._encoder(5)
    ch04._ref_embedding_params(get_config("tiny", max_len=33))    # builds an encoder too
    torch.testing.assert_close(torch.rand(3), expected)


# --- typical wrong answers name the mistake ---------------------------------------------

def q1_first_sep_in_b(tokens_a, tokens_b=None):
    tokens = ["[CLS]"] + list(tokens_a)
    segments = [0] * len(tokens)
    if tokens_b is None:
        return tokens + ["[SEP]"], segments + [0]
    return tokens + ["[SEP]"] + list(tokens_b) + ["[SEP]"], segments + [1] * (len(tokens_b) + 2)


def q1_truthy_b(tokens_a, tokens_b=None):
    tokens, segments = ["[CLS]", *tokens_a, "[SEP]"], [0] * (len(tokens_a) + 2)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


def q1_no_final_sep(tokens_a, tokens_b=None):
    tokens, segments = ["[CLS]", *tokens_a, "[SEP]"], [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += list(tokens_b)
        segments += [1] * len(tokens_b)
    return tokens, segments


def q1_last_sep_zero(tokens_a, tokens_b=None):
    tokens, segments = ["[CLS]", *tokens_a, "[SEP]"], [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * len(tokens_b) + [0]
    return tokens, segments


def q1_one_sep(tokens_a, tokens_b=None):
    if tokens_b is None:
        return ["[CLS]", *tokens_a, "[SEP]"], [0] * (len(tokens_a) + 2)
    return ["[CLS]", *tokens_a, *tokens_b, "[SEP]"], [0] * (len(tokens_a) + 1) + [1] * (len(tokens_b) + 1)


def q1_length_mismatch(tokens_a, tokens_b=None):
    tokens, segments = ["[CLS]", *tokens_a, "[SEP]"], [0] * len(tokens_a)
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


@pytest.mark.parametrize("wrong, phrase", [
    (q1_first_sep_in_b, "the first [SEP] belongs to sentence A"),
    (q1_truthy_b, "test `tokens_b is None`"),
    (q1_no_final_sep, "a pair ends with a second [SEP]"),
    (q1_last_sep_zero, "the last [SEP] belongs to sentence B"),
    (q1_one_sep, "a pair needs a [SEP] between A and B"),
    (q1_length_mismatch, "must have the same length"),
])
def test_q1_mistakes(wrong, phrase):
    result = assert_fails_with(q1, wrong, phrase)
    assert "expected tokens [[CLS]" in result.message


def test_q1_accepts_tuples_and_a_segment_tensor_but_not_other_types():
    def as_tensor(tokens_a, tokens_b=None):
        tokens, segments = get_tokens_and_segments(tokens_a, tokens_b)
        return tuple(tokens), torch.tensor(segments)

    assert q1.check(as_tensor).status == "pass"
    result = q1.check(lambda a, b=None: get_tokens_and_segments(a, b)[0])
    assert result.status == "fail" and "return two lists, (tokens, segments)" in result.message
    result = q1.check(lambda a, b=None: (get_tokens_and_segments(a, b)[0], "0 0 0"))
    assert result.status == "fail" and "expected a list of ints, got str" in result.message


def test_q1_answer_that_changes_its_input_fails_and_does_not_spoil_the_cases():
    def greedy(tokens_a, tokens_b=None):
        tokens_a.insert(0, "[CLS]")          # changes the caller's list: now a failed check
        tokens_a.append("[SEP]")
        segments = [0] * len(tokens_a)
        if tokens_b is not None:
            tokens_b.append("[SEP]")
            segments += [1] * len(tokens_b)
            return tokens_a + tokens_b, segments
        return tokens_a, segments

    result = q1.check(greedy)
    assert result.status == "fail"
    assert "the result is right, but your code changed its argument `tokens_a` in place" in result.message
    assert "list(tokens_a)" in result.message
    assert ch04.Q1_CASES[0][1][0] == ["the", "river", "is", "long", "."]
    assert q1.check(get_tokens_and_segments).status == "pass"


@pytest.mark.parametrize("wrong, phrase", [
    (lambda a, b: [0] * (a + 1) + [1] * (b + 2), "off by one at the [SEP] boundary"),
    (lambda a, b: [0] * (a + 3) + [1] * b, "the last [SEP] belongs to B"),
    (lambda a, b: [0] * (a + 2) + [1] * b, "you forgot the last [SEP]"),
    (lambda a, b: [0] * (a + 1) + [1] * (b + 1), "you left out one [SEP]"),
    (lambda a, b: [0] * a + [1] * b, "the special tokens need segment ids too"),
    (lambda a, b: [0] * (a + 2) + [1] * (b + 1) if a else [1] * (b + 3), "expected [0 0 1"),
])
def test_q2_mistakes(wrong, phrase):
    assert_fails_with(q2, wrong, phrase)


def test_q2_accepts_a_tensor_and_rejects_floats():
    assert q2.check(lambda a, b: torch.tensor([0] * (a + 2) + [1] * (b + 1))).status == "pass"
    result = q2.check(lambda a, b: torch.tensor([0.0] * (a + 2) + [1.0] * (b + 1)))
    assert result.status == "fail" and "1-D integer tensor" in result.message


def q3_no_norm(encoder, tokens, segments):
    """fails: you returned the sum"""
    return (encoder.token_embedding(tokens) + encoder.segment_embedding(segments)
            + encoder.pos_embedding.weight[:tokens.shape[1]])


def q3_plain_layer_norm(encoder, tokens, segments):
    """fails: no learned scale and shift"""
    X = q3_no_norm(encoder, tokens, segments)
    return torch.nn.functional.layer_norm(X, X.shape[-1:])


def q3_no_segments(encoder, tokens, segments):
    """fails: you left out the segment embedding"""
    X = encoder.token_embedding(tokens) + encoder.pos_embedding.weight[:tokens.shape[1]]
    return encoder.embedding_norm(X)


def q3_no_positions(encoder, tokens, segments):
    """fails: you left out the position embedding"""
    return encoder.embedding_norm(encoder.token_embedding(tokens) + encoder.segment_embedding(segments))


def q3_positions_by_token(encoder, tokens, segments):
    """fails: looked the position table up with the token ids"""
    X = (encoder.token_embedding(tokens) + encoder.segment_embedding(segments)
         + encoder.pos_embedding.weight[tokens.clamp(max=encoder.config.max_len - 1)])
    return encoder.embedding_norm(X)


def q3_positions_from_1(encoder, tokens, segments):
    """fails: positions start at 0"""
    n = tokens.shape[1]
    idx = torch.arange(1, n + 1).clamp(max=encoder.config.max_len - 1)
    X = (encoder.token_embedding(tokens) + encoder.segment_embedding(segments)
         + encoder.pos_embedding.weight[idx])
    return encoder.embedding_norm(X)


def q3_all_segment_a(encoder, tokens, segments):
    """fails: you added segment 0's row everywhere"""
    X = (encoder.token_embedding(tokens) + encoder.segment_embedding(torch.zeros_like(tokens))
         + encoder.pos_embedding.weight[:tokens.shape[1]])
    return encoder.embedding_norm(X)


# Q3's shape slips, written as a learner writes them (the first case: batch 3, seq 9, num_hiddens 16, max_len 12)
Q3_GOT = ("the shapes or dtypes in your code do not fit together. Your function got encoder: BERTEncoder; tokens: "
          "shape (3, 9), int64; segments: shape (3, 9), int64. It must return a tensor of shape (3, 9, 16), float32.")


def _tokens_and_segments(encoder, tokens, segments):
    return encoder.token_embedding(tokens) + encoder.segment_embedding(segments)


def q3_positions_by_len(encoder, tokens, segments):
    """fails: len(tokens) (or tokens.shape[0]) is the batch size"""
    X = _tokens_and_segments(encoder, tokens, segments) + encoder.pos_embedding.weight[:len(tokens)]
    return encoder.embedding_norm(X)


def q3_positions_arange_batch(encoder, tokens, segments):
    """fails: the position rows follow the seq axis"""
    positions = torch.arange(tokens.shape[0])                  # the batch axis, not seq
    return encoder.embedding_norm(_tokens_and_segments(encoder, tokens, segments) + encoder.pos_embedding.weight[positions])


def q3_whole_position_table(encoder, tokens, segments):
    """fails: you added the whole position table"""
    return encoder.embedding_norm(_tokens_and_segments(encoder, tokens, segments) + encoder.pos_embedding.weight)


def q3_d2l_slice(encoder, tokens, segments):
    """fails: d2l's [:, :seq, :] is for one with a batch axis in front"""
    X = _tokens_and_segments(encoder, tokens, segments)
    return encoder.embedding_norm(X + encoder.pos_embedding.weight[:, :X.shape[1], :])


def q3_slice_second_axis(encoder, tokens, segments):
    """fails: and [:, :seq] (or .T) puts seq last"""
    X = _tokens_and_segments(encoder, tokens, segments)
    return encoder.embedding_norm(X + encoder.pos_embedding.weight[:, :X.shape[1]])


def q3_batch_axis_in_the_middle(encoder, tokens, segments):
    """fails: put the new axis in front"""
    P = encoder.pos_embedding.weight[:tokens.shape[1]].unsqueeze(1)
    return encoder.embedding_norm(_tokens_and_segments(encoder, tokens, segments) + P)


def q3_position_module_on_ids(encoder, tokens, segments):
    """fails: encoder.pos_embedding(X) looks no ids up"""
    return encoder.embedding_norm(_tokens_and_segments(encoder, tokens, segments) + encoder.pos_embedding(tokens))


def q3_position_module_on_positions(encoder, tokens, segments):
    """fails: encoder.pos_embedding(X) looks no ids up"""
    positions = torch.arange(tokens.shape[1])
    return encoder.embedding_norm(_tokens_and_segments(encoder, tokens, segments) + encoder.pos_embedding(positions))


def q3_positions_by_token_id(encoder, tokens, segments):
    """fails: you looked the position table up with the token ids; its max_len = 12 rows"""
    return encoder.embedding_norm(_tokens_and_segments(encoder, tokens, segments) + encoder.pos_embedding.weight[tokens])


def q3_segment_table(encoder, tokens, segments):
    """fails: encoder.segment_embedding.weight is the whole table"""
    X = (encoder.token_embedding(tokens) + encoder.segment_embedding.weight
         + encoder.pos_embedding.weight[:tokens.shape[1]])
    return encoder.embedding_norm(X)


@pytest.mark.parametrize("wrong, phrases", [
    (q3_positions_by_len, ["must match the size of tensor b (3)", "tokens is (batch, seq) = (3, 9)",
                           "the batch size, 3", "(seq, num_hiddens) = (9, 16)"]),
    (q3_positions_arange_batch, ["must match the size of tensor b (3)", "the position rows follow the seq axis"]),
    (q3_whole_position_table, ["size of tensor b (12)", "(max_len, num_hiddens) = (12, 16)", "seq = 9 positions"]),
    (q3_d2l_slice, ["too many indices for tensor of dimension 2", "is 2-D, (max_len, num_hiddens) = (12, 16)",
                    "d2l's [:, :seq, :]"]),
    (q3_slice_second_axis, ["size of tensor a (16) must match the size of tensor b (9)",
                            "Take weight[:tokens.shape[1]], (seq, num_hiddens) = (9, 16)"]),
    (q3_batch_axis_in_the_middle, ["(seq, 1, num_hiddens) = (9, 1, 16)", "the batch axis of the (3, 9, 16) "
                                                                          "embeddings"]),
    (q3_position_module_on_ids, ["got shape (3, 9))", "(batch, seq, num_hiddens) = (3, 9, 16)"]),
    (q3_position_module_on_positions, ["got shape (9,))", "plus the position rows"]),
    (q3_positions_by_token_id, ["index 39 is out of bounds for dimension 0 with size 12", "a token id can be larger"]),
    (q3_segment_table, ["size of tensor b (2)", "(num_segments, num_hiddens) = (2, 16)",
                        "encoder.segment_embedding(segments), (batch, seq, num_hiddens) = (3, 9, 16)"]),
])
def test_q3_shape_slips_are_named_with_the_sizes(wrong, phrases):
    assert_fails_with(q3, wrong, "on batch=3, a pair of 9 tokens, " + Q3_GOT, *phrases, ") — ")


def q3_position_module_added_to_the_sum(encoder, tokens, segments):
    """fails: encoder.pos_embedding(X) already returns X plus the position rows"""
    X = _tokens_and_segments(encoder, tokens, segments)
    return encoder.embedding_norm(X + encoder.pos_embedding(X))


def q3_segments_in_token_table(encoder, tokens, segments):
    """fails: you looked the segment ids up in the token table"""
    X = encoder.token_embedding(tokens) + encoder.token_embedding(segments)
    return encoder.embedding_norm(X + encoder.pos_embedding.weight[:tokens.shape[1]])


def q3_first_sequence_only(encoder, tokens, segments):
    """fails: you returned one sequence's embeddings, (seq, num_hiddens) = (9, 16)"""
    tokens, segments = tokens[0], segments[0]                   # as if there were no batch axis
    X = encoder.token_embedding(tokens) + encoder.segment_embedding(segments) + encoder.pos_embedding.weight[:len(tokens)]
    return encoder.embedding_norm(X)


def test_q3_near_misses_get_a_nudge():
    assert_fails_with(q3, q3_position_module_added_to_the_sum, "first difference", "counts the token and segment "
                      "embeddings twice")
    assert_fails_with(q3, q3_first_sequence_only, "expected shape (3, 9, 16), got (9, 16) — you returned one "
                      "sequence's", "return (batch, seq, num_hiddens) = (3, 9, 16)")
    assert_fails_with(q3, q3_segments_in_token_table, "first difference", " — you looked the segment ids up in the "
                      "token table")


def test_q3_first_case_tells_the_batch_from_the_other_sizes():
    """A slip that uses the wrong size raises an error with that size only when the sizes differ."""
    encoder, tokens, segments = ch04.Q3_CASES[0][1]
    c = encoder.config
    assert len({tokens.shape[0], tokens.shape[1], c.num_segments, c.max_len, c.num_hiddens}) == 5


def test_q3_refuses_calling_embed():
    result = q3.check(lambda encoder, tokens, segments: encoder.embed(tokens, segments))
    assert result.status == "fail" and "without encoder.embed" in result.message


def test_q3_accepts_calling_the_modules_directly():
    def modules(encoder, tokens, segments):
        X = encoder.token_embedding(tokens) + encoder.segment_embedding(segments)
        return encoder.embedding_norm(encoder.pos_embedding(X))      # LearnedPositionalEmbedding adds

    assert q3.check(modules).status == "pass"


def test_q3_cases_run_in_eval_mode_without_dropout():
    """embed() applies dropout in training mode; the cases must be deterministic."""
    for _, (enc, tokens, segments) in ch04.Q3_CASES:
        assert not enc.training
        torch.testing.assert_close(ch04._ref_input_embedding(enc, tokens, segments),
                                   ch04._ref_input_embedding(enc, tokens, segments), rtol=0, atol=0)


@pytest.mark.parametrize("wrong, phrase", [
    (lambda c: (c.vocab_size + c.num_segments + c.max_len) * c.num_hiddens, "you forgot the layer norm"),
    (lambda c: (c.vocab_size + c.num_segments + c.max_len) * c.num_hiddens, "Or: you forgot the segment"),
    (lambda c: (c.vocab_size + c.max_len + 2) * c.num_hiddens, "you forgot the segment table"),
    (lambda c: (c.vocab_size + 2 + c.max_len + 2) * c.num_hiddens, "read it from the config"),
    (lambda c: (c.vocab_size + 2 + 2) * c.num_hiddens, "you forgot the position table"),
    (lambda c: (c.vocab_size + 2) * c.num_hiddens, "you counted only the token table (and the layer norm)"),
    (lambda c: c.vocab_size * c.num_hiddens, "you counted only the token table: add"),
])
def test_q4_mistakes(wrong, phrase):
    result = assert_fails_with(q4, wrong, phrase)
    assert "parameters, got" in result.message


def test_q4_unknown_mistake_gives_the_numbers_without_a_diagnosis():
    result = q4.check(lambda c: (c.vocab_size + 2 + 512) * c.num_hiddens + 2 * c.num_hiddens)  # max_len 512
    assert result.status == "fail"
    assert "on the tiny config: expected 260,352 parameters, got 289,024" in result.message
    assert " — " not in result.message


def test_q4_reference_matches_a_real_module_count():
    cfg = get_config("tiny", vocab_size=100, num_hiddens=8, max_len=10)
    enc = BERTEncoder(cfg)
    embedding_layer = [enc.token_embedding, enc.segment_embedding, enc.pos_embedding, enc.embedding_norm]
    assert ch04._ref_embedding_params(cfg) == sum(p.numel() for m in embedding_layer for p in m.parameters())
    assert ch04._ref_embedding_params(cfg) == (100 + 2 + 10) * 8 + 16


def test_q4_accepts_a_tensor_or_float_and_rejects_non_numbers():
    def count(c):
        return (c.vocab_size + c.num_segments + c.max_len + 2) * c.num_hiddens

    assert q4.check(lambda c: torch.tensor(count(c))).status == "pass"
    assert q4.check(lambda c: float(count(c))).status == "pass"
    result = q4.check(lambda c: str(count(c)))
    assert result.status == "fail" and "expected a number, got str" in result.message


# --- Q5: predict the embedding layer's share of the parameters ----------------------------

def test_q5_split_counts_a_whole_encoder():
    for config in (ch04.Q5_CONFIGS["tiny"], get_config("d2l-small"), get_config("tiny", num_blks=3)):
        split = ch04.encoder_parameter_split(config)
        with torch.random.fork_rng(devices=[]):
            whole = sum(p.numel() for p in BERTEncoder(config).parameters())
        assert split["total"] == whole == split["embedding"] + split["blocks"]
        assert split["embedding"] == ch04._ref_embedding_params(config)         # q4's count
    base = ch04.encoder_parameter_split(get_config("base"))
    assert base["total"] + 768 * 768 + 768 == 109_482_240                        # + pooler = BertModel
    with pytest.raises(TypeError, match="config must be a BERTConfig"):
        ch04.encoder_parameter_split("base")


def test_q5_shares_tell_the_story():
    shares = {k: ch04.encoder_parameter_split(c)["share"] for k, c in ch04.Q5_CONFIGS.items()}
    assert 0.2 < shares["base"] < 0.25 and 0.7 < shares["tiny"] < 0.8
    # the order the chapter's table shows (moved here from the reveal cell, whose source a learner reads first)
    d2l_small = ch04.encoder_parameter_split(get_config("d2l-small"))["share"]
    assert d2l_small > shares["tiny"] > 0.5 > shares["base"]
    assert ch04.encoder_parameter_split(get_config("large"))["share"] < shares["base"]


def test_q5_right_predictions_pass():
    for answer in ({"base": 0.22, "tiny": 0.75}, {"tiny": 0.7, "base": 0.26}, {"base": 0.2, "tiny": 0.78}):
        assert_passes_with(q5, answer, "BERT-base: 21.9%")


@pytest.mark.parametrize("answer, phrases", [
    ({"base": 0.5, "tiny": 0.75}, ["'base'", "too high", "12·d²"]),
    ({"base": 0.05, "tiny": 0.75}, ["'base'", "too low", "token table"]),
    ({"base": 0.22, "tiny": 0.2}, ["'tiny'", "too low", "vocabulary dominates"]),
    ({"base": 0.22, "tiny": 0.99}, ["'tiny'", "too high", "blocks still count"]),
    ({"base": 0.9, "tiny": 0.1}, ["'base' and 'tiny'", "too high", "too low"]),
])
def test_q5_wrong_predictions_explain(answer, phrases):
    result = assert_fails_with(q5, answer, *phrases)
    assert "21.9" not in result.message and "74.6" not in result.message


@pytest.mark.parametrize("bad, phrase", [
    (0.22, "must be a dict with the keys ['base', 'tiny']"), ({"base": 0.22}, "must be a dict"),
    ({"base": 22, "tiny": 75}, "between 0 and 1"), ({"base": "22%", "tiny": 0.75}, "must be a number"),
    ({"base": None, "tiny": 0.75}, "is still None"), ({"base": float("nan"), "tiny": 0.75}, "expected a finite number, got nan"),
])
def test_q5_refuses_malformed_predictions(bad, phrase):
    assert_fails_with(q5, bad, phrase)


# --- Q6: WordPiece's inner loop -----------------------------------------------------------
# the mistakes written as a learner writes them

def _shortest_first(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def _no_prefix(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            if word[start:end] in vocab:
                break
        else:
            return ["[UNK]"]
        pieces.append(word[start:end])
        start = end
    return pieces


def _partial_split(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:
            pieces.append("[UNK]")
            break
        pieces.append(piece)
        start = end
    return pieces


def test_q6_reference_and_solution_pass():
    from bertcourse.wordpiece import wordpiece_encode_word
    assert ch04.q6.check(wordpiece_encode_word)
    namespace = {}
    exec(ch04.q6._solution, namespace)
    assert_passes_with(ch04.q6, namespace["encode_word"])


@pytest.mark.parametrize("wrong, phrase", [(_shortest_first, "shortest piece first"),
                                           (_no_prefix, "'##'"),
                                           (_partial_split, "WHOLE word")])
def test_q6_mistakes(wrong, phrase):
    assert_fails_with(ch04.q6, wrong, phrase)


def test_q6_names_a_result_that_is_not_a_list_of_pieces():
    assert_fails_with(ch04.q6, lambda word, vocab: " ".join(word), "a list of str")

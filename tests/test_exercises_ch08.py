"""Tests for the chapter 8 exercises (bertcourse.exercises.ch08).

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them.
"""
import math

import pytest
import torch

from bertcourse.exercises import ch08
from bertcourse.exercises.ch08 import q1, q2, q3, q4, q5
from bertcourse.pretrained_bert import course_name
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with


def test_references_pass_their_own_check():
    assert q1.check(course_name)
    assert q2.check(ch08._ref_mean_pooling)
    assert q3.check(ch08._ref_entropy)
    assert q4.check(ch08._ref_prev_share)


def test_references_agree_with_plain_torch():
    hidden, mask = ch08.Q2_CASES[0][1]
    expected = torch.stack([hidden[0].mean(0), hidden[1, :3].mean(0), hidden[2, 0]])
    torch.testing.assert_close(ch08._ref_mean_pooling(hidden, mask), expected)
    (w,) = ch08.Q3_CASES[2][1]
    torch.testing.assert_close(ch08._ref_entropy(w), torch.full((2,), math.log(8)))
    (w,) = ch08.Q4_CASES[1][1]
    torch.testing.assert_close(ch08._ref_prev_share(w), torch.tensor([[1.0, 0.0, 1.0, 0.0]]))


def test_cases_include_edge_cases():
    assert any("bert." in n for n in ch08.Q1_NAMES)
    assert any(".output.dense" in n and "attention" not in n for n in ch08.Q1_NAMES)
    assert any(args[0].shape[:2] == (1, 1) for _, args in ch08.Q2_CASES)            # single token
    assert any(args[1].dtype == torch.long for _, args in ch08.Q2_CASES)            # 0/1 mask
    assert any((args[0] == 0).any() for _, args in ch08.Q3_CASES)                   # zero weights
    assert any(args[0].shape[-1] == 2 for _, args in ch08.Q4_CASES)


# --- typical wrong answers get named ---------------------------------------------------

def q1_keeps_bert_prefix(hf_name):
    """fails: strip it first"""
    if hf_name.startswith("bert."):
        return hf_name
    return course_name(hf_name)


def q1_one_based_blocks(hf_name):
    """fails: both count from 0"""
    name = course_name(hf_name)
    parts = name.split(".")
    if parts[:2] == ["encoder", "blks"]:
        parts[2] = str(int(parts[2]) + 1)
    return ".".join(parts)


def q1_output_mixup(hf_name):
    """fails: feed-forward part"""
    name = course_name(hf_name)
    if ".output.dense" in hf_name and "attention" not in hf_name:
        return name.replace("ffn.dense2", "attention.W_o")
    return name


def q1_drops_suffix(hf_name):
    """fails: keep the suffix"""
    return course_name(hf_name).rsplit(".", 1)[0]


def q1_not_a_function():
    return q1.check("encoder.blks.0.attention.W_q.weight")


def test_q1_needs_a_function():
    result = q1_not_a_function()
    assert result.status == "fail" and "must be a function" in result.message


# --- Q1: slips in the learner's own translation code --------------------------------------

BLOCK = {"attention.self.query": "attention.W_q", "attention.self.key": "attention.W_k",
         "attention.self.value": "attention.W_v", "attention.output.dense": "attention.W_o",
         "attention.output.LayerNorm": "addnorm1.ln", "intermediate.dense": "ffn.dense1",
         "output.dense": "ffn.dense2", "output.LayerNorm": "addnorm2.ln"}
TOP = {"embeddings.word_embeddings": "encoder.token_embedding",
       "embeddings.token_type_embeddings": "encoder.segment_embedding",
       "embeddings.position_embeddings": "encoder.pos_embedding",
       "embeddings.LayerNorm": "encoder.embedding_norm", "pooler.dense": "pooler.dense"}
# the order a learner writes them in: longer names before the shorter names they contain
REPLACEMENTS = [("embeddings.word_embeddings", "encoder.token_embedding"),
                ("embeddings.token_type_embeddings", "encoder.segment_embedding"),
                ("embeddings.position_embeddings", "encoder.pos_embedding"),
                ("embeddings.LayerNorm", "encoder.embedding_norm"),
                ("encoder.layer.", "encoder.blks."),
                ("attention.self.query", "attention.W_q"), ("attention.self.key", "attention.W_k"),
                ("attention.self.value", "attention.W_v"),
                ("attention.output.dense", "attention.W_o"), ("attention.output.LayerNorm", "addnorm1.ln"),
                ("intermediate.dense", "ffn.dense1"),
                ("output.dense", "ffn.dense2"), ("output.LayerNorm", "addnorm2.ln")]


def without(pairs, *olds):
    return [(old, new) for old, new in pairs if old not in olds]


def by_dict(strip=lambda name: name.removeprefix("bert."), top=TOP, block=BLOCK):
    """A learner's dict lookup, like the solution's, with one step changed."""
    def to_course_name(hf_name):
        name = strip(hf_name)
        *path, suffix = name.split(".")
        path = ".".join(path)
        if path in top:
            return f"{top[path]}.{suffix}"
        _, _, i, *layer = path.split(".")
        return f"encoder.blks.{i}.{block['.'.join(layer)]}.{suffix}"
    return to_course_name


def by_replacing(pairs=REPLACEMENTS, strip=lambda name: name.removeprefix("bert.")):
    """A learner's chain of str.replace, with one step changed."""
    def to_course_name(hf_name):
        name = strip(hf_name)
        for old, new in pairs:
            name = name.replace(old, new)
        return name
    return to_course_name


def by_kind_without_the_pooler(hf_name):
    name = hf_name.removeprefix("bert.")
    *path, suffix = name.split(".")
    if name.startswith("embeddings."):
        return f"{TOP['.'.join(path)]}.{suffix}"
    if name.startswith("encoder.layer."):
        return f"encoder.blks.{path[2]}.{BLOCK['.'.join(path[3:])]}.{suffix}"


def test_q1_both_ways_of_writing_it_pass():
    assert_passes_with(q1, by_dict(), "correct on all 13 names")
    assert_passes_with(q1, by_replacing())
    assert any("token_type" in n for n in ch08.Q1_NAMES)         # the segment embedding, renamed most


@pytest.mark.parametrize("wrong, phrase", [
    # the 'bert.' prefix
    (by_dict(strip=lambda name: name), "works on the same name without it, 'encoder.layer.1.attention.self.key.bias'"),
    (by_replacing(strip=lambda name: name), "strip it first"),
    (by_dict(strip=lambda name: name.lstrip("bert.")), "str.lstrip('bert.') does not remove the prefix"),
    (by_replacing(strip=lambda name: name.lstrip("bert.")), "str.lstrip('bert.') does not remove the prefix"),
    (by_dict(strip=lambda name: name[5:]), "you cut the first five characters off every name"),
    (by_replacing(strip=lambda name: name[5:]), "you cut the first five characters off every name"),
    # the pooler, forgotten three ways: no row (ValueError), no branch (None), put inside the encoder
    (by_dict(top={k: v for k, v in TOP.items() if k != "pooler.dense"}), "this is the pooler"),
    (by_kind_without_the_pooler, "this is the pooler"),
    (lambda hf: by_replacing()(hf) if "pooler" not in hf else "encoder." + hf, "this is the pooler"),
    # the embeddings and the block layers, forgotten or misnamed
    (by_dict(top={"pooler.dense": "pooler.dense"}), "this is one of the embeddings"),
    (by_replacing(without(REPLACEMENTS, "embeddings.token_type_embeddings")), "this is one of the embeddings"),
    (by_dict(block={k: v for k, v in BLOCK.items() if k != "attention.self.key"}),
     "your code fails on the block layer 'attention.self.key'"),
    (by_replacing(without(REPLACEMENTS, "intermediate.dense")), "part of the Hugging Face name is still in your "
                                                                "result ('intermediate')"),
    # the order of the replacements
    (by_replacing(without(REPLACEMENTS, "attention.output.dense", "attention.output.LayerNorm")
                  + [("attention.output.dense", "attention.W_o"), ("attention.output.LayerNorm", "addnorm1.ln")]),
     "the order of your replacements"),
    (by_replacing(without(REPLACEMENTS, "attention.output.LayerNorm", "output.dense")
                  + [("attention.output.LayerNorm", "addnorm1.ln"), ("output.dense", "ffn.dense2")]),
     "the order of your replacements"),
    (by_replacing([("attention.output", "attention.W_o")] + without(REPLACEMENTS, "attention.output.dense")),
     "'attention.output' holds two layers"),
])
def test_q1_slips_in_the_translation_code_are_named(wrong, phrase):
    assert_fails_with(q1, wrong, phrase)


def test_q1_names_only_the_slip_that_is_there():
    # a missing row for 'key' first shows on the 'bert.' name: it is not the prefix
    message = q1.check(by_dict(block={k: v for k, v in BLOCK.items() if k != "attention.self.key"})).message
    assert "start with 'bert.'" not in message and "lstrip" not in message
    # a code that strips correctly and fails on the first name for another reason is not told about lstrip
    message = q1.check(by_dict(top={"pooler.dense": "pooler.dense"})).message
    assert "lstrip" not in message and "five characters" not in message and "raised" in message


@pytest.mark.parametrize("wrong, phrase", [
    (lambda h, m: h.mean(1), "padding included"),
    (lambda h, m: (h * m.unsqueeze(-1).float()).sum(1) / h.shape[1], "divided by the padded length"),
    (lambda h, m: (h * m.unsqueeze(-1).float()).sum(1), "masked sum"),
    (lambda h, m: h[:, 0], "[CLS] vector"),
])
def test_q2_diagnoses(wrong, phrase):
    assert_fails_with(q2, wrong, phrase)


def mask3(mask):
    return mask.unsqueeze(-1).float()


@pytest.mark.parametrize("wrong, phrase", [
    # keepdim on both sums: (batch, 1, d)
    (lambda h, m: (h * mask3(m)).sum(1, keepdim=True) / mask3(m).sum(1, keepdim=True), "your result is (batch, 1, d)"),
    # the count without keepdim: a broadcast error, (batch, d) / (batch,)
    (lambda h, m: (h * mask3(m)).sum(1) / m.sum(1), "mask.sum(1), has shape (batch,)"),
    (lambda h, m: (h * m.unsqueeze(-1)).sum(dim=1) / m.float().sum(-1), "mask.sum(1), has shape (batch,)"),
    (lambda h, m: (h * mask3(m)).sum(1, keepdim=True) / m.sum(1), "two axes out of line"),
    # keepdim on one of the two only: every pair of rows
    (lambda h, m: (h * mask3(m)).sum(1, keepdim=True) / mask3(m).sum(1), "your result is (batch, batch, d)"),
    (lambda h, m: (h * mask3(m)).sum(1) / mask3(m).sum(1, keepdim=True), "your result is (batch, batch, d)"),
    # the mask not unsqueezed, or unsqueezed at the wrong place
    (lambda h, m: (h * m).sum(1) / m.sum(1, keepdim=True), "the mask must be (batch, seq, 1)"),
    (lambda h, m: (h * m.unsqueeze(1)).sum(1) / m.sum(1, keepdim=True), "the mask must be (batch, seq, 1)"),
    (lambda h, m: (h * mask3(m)).sum(-1) / m.sum(1, keepdim=True), "you summed over the features"),
    # a shape error no known mistake raises: still told which shapes must meet
    (lambda h, m: (h * mask3(m)).sum(1) / mask3(m).sum(0), "Three shapes must fit"),
    (lambda h, m: (h * mask3(m)).sum(1) / m.sum(0), "Three shapes must fit"),
])
def test_q2_shape_slips_are_named(wrong, phrase):
    result = assert_fails_with(q2, wrong, phrase)
    assert result.message.count(" — ") == 1, result.message        # named once, not twice


@pytest.mark.parametrize("wrong, phrase", [
    (lambda w: -(w * w.log()).sum(-1), "NaN"),
    (lambda w: -(w * w.clamp_min(1e-30).log2()).sum(-1), "log base 2"),
    (lambda w: (w * w.clamp_min(1e-30).log()).sum(-1), "minus sign"),
    (lambda w: -(w * w.clamp_min(1e-30).log()).sum(-2), "wrong axis"),
])
def test_q3_diagnoses(wrong, phrase):
    assert_fails_with(q3, wrong, phrase)


@pytest.mark.parametrize("wrong, phrase", [
    (lambda w: w.diagonal(offset=1, dim1=-2, dim2=-1).mean(-1), "next token"),
    (lambda w: w.diagonal(dim1=-2, dim2=-1).mean(-1), "main diagonal"),
    (lambda w: w.diagonal(offset=-1, dim1=-2, dim2=-1).sum(-1) / w.shape[-1], "n-1"),
    (lambda w: torch.stack([w[..., i, i - 1] for i in range(w.shape[-1])], -1).mean(-1), "wraps around"),
])
def test_q4_diagnoses(wrong, phrase):
    assert_fails_with(q4, wrong, phrase)


# --- Q5: predict whether the sentence embedding sees word order ------------------------------

def test_q5_experiment_is_the_sentence_embedding_of_section_7():
    cosine = ch08.sentence_cosine(*ch08.Q5_PAIR)
    assert cosine == ch08._q5_cosine() and cosine > 0.9 and ch08._q5_category(cosine) == "high"
    pretrained = ch08._minilm()
    e = pretrained.sentence_embeddings(list(ch08.Q5_PAIR))
    assert abs(float(e[0] @ e[1]) - cosine) < 1e-6
    paraphrase = ch08.sentence_cosine("A man is eating food.", "A man eats a piece of bread.")
    assert paraphrase < cosine                                      # word order matters less than wording
    # the reveal cell's other swaps (its assert moved here: in the notebook it gave the answer away)
    swaps = [("The cat chased the mouse.", "The mouse chased the cat."), ("She gave him a book.", "He gave her a book.")]
    assert min(ch08.sentence_cosine(a, b) for a, b in swaps) > 0.9 > paraphrase
    assert [ch08._q5_category(c) for c in (0.49, 0.5, 0.9, 0.91)] == ["low", "medium", "medium", "high"]
    with pytest.raises(TypeError, match="text_b must be a str"):
        ch08.sentence_cosine("a", ["b"])


@pytest.mark.parametrize("answer", ["high", "High", " HIGH "])
def test_q5_right_choice_in_any_spelling(answer):
    assert_passes_with(q5, answer, "who bit whom")


@pytest.mark.parametrize("answer, phrase", [("low", "same tokens"), ("medium", "closer still")])
def test_q5_wrong_choices_explain_why(answer, phrase):
    result = assert_fails_with(q5, answer, phrase)
    assert "0.97" not in result.message


@pytest.mark.parametrize("bad", ["very high", "0.97", 0.97, "high?", None])
def test_q5_choices_outside_the_list_are_refused_with_the_options(bad):
    if bad is None:
        assert q5.check(bad).status == "not attempted"
    else:
        assert_fails_with(q5, bad, "'low'", "'high'")


def test_q5_experiment_leaves_the_global_rng_alone():
    assert assert_leaves_global_rng_alone(lambda: q5.check("high"), ch08._q5_cosine)


def test_q1_a_typo_is_not_blamed_on_the_kind_of_name():
    def typo(hf_name):
        return NAME_MAPP[hf_name]            # noqa: F821 (the learner's typo)
    result = q1.check(typo)
    assert result.status == "fail" and "NameError" in result.message
    assert "this is one of the embeddings" not in result.message and "this is the pooler" not in result.message


def test_q2_dividing_by_the_padded_length_is_told_the_count_with_its_shape():
    def by_padded_length(hidden, mask):
        return (hidden * mask.unsqueeze(-1).float()).mean(1)
    assert_fails_with(q2, by_padded_length, "mask.sum(1, keepdim=True)")

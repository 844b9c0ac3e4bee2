"""Tests for bertcourse.attention against PyTorch's own implementations (the oracles):
``nn.MultiheadAttention`` and ``F.scaled_dot_product_attention``.

The oracle masks are built here, independently of ``bertcourse.attention.key_mask``,
so a bug in the package's mask construction cannot hide in both sides.
"""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from torch import nn
from twins import copy_mha

from bertcourse.attention import (DotProductAttention, MultiHeadAttention, causal_mask,
                                  dot_product_attention, key_mask, masked_softmax,
                                  store_attention_weights)

DTYPE = torch.float64   # the oracle comparisons run in float64: agreement to ~1e-12


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=DTYPE)


def visible_from_lens(lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """(batch, [queries,] keys) boolean, True where key j < valid_len (True = attend)."""
    return torch.arange(num_keys) < lens.unsqueeze(-1)


def torch_twin(ours: MultiHeadAttention, bias: bool) -> nn.MultiheadAttention:
    """An nn.MultiheadAttention holding exactly our weights."""
    d, h = ours.num_hiddens, ours.num_heads
    twin = nn.MultiheadAttention(d, h, bias=bias, batch_first=True).to(DTYPE).eval()
    copy_mha(ours, twin)
    return twin


def make_mha(d=12, heads=3, bias=True, seed=0) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(d, heads, bias=bias).to(DTYPE).eval()


# ---------------------------------------------------------------------------------------
# MultiHeadAttention == nn.MultiheadAttention
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("masking", ["none", "padding", "causal", "padding+causal"])
def test_mha_matches_torch_self_attention(bias, masking):
    ours = make_mha(bias=bias)
    twin = torch_twin(ours, bias)
    x = randn(3, 5, 12, seed=1)
    lens = torch.tensor([5, 3, 1])
    valid_lens = lens if "padding" in masking else None
    causal = "causal" in masking
    # nn.MultiheadAttention: key_padding_mask True = IGNORE, attn_mask True = NOT allowed
    kpm = (torch.arange(5) >= lens[:, None]) if valid_lens is not None else None
    attn_mask = ~torch.ones(5, 5, dtype=torch.bool).tril() if causal else None

    got = ours(x, x, x, valid_lens, causal=causal)
    want, want_w = twin(x, x, x, key_padding_mask=kpm, attn_mask=attn_mask,
                        need_weights=True, average_attn_weights=True)
    torch.testing.assert_close(got, want)
    assert ours.attention_weights.shape == (3, 3, 5, 5)      # (batch, heads, queries, keys)
    torch.testing.assert_close(ours.attention_weights.mean(1), want_w)
    # per-head weights too
    _, want_heads = twin(x, x, x, key_padding_mask=kpm, attn_mask=attn_mask,
                         average_attn_weights=False)
    torch.testing.assert_close(ours.attention_weights, want_heads)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_mha_matches_torch_cross_attention(bias, causal):
    ours = make_mha(d=8, heads=2, bias=bias, seed=3)
    twin = torch_twin(ours, bias)
    queries, memory = randn(2, 4, 8, seed=4), randn(2, 7, 8, seed=5)
    values = randn(2, 7, 8, seed=6)
    lens = torch.tensor([7, 5])
    kpm = torch.arange(7) >= lens[:, None]
    # bottom-right aligned causal mask: query i is position 7 - 4 + i
    attn_mask = ~torch.ones(4, 7, dtype=torch.bool).tril(diagonal=3) if causal else None

    got = ours(queries, memory, values, lens, causal=causal)
    want, want_w = twin(queries, memory, values, key_padding_mask=kpm, attn_mask=attn_mask)
    assert got.shape == (2, 4, 8)
    torch.testing.assert_close(got, want)
    assert ours.attention_weights.shape == (2, 2, 4, 7)
    torch.testing.assert_close(ours.attention_weights.mean(1), want_w)


def test_mha_2d_valid_lens_matches_torch_attn_mask():
    """valid_lens of shape (batch, queries): one length per query -> a 3-D attn_mask."""
    ours = make_mha(d=8, heads=2, seed=7)
    twin = torch_twin(ours, True)
    x = randn(2, 4, 8, seed=8)
    lens = torch.tensor([[1, 2, 3, 4], [4, 4, 2, 1]])
    hidden = torch.arange(4) >= lens[..., None]                   # (batch, queries, keys)
    attn_mask = hidden.repeat_interleave(2, dim=0)                # (batch * heads, q, k)
    got = ours(x, x, x, lens)
    want, want_w = twin(x, x, x, attn_mask=attn_mask)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(ours.attention_weights.mean(1), want_w)


# ---------------------------------------------------------------------------------------
# dot_product_attention / DotProductAttention == F.scaled_dot_product_attention
# ---------------------------------------------------------------------------------------

def _sdpa_cases():
    # (name, q shape, k shape, v shape, valid_lens or bool mask, causal, oracle attn_mask)
    lens1 = torch.tensor([4, 2])
    lens2 = torch.tensor([[1, 2, 3], [4, 0, 2]])
    bool2 = torch.tensor([[True, False, True, True], [False, True, True, False]])
    bool3 = randn(2, 3, 4, seed=9) > 0
    bool3[:, :, 0] = True
    return [
        ("3-D, no mask", (2, 3, 5), None, False, None),
        ("3-D, valid_lens 1-D", (2, 3, 5), lens1, False, visible_from_lens(lens1, 4)[:, None, :]),
        ("3-D, valid_lens 2-D", (2, 3, 5), lens2, False, visible_from_lens(lens2, 4)),
        ("3-D, bool (batch, keys)", (2, 3, 5), bool2, False, bool2[:, None, :]),
        ("3-D, bool (batch, queries, keys)", (2, 3, 5), bool3, False, bool3),
        ("4-D, no mask", (2, 3, 3, 5), None, False, None),
        ("4-D, valid_lens 1-D", (2, 3, 3, 5), lens1, False, visible_from_lens(lens1, 4)[:, None, None, :]),
        ("4-D, valid_lens 2-D", (2, 3, 3, 5), lens2, False, visible_from_lens(lens2, 4)[:, None]),
        ("4-D, bool (batch, keys)", (2, 3, 3, 5), bool2, False, bool2[:, None, None, :]),
        ("4-D, causal + valid_lens", (2, 3, 3, 5), lens1, True,
         visible_from_lens(lens1, 4)[:, None, None, :] & torch.ones(3, 4, dtype=torch.bool).tril(1)),
    ]


@pytest.mark.parametrize("case", _sdpa_cases(), ids=lambda c: c[0])
def test_dot_product_attention_matches_sdpa(case):
    name, qshape, mask, causal, oracle_mask = case
    lead, d = qshape[:-2], qshape[-1]
    q = randn(*qshape, seed=10)
    k, v = randn(*lead, 4, d, seed=11), randn(*lead, 4, 6, seed=12)
    out, weights = dot_product_attention(q, k, v, mask, causal=causal)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=oracle_mask)
    if oracle_mask is not None:   # the course's convention: a query with no visible key outputs 0
        want = want.masked_fill(~oracle_mask.any(-1, keepdim=True), 0.0)
    torch.testing.assert_close(out, want)
    assert weights.shape == qshape[:-1] + (4,)
    # the module gives the same numbers and keeps the weights
    module = DotProductAttention().eval()
    torch.testing.assert_close(module(q, k, v, mask, causal=causal), want)
    torch.testing.assert_close(module.attention_weights, weights)


@pytest.mark.parametrize("shape", [(2, 5, 8), (2, 3, 5, 8)])
def test_causal_matches_sdpa_is_causal(shape):
    q, k, v = randn(*shape, seed=13), randn(*shape, seed=14), randn(*shape, seed=15)
    out, _ = dot_product_attention(q, k, v, causal=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_custom_scale_matches_sdpa():
    q, k, v = randn(2, 3, 4, seed=16), randn(2, 5, 4, seed=17), randn(2, 5, 4, seed=18)
    out, _ = dot_product_attention(q, k, v, scale=0.3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.3))


# ---------------------------------------------------------------------------------------
# fast path (no stored weights) == weights path
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
def test_fast_path_equals_weights_path_mha(causal):
    model = make_mha(d=16, heads=4, seed=19)
    q, kv = randn(3, 5, 16, seed=20), randn(3, 5, 16, seed=21)
    lens = torch.tensor([5, 0, 2])                       # includes a fully masked sequence
    slow = model(q, kv, kv, lens, causal=causal)
    assert model.attention_weights is not None
    store_attention_weights(model, False)
    fast = model(q, kv, kv, lens, causal=causal)
    assert model.attention_weights is None               # nothing kept on the fast path
    assert torch.isfinite(fast).all()
    torch.testing.assert_close(fast, slow)
    # the fully masked sequence's attention output is 0, so the layer outputs W_o's bias
    torch.testing.assert_close(fast[1], model.W_o.bias.expand(5, 16))
    store_attention_weights(model, True)
    torch.testing.assert_close(model(q, kv, kv, lens, causal=causal), slow)
    assert model.attention_weights is not None


@pytest.mark.parametrize("lens", [torch.tensor([0, 3]), torch.tensor([[0, 1, 3], [2, 0, 0]])])
def test_fast_path_fully_masked_rows_are_zero(lens):
    q, k, v = randn(2, 2, 3, 4, seed=22), randn(2, 2, 3, 4, seed=23), randn(2, 2, 3, 5, seed=24)
    fast, none = dot_product_attention(q, k, v, lens, need_weights=False)
    slow, weights = dot_product_attention(q, k, v, lens)
    assert none is None
    assert torch.isfinite(fast).all() and torch.isfinite(slow).all()
    torch.testing.assert_close(fast, slow)
    empty = (lens == 0) if lens.dim() == 2 else (lens == 0)[:, None].expand(2, 3)
    assert empty.any()
    for b, i in empty.nonzero().tolist():
        assert torch.equal(fast[b, :, i], torch.zeros(2, 5, dtype=DTYPE))
        assert torch.equal(weights[b, :, i], torch.zeros(2, 3, dtype=DTYPE))


def test_fully_masked_rows_have_finite_gradients_on_both_paths():
    for need_weights in (True, False):
        q, k, v = (randn(2, 3, 4, seed=s).requires_grad_() for s in (25, 26, 27))
        out, _ = dot_product_attention(q, k, v, torch.tensor([0, 2]), need_weights=need_weights)
        out.sum().backward()
        for t in (q, k, v):
            assert torch.isfinite(t.grad).all()
        assert torch.equal(q.grad[0], torch.zeros(3, 4, dtype=DTYPE))


def test_store_attention_weights_returns_model_and_reaches_nested_layers():
    model = nn.Sequential(MultiHeadAttention(8, 2), nn.Linear(8, 8))
    assert store_attention_weights(model, False) is model
    assert model[0].attention.store_weights is False
    store_attention_weights(model, True)
    assert model[0].attention.store_weights is True


# ---------------------------------------------------------------------------------------
# masked_softmax: rows sum to 1, masked weights exactly 0, fully masked rows all 0
# ---------------------------------------------------------------------------------------

def test_masked_softmax_rows_sum_to_one_and_masked_are_exactly_zero():
    scores = randn(3, 4, 6, seed=28) * 5
    lens = torch.tensor([6, 2, 1])
    w = masked_softmax(scores, lens)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 4, dtype=DTYPE))
    hidden = ~visible_from_lens(lens, 6)[:, None, :].expand(3, 4, 6)
    assert (w[hidden] == 0).all()                      # exactly zero, not just small
    assert (w[~hidden] > 0).all()


def test_masked_softmax_fully_masked_row_is_all_zero():
    scores = randn(2, 3, 4, seed=29)
    w = masked_softmax(scores, torch.tensor([[0, 2, 4], [0, 0, 1]]))
    assert torch.equal(w[0, 0], torch.zeros(4, dtype=DTYPE))
    assert torch.equal(w[1, :2], torch.zeros(2, 4, dtype=DTYPE))
    torch.testing.assert_close(w[0, 1:].sum(-1), torch.ones(2, dtype=DTYPE))
    assert not torch.isnan(w).any()


def test_masked_softmax_causal_and_4d():
    scores = randn(2, 3, 4, 4, seed=30)
    w = masked_softmax(scores, torch.tensor([4, 3]), causal=True)
    upper = ~torch.ones(4, 4, dtype=torch.bool).tril()
    assert (w[..., upper] == 0).all()
    assert (w[1, :, :, 3] == 0).all()                  # padding of the second sequence
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 4, dtype=DTYPE))


def test_masked_softmax_without_mask_is_softmax():
    scores = randn(2, 3, 5, seed=31)
    torch.testing.assert_close(masked_softmax(scores), torch.softmax(scores, -1))


def test_masked_softmax_float32_extreme_scores():
    """Huge visible scores must not push the masked fill to -inf - max = NaN."""
    scores = torch.tensor([[[3e38, -3e38, 1.0], [-1e30, 5.0, 2.0]]])
    w = masked_softmax(scores, torch.tensor([2]))
    assert torch.isfinite(w).all()
    assert w[0, 0, 2] == 0 and w[0, 1, 2] == 0
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2))


def test_key_mask_none_when_nothing_masked():
    assert key_mask(None, torch.Size([2, 3, 4])) is None
    m = key_mask(torch.tensor([1, 4]), torch.Size([2, 5, 3, 4]))
    assert m.shape == (2, 1, 1, 4) and m.dtype == torch.bool


# ---------------------------------------------------------------------------------------
# gradcheck (float64)
# ---------------------------------------------------------------------------------------

def test_gradcheck_masked_softmax():
    scores = randn(2, 3, 5, seed=32).requires_grad_()
    for lens in (torch.tensor([3, 0]), torch.tensor([[1, 5, 2], [0, 4, 5]])):
        assert torch.autograd.gradcheck(lambda s: masked_softmax(s, lens), (scores,))
    assert torch.autograd.gradcheck(lambda s: masked_softmax(s, causal=True), (scores,))


@pytest.mark.parametrize("bias", [True, False])
def test_gradcheck_multi_head_attention(bias):
    model = make_mha(d=6, heads=2, bias=bias, seed=33)
    q = randn(2, 3, 6, seed=34).requires_grad_()
    k = randn(2, 4, 6, seed=35).requires_grad_()
    v = randn(2, 4, 6, seed=36).requires_grad_()
    lens = torch.tensor([4, 2])
    assert torch.autograd.gradcheck(lambda q, k, v: model(q, k, v, lens), (q, k, v))
    # and with respect to the parameters
    names = [n for n, _ in model.named_parameters()]

    def by_params(*ps):
        return torch.func.functional_call(model, dict(zip(names, ps)),
                                          (q.detach(), k.detach(), v.detach(), lens))

    params = tuple(p.detach().clone().requires_grad_() for p in model.parameters())
    assert torch.autograd.gradcheck(by_params, params)


# ---------------------------------------------------------------------------------------
# property tests (hypothesis)
# ---------------------------------------------------------------------------------------

@st.composite
def attention_problem(draw):
    batch = draw(st.integers(1, 3))
    heads = draw(st.integers(1, 3))
    nq = draw(st.integers(1, 5))
    nk = draw(st.integers(1, 6))
    d = draw(st.integers(1, 8))
    per_query = draw(st.booleans())
    lens = draw(st.lists(st.integers(0, nk), min_size=batch * (nq if per_query else 1),
                         max_size=batch * (nq if per_query else 1)))
    lens = torch.tensor(lens).reshape(batch, nq) if per_query else torch.tensor(lens)
    seed = draw(st.integers(0, 2**16))
    return batch, heads, nq, nk, d, lens, seed


@settings(max_examples=80, deadline=None, derandomize=True)
@given(attention_problem())
def test_property_weights_and_sdpa(problem):
    batch, heads, nq, nk, d, lens, seed = problem
    q = randn(batch, heads, nq, d, seed=seed)
    k = randn(batch, heads, nk, d, seed=seed + 1)
    v = randn(batch, heads, nk, 3, seed=seed + 2)
    out, w = dot_product_attention(q, k, v, lens)
    assert w.shape == (batch, heads, nq, nk)

    visible = visible_from_lens(lens, nk)                          # (batch, [nq,] nk)
    visible = visible[:, None, None, :] if lens.dim() == 1 else visible[:, None]
    visible = visible.expand(batch, heads, nq, nk)
    assert (w[~visible] == 0).all()                                # masked: exactly 0
    row_sums = w.sum(-1)
    has_key = visible.any(-1)
    torch.testing.assert_close(row_sums[has_key], torch.ones_like(row_sums[has_key]))
    assert (row_sums[~has_key] == 0).all()                        # fully masked rows: all 0

    want = F.scaled_dot_product_attention(q, k, v, attn_mask=visible)
    want = want.masked_fill(~has_key[..., None], 0.0)             # oracle: no visible key -> 0
    torch.testing.assert_close(out, want)
    fast, _ = dot_product_attention(q, k, v, lens, need_weights=False)
    torch.testing.assert_close(fast, want)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(1, 3), st.sampled_from([(4, 1), (4, 2), (6, 3), (8, 4)]), st.integers(1, 5),
       st.integers(1, 6), st.integers(0, 2**16))
def test_property_mha_matches_torch(batch, dims, nq, nk, seed):
    d, heads = dims
    ours = make_mha(d=d, heads=heads, seed=seed)
    twin = torch_twin(ours, True)
    lens = torch.randint(1, nk + 1, (batch,), generator=torch.Generator().manual_seed(seed))
    q, kv = randn(batch, nq, d, seed=seed), randn(batch, nk, d, seed=seed + 1)
    got = ours(q, kv, kv, lens)
    want, want_w = twin(q, kv, kv, key_padding_mask=torch.arange(nk) >= lens[:, None])
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(ours.attention_weights.mean(1), want_w)


# ---------------------------------------------------------------------------------------
# causal_mask
# ---------------------------------------------------------------------------------------

def test_causal_mask_square_is_lower_triangular():
    m = causal_mask(4)
    assert m.shape == (4, 4) and m.dtype == torch.bool
    assert torch.equal(m, torch.ones(4, 4, dtype=torch.bool).tril())
    assert torch.equal(m, causal_mask(4, 4))


def test_causal_mask_bottom_right_alignment():
    m = causal_mask(2, 5)
    assert m.shape == (2, 5)
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    for nq, nk in [(1, 1), (1, 4), (3, 7)]:
        assert torch.equal(causal_mask(nq, nk), torch.ones(nq, nk, dtype=torch.bool).tril(nk - nq))


@pytest.mark.parametrize("args, error, pattern", [
    ((3, 2), ValueError, "num_keys must be >= num_queries.*num_queries=3, num_keys=2"),
    ((0,), ValueError, "num_queries must be > 0, got 0"),
    ((2, 0), ValueError, "num_keys must be > 0, got 0"),
    ((2.0,), TypeError, "num_queries must be an int, got float"),
])
def test_causal_mask_errors(args, error, pattern):
    with pytest.raises(error, match=pattern):
        causal_mask(*args)


# ---------------------------------------------------------------------------------------
# parameter count (pitfall 6: it does not depend on the number of heads)
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("heads", [1, 2, 4, 8, 16])
def test_parameter_count_does_not_depend_on_heads(heads, bias):
    d = 64
    count = sum(p.numel() for p in MultiHeadAttention(d, heads, bias=bias).parameters())
    assert count == 4 * d * d + (4 * d if bias else 0)
    oracle = nn.MultiheadAttention(d, heads, bias=bias)
    assert count == sum(p.numel() for p in oracle.parameters())
    if heads > 1:
        assert count != heads * 3 * d * d          # the myth


# ---------------------------------------------------------------------------------------
# bad input: every message names the argument and the shapes
# ---------------------------------------------------------------------------------------

def mha_inputs(b=2, nq=3, nk=4, d=8):
    return torch.randn(b, nq, d), torch.randn(b, nk, d), torch.randn(b, nk, d)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_bad_rank_of_queries_keys_values(which):
    args = list(mha_inputs())
    args[which] = args[which][0]                           # drop the batch axis
    name = ["queries", "keys", "values"][which]
    expected_shape = "(3, 8)" if which == 0 else "(4, 8)"
    with pytest.raises(ValueError, match=rf"{name} must have shape \(batch, seq, num_hiddens=8\) "
                                         rf"\(3-D\), got shape {re.escape(expected_shape)}"):
        MultiHeadAttention(8, 2)(*args)


def test_bad_rank_in_dot_product_attention():
    with pytest.raises(ValueError, match=r"queries must have shape \(batch, queries, d\) or "
                                         r"\(batch, heads, queries, d\) \(3 or 4-D\), got shape \(3, 4\)"):
        dot_product_attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4))
    with pytest.raises(ValueError, match=r"keys must have shape \(batch=2, keys, d=4\) \(3-D\), "
                                         r"got shape \(2, 1, 5, 4\)"):
        dot_product_attention(torch.randn(2, 3, 4), torch.randn(2, 1, 5, 4), torch.randn(2, 5, 4))


def test_mismatched_batch():
    q, k, v = mha_inputs()
    with pytest.raises(ValueError, match=r"same batch size, got shapes \(2, 3, 8\), \(3, 4, 8\), \(3, 4, 8\)"):
        MultiHeadAttention(8, 2)(q, torch.randn(3, 4, 8), torch.randn(3, 4, 8))


def test_mismatched_batch_or_heads_in_dot_product_attention():
    with pytest.raises(ValueError, match=r"keys must have shape \(batch=2, heads=3, keys, d=4\), "
                                         r"got shape \(2, 2, 5, 4\)"):
        dot_product_attention(torch.randn(2, 3, 1, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4))


def test_mismatched_num_hiddens():
    q, k, v = mha_inputs(d=6)
    with pytest.raises(ValueError, match=r"queries must have shape \(batch, seq, num_hiddens=8\), "
                                         r"got shape \(2, 3, 6\)"):
        MultiHeadAttention(8, 2)(q, k, v)


def test_mismatched_d_in_dot_product_attention():
    with pytest.raises(ValueError, match=r"keys must have shape \(batch=2, keys, d=4\), got shape "
                                         r"\(2, 5, 3\) \(queries has shape \(2, 3, 4\)\)"):
        dot_product_attention(torch.randn(2, 3, 4), torch.randn(2, 5, 3), torch.randn(2, 5, 4))


def test_keys_values_length_mismatch():
    q, k, _ = mha_inputs()
    with pytest.raises(ValueError, match=r"keys and values must have the same length, got shapes "
                                         r"\(2, 4, 8\) and \(2, 5, 8\)"):
        MultiHeadAttention(8, 2)(q, k, torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"values must have shape \(batch=2, keys=4, d_v\) matching "
                                         r"keys \(2, 4, 8\), got shape \(2, 5, 8\)"):
        dot_product_attention(q, k, torch.randn(2, 5, 8))


def test_valid_lens_negative():
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, num_keys=4\], got values from -1 to 2"):
        MultiHeadAttention(8, 2)(*mha_inputs(), torch.tensor([2, -1]))


def test_valid_lens_larger_than_number_of_keys():
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, num_keys=4\], got values from 1 to 5"):
        MultiHeadAttention(8, 2)(*mha_inputs(), torch.tensor([5, 1]))


@pytest.mark.parametrize("lens, got", [
    (torch.tensor([1, 2, 3]), "(3,)"),
    (torch.tensor([[1, 2], [3, 4]]), "(2, 2)"),
])
def test_valid_lens_wrong_shape(lens, got):
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(batch=2,\) or "
                                         rf"\(batch=2, queries=3\), got shape {re.escape(got)}"):
        MultiHeadAttention(8, 2)(*mha_inputs(), lens)


def test_valid_lens_wrong_rank():
    with pytest.raises(ValueError, match=r"valid_lens must have shape .*\(1 or 2-D\), got shape \(2, 3, 1\)"):
        masked_softmax(torch.randn(2, 3, 4), torch.ones(2, 3, 1, dtype=torch.long))


def test_float_valid_lens_is_a_type_error():
    with pytest.raises(TypeError, match=r"valid_lens must hold integer lengths .*got dtype torch.float32"):
        MultiHeadAttention(8, 2)(*mha_inputs(), torch.tensor([2.0, 3.0]))


def test_num_hiddens_not_divisible_by_num_heads():
    with pytest.raises(ValueError, match=r"num_hiddens must be divisible by num_heads, got "
                                         r"num_hiddens=10, num_heads=3"):
        MultiHeadAttention(10, 3)


@pytest.mark.parametrize("heads", [2.0, "2", True])
def test_non_int_num_heads(heads):
    with pytest.raises(TypeError, match=rf"num_heads must be an int, got {type(heads).__name__}"):
        MultiHeadAttention(8, heads)


def test_bool_mask_of_wrong_shape():
    with pytest.raises(ValueError, match=r"valid_lens given as a boolean key mask \(True = attend\) must "
                                         r"have shape \(batch=2, keys=4\) or \(batch=2, queries=3, keys=4\), "
                                         r"got shape \(2, 3\)"):
        MultiHeadAttention(8, 2)(*mha_inputs(), torch.ones(2, 3, dtype=torch.bool))


def test_non_tensor_inputs():
    q, k, v = mha_inputs()
    with pytest.raises(TypeError, match=r"queries must be a torch.Tensor of shape \(batch, seq, "
                                        r"num_hiddens=8\), got list"):
        MultiHeadAttention(8, 2)(q.tolist(), k, v)
    with pytest.raises(TypeError, match=r"valid_lens must be a torch.Tensor of shape \(batch=2,\) or "
                                        r"\(batch=2, queries=3\), got list"):
        MultiHeadAttention(8, 2)(q, k, v, [1, 2])


def test_integer_scores_are_a_type_error():
    with pytest.raises(TypeError, match=r"scores must be a floating-point tensor .*got dtype torch.int64"):
        masked_softmax(torch.ones(2, 3, 4, dtype=torch.long))


def test_bad_dropout():
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.5"):
        MultiHeadAttention(8, 2, dropout=1.5)


def test_a_causal_mask_alone_is_made_on_the_scores_device(monkeypatch):
    """Without valid_lens only the causal mask is made: on the scores' device (a decoder's
    self-attention on a GPU once built it on the CPU, seen on an H200; the "meta" device
    stands in for the GPU here), and both attention functions pass that device."""
    m = key_mask(None, torch.Size([2, 4, 3, 3]), causal=True, device="meta")
    assert m.device.type == "meta" and m.shape == (2, 1, 3, 3)
    import bertcourse.attention as attention
    devices = []
    real = attention.key_mask
    monkeypatch.setattr(attention, "key_mask", lambda *a, **k: devices.append(a[3]) or real(*a, **k))
    q = torch.zeros(2, 3, 4)
    dot_product_attention(q, q, q, causal=True, need_weights=False)
    dot_product_attention(q, q, q, causal=True)
    masked_softmax(q, None, causal=True)
    assert devices == [q.device] * 3


def test_ch01_counted_multiply_adds_are_the_projections_plus_the_pairwise_products():
    """Chapter 1, section 6: PyTorch's FLOP counter on one layer of 12 heads (n = 128, d = 768)
    counts exactly 4 n d^2 + 2 n^2 d multiply-adds (302.0 M + 25.2 M), an Elman RNN 2 n d^2 and a
    convolution of width 3 3 n d^2; the projections are over 90 % of the attention layer's."""
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    def multiply_adds(run):
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            run()
        return counter.get_total_flops() // 2

    n, d, k = 128, 768, 3
    with torch.random.fork_rng():
        x = torch.randn(1, n, d)
        layer = MultiHeadAttention(d, 12, bias=True).eval()
        rnn, cnn = nn.RNN(d, d, batch_first=True), nn.Conv1d(d, d, k, padding=1)
    projections, pairwise = 4 * n * d * d, 2 * n * n * d
    attention = multiply_adds(lambda: layer(x, x, x))
    assert attention == projections + pairwise == 327_155_712 and projections / attention > 0.9
    assert multiply_adds(lambda: rnn(x)) == 2 * n * d * d
    assert multiply_adds(lambda: cnn(x.transpose(1, 2))) == k * n * d * d
    assert 2 * (2 * d) ** 2 * d == 4 * (2 * d) * d * d        # pairwise = projections at n = 2d

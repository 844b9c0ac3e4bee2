"""Tests for bertcourse.positional: sinusoids against the closed form, the relative-position
property, the learned table's gradients and the max_len errors."""
import math

import pytest
import torch

from bertcourse.positional import (LearnedPositionalEmbedding, PositionalEncoding, frequencies,
                                   relative_rotation, sinusoidal_encoding)


# --- closed form ---------------------------------------------------------------------------

@pytest.mark.parametrize("d", [4, 7, 16, 64])
@pytest.mark.parametrize("i", [0, 1, 5, 99, 999])
def test_values_match_closed_form(d, i):
    P = sinusoidal_encoding(1000, d, dtype=torch.float64)
    for col in range(d):
        j2 = col - col % 2          # the "2j" of the column pair this column belongs to
        angle = i / 10000 ** (j2 / d)
        expected = math.sin(angle) if col % 2 == 0 else math.cos(angle)
        assert P[i, col].item() == pytest.approx(expected, abs=1e-12), (i, col)


def test_float32_table_matches_float64_and_known_values():
    P32, P64 = sinusoidal_encoding(2000, 32), sinusoidal_encoding(2000, 32, dtype=torch.float64)
    assert P32.dtype == torch.float32 and P32.shape == (2000, 32)
    torch.testing.assert_close(P32.double(), P64, atol=1e-7, rtol=0)
    assert P64[0, 0::2].abs().max() == 0 and (P64[0, 1::2] == 1).all()   # position 0: sin 0, cos 0
    assert P64[1, 0].item() == pytest.approx(math.sin(1.0), abs=1e-15)
    assert P64[1, 1].item() == pytest.approx(math.cos(1.0), abs=1e-15)


def test_frequencies_and_fast_to_slow_columns():
    w = frequencies(8)
    torch.testing.assert_close(w, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64))
    # "binary digits": low column pairs change faster from one position to the next
    P = sinusoidal_encoding(200, 16, dtype=torch.float64)
    change = (P[1:] - P[:-1]).abs().mean(0)                  # (16,)
    pair_change = change.view(8, 2).mean(1)
    assert (pair_change[:-1] > pair_change[1:]).all()


def test_rows_are_distinct_and_norm_is_constant():
    P = sinusoidal_encoding(500, 32, dtype=torch.float64)
    torch.testing.assert_close(P.norm(dim=1), torch.full((500,), math.sqrt(16), dtype=torch.float64))
    dists = torch.cdist(P, P) + torch.eye(500, dtype=torch.float64)
    assert dists.min() > 0.5        # no two positions share (nearly) the same code


# --- relative positions ----------------------------------------------------------------------

@pytest.mark.parametrize("k", [-7, -1, 0, 1, 2, 5, 50, 333])
def test_relative_position_property_closed_form(k):
    d = 64
    P = sinusoidal_encoding(1500, d, dtype=torch.float64)
    M = relative_rotation(k, d, dtype=torch.float64)
    rows = torch.arange(max(0, -k), 1500 - max(0, k))       # every i with i and i+k in the table
    torch.testing.assert_close(P[rows + k], P[rows] @ M, atol=1e-10, rtol=0)


def test_relative_rotation_is_block_diagonal_rotation():
    d, k = 16, 3
    M = relative_rotation(k, d, dtype=torch.float64)
    block = torch.block_diag(*[torch.ones(2, 2)] * (d // 2)).bool()
    assert M[~block].abs().max() == 0
    for j in range(d // 2):
        B = M[2 * j: 2 * j + 2, 2 * j: 2 * j + 2]
        torch.testing.assert_close(B @ B.T, torch.eye(2, dtype=torch.float64))   # orthogonal
        assert torch.linalg.det(B).item() == pytest.approx(1.0)                   # a rotation
    # composing offsets adds angles; the inverse is the negative offset
    torch.testing.assert_close(relative_rotation(2, d, torch.float64) @ relative_rotation(3, d, torch.float64),
                               relative_rotation(5, d, torch.float64))
    torch.testing.assert_close(M @ relative_rotation(-k, d, torch.float64), torch.eye(d, dtype=torch.float64))


@pytest.mark.parametrize("k", [1, 4, 17])
def test_relative_property_recovered_by_least_squares(k):
    """Without using the closed form: fit the one matrix M with P[i+k] = P[i] M for all i by
    least squares, and find that it fits exactly, is block-diagonal and is our rotation."""
    d, n = 8, 4000        # frequencies 1 .. 1e-3: 4000 positions make every column vary
    P = sinusoidal_encoding(n + k, d, dtype=torch.float64)
    M = torch.linalg.lstsq(P[:n], P[k:n + k]).solution
    torch.testing.assert_close(P[:n] @ M, P[k:n + k], atol=1e-9, rtol=0)
    block = torch.block_diag(*[torch.ones(2, 2)] * (d // 2)).bool()
    assert M[~block].abs().max() < 1e-6
    torch.testing.assert_close(M, relative_rotation(k, d, dtype=torch.float64), atol=1e-6, rtol=0)


def test_relative_rotation_errors():
    with pytest.raises(ValueError, match="num_hiddens must be even"):
        relative_rotation(1, 7)
    with pytest.raises(TypeError, match="offset must be an int"):
        relative_rotation(1.5, 8)
    with pytest.raises(ValueError, match="num_hiddens must be > 0"):
        relative_rotation(1, 0)


# --- the module ----------------------------------------------------------------------------

def test_positional_encoding_adds_table_and_offset():
    pe = PositionalEncoding(16, dropout=0.0, max_len=50)
    X = torch.randn(3, 10, 16)
    P = sinusoidal_encoding(50, 16)
    torch.testing.assert_close(pe(X), X + P[:10])
    torch.testing.assert_close(pe(X[:, :1], offset=7), X[:, :1] + P[7:8])
    assert pe.P.requires_grad is False and "P" not in dict(pe.named_parameters())


def test_positional_encoding_dropout_only_in_training():
    pe = PositionalEncoding(16, dropout=0.5, max_len=50)
    X = torch.zeros(4, 10, 16)
    pe.train()
    torch.manual_seed(0)
    out = pe(X)
    assert (out == 0).float().mean().item() == pytest.approx(0.5, abs=0.08)   # 640 entries
    pe.eval()
    torch.testing.assert_close(pe(X), X + sinusoidal_encoding(50, 16)[:10])


def test_max_len_exceeded_is_a_clear_error():
    pe = PositionalEncoding(8, max_len=10)
    pe(torch.zeros(2, 10, 8))                       # exactly max_len is fine
    with pytest.raises(ValueError, match=r"11 positions but max_len=10.*larger max_len"):
        pe(torch.zeros(2, 11, 8))
    with pytest.raises(ValueError, match=r"positions 9\.\.10 but max_len=10"):
        pe(torch.zeros(2, 2, 8), offset=9)
    learned = LearnedPositionalEmbedding(10, 8)
    with pytest.raises(ValueError, match=r"11 positions but max_len=10"):
        learned(torch.zeros(1, 11, 8))


def test_bad_inputs_are_named():
    pe = PositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match=r"X must have shape \(batch, seq, num_hiddens=8\).*got shape \(2, 3, 4\)"):
        pe(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match=r"X must have shape.*3-D.*got shape \(3, 8\)"):
        pe(torch.zeros(3, 8))
    with pytest.raises(TypeError, match="X must be a floating-point tensor"):
        pe(torch.zeros(1, 3, 8, dtype=torch.long))
    with pytest.raises(TypeError, match="X must be a torch.Tensor"):
        pe([[0.0] * 8])
    with pytest.raises(ValueError, match="offset must be >= 0"):
        pe(torch.zeros(1, 3, 8), offset=-1)
    with pytest.raises(ValueError, match="dropout must be in"):
        PositionalEncoding(8, dropout=1.0)
    with pytest.raises(ValueError, match="max_len must be > 0"):
        PositionalEncoding(8, max_len=0)


def test_learned_table_receives_gradients():
    torch.manual_seed(0)
    learned = LearnedPositionalEmbedding(max_len=12, num_hiddens=6)
    X = torch.randn(2, 5, 6)
    out = learned(X)
    torch.testing.assert_close(out, X + learned.weight[:5])
    (out * torch.randn_like(out)).sum().backward()
    g = learned.weight.grad
    assert g is not None and g[:5].abs().min() > 0       # every used entry gets a gradient
    assert (g[5:] == 0).all()                             # unused positions get none
    # and one optimiser step changes exactly the used rows
    before = learned.weight.detach().clone()
    torch.optim.SGD(learned.parameters(), lr=0.1).step()
    assert not torch.equal(learned.weight[:5], before[:5])
    assert torch.equal(learned.weight[5:], before[5:])


def test_detached_table_gets_no_gradient():
    """The pitfall the package avoids: adding `weight.data` cuts the table out of the graph."""
    learned = LearnedPositionalEmbedding(12, 6)
    X = torch.randn(2, 5, 6, requires_grad=True)
    (X + learned.weight.data[:5]).sum().backward()
    assert learned.weight.grad is None


def test_ch02_without_positions_a_reordered_sentence_gives_reordered_outputs_and_with_them_not():
    """Chapter 2, section 1: the notebook's seeded layer gives 'man bites dog' the outputs of 'dog bites
    man' in reverse order, and once sinusoids are added a shuffled sequence no longer gives the
    shuffled outputs."""
    from torch import nn

    from bertcourse.attention import MultiHeadAttention

    with torch.random.fork_rng():
        torch.manual_seed(4)                               # the notebook's cells 1 and 2, in order
        embedding, attention = nn.Embedding(3, 16), MultiHeadAttention(16, num_heads=4).eval()
        X = torch.randn(2, 7, 16)
        perms = [torch.randperm(7) for _ in range(10)]
    with torch.no_grad():
        A, B = embedding(torch.tensor([[0, 1, 2]])), embedding(torch.tensor([[2, 1, 0]]))
        assert torch.allclose(attention(A, A, A)[0, [2, 1, 0]], attention(B, B, B)[0], atol=1e-6)
        P, perm = sinusoidal_encoding(50, 16)[:7], perms[-1]
        shuffled = attention(X[:, perm] + P, X[:, perm] + P, X[:, perm] + P)
        unshuffled = attention(X + P, X + P, X + P)
    assert not torch.allclose(shuffled, unshuffled[:, perm], atol=1e-3)

"""Tests for bertcourse.transformer against PyTorch's own layers (identical weights), plus
the decoding cache, masks and error messages."""
import math

import pytest
import torch
from torch import nn
from twins import copy_mha

from bertcourse.attention import store_attention_weights
from bertcourse.positional import sinusoidal_encoding
from bertcourse.transformer import (AddNorm, DecoderBlock, DecoderCache, EncoderBlock,
                                    EncoderDecoder, PositionWiseFFN, TransformerDecoder,
                                    TransformerEncoder, greedy_decode)


def copy_ffn_norms(ffn, norms, theirs, their_norms):
    with torch.no_grad():
        theirs.linear1.weight.copy_(ffn.dense1.weight)
        theirs.linear1.bias.copy_(ffn.dense1.bias)
        theirs.linear2.weight.copy_(ffn.dense2.weight)
        theirs.linear2.bias.copy_(ffn.dense2.bias)
        for ours, t in zip(norms, their_norms):
            t.weight.copy_(ours.ln.weight)
            t.bias.copy_(ours.ln.bias)


def randomise(module: nn.Module, seed: int) -> None:
    """Random weights everywhere, layer norms included (they start as exactly 1 and 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.3
            p.copy_(1.0 + noise if name.endswith("ln.weight") else noise)


def padding_mask(valid_lens, n):
    """torch's key_padding_mask: True = IGNORE this key (the opposite of ours)."""
    return torch.arange(n) >= valid_lens.unsqueeze(1)


CONFIGS = [  # (d, ffn, heads, bias, activation, eps)
    (16, 32, 4, True, "relu", 1e-5),
    (24, 40, 3, False, "gelu", 1e-12),
    (8, 8, 1, True, "gelu", 1e-5),
]


# --- building blocks -------------------------------------------------------------------------

def test_ffn_is_a_kernel_size_one_convolution():
    torch.manual_seed(0)
    ffn = PositionWiseFFN(6, 10)
    X = torch.randn(2, 5, 6)
    conv1, conv2 = nn.Conv1d(6, 10, 1), nn.Conv1d(10, 6, 1)
    with torch.no_grad():
        conv1.weight.copy_(ffn.dense1.weight.unsqueeze(-1))
        conv1.bias.copy_(ffn.dense1.bias)
        conv2.weight.copy_(ffn.dense2.weight.unsqueeze(-1))
        conv2.bias.copy_(ffn.dense2.bias)
    expected = conv2(torch.relu(conv1(X.transpose(1, 2)))).transpose(1, 2)
    torch.testing.assert_close(ffn(X), expected)
    # position-wise: each position's output depends only on that position
    torch.testing.assert_close(ffn(X[:, 2:3]), ffn(X)[:, 2:3])


def test_addnorm_is_layernorm_of_sum_and_ignores_batch_composition():
    torch.manual_seed(0)
    an = AddNorm(6, dropout=0.0)
    X, Y = torch.randn(3, 4, 6), torch.randn(3, 4, 6)
    out = an(X, Y)
    S = X + Y
    expected = (S - S.mean(-1, keepdim=True)) / torch.sqrt(S.var(-1, unbiased=False, keepdim=True) + 1e-5)
    torch.testing.assert_close(out, expected)
    # one sequence alone gives the same output as inside a (longer, padded) batch
    torch.testing.assert_close(an(X[:1, :2], Y[:1, :2]), out[:1, :2])
    with pytest.raises(ValueError, match=r"same shape.*X \(3, 4, 6\) and Y \(3, 4, 5\)"):
        an(X, torch.randn(3, 4, 5))


# --- encoder block vs nn.TransformerEncoderLayer -------------------------------------------------

@pytest.mark.parametrize("d, ffn, heads, bias, act, eps", CONFIGS)
def test_encoder_block_matches_torch(d, ffn, heads, bias, act, eps):
    torch.manual_seed(0)
    ours = EncoderBlock(d, ffn, heads, dropout=0.0, bias=bias, activation=act, norm_eps=eps).eval()
    randomise(ours, 1)
    theirs = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation=act, layer_norm_eps=eps,
                                        batch_first=True, norm_first=False).eval()
    copy_mha(ours.attention, theirs.self_attn)
    copy_ffn_norms(ours.ffn, [ours.addnorm1, ours.addnorm2], theirs, [theirs.norm1, theirs.norm2])
    X = torch.randn(3, 7, d)
    valid_lens = torch.tensor([7, 4, 1])
    with torch.no_grad():
        expected_full = theirs(X)
        expected = theirs(X, src_key_padding_mask=padding_mask(valid_lens, 7))
    torch.testing.assert_close(ours(X), expected_full, atol=1e-5, rtol=1e-5)
    got = ours(X, valid_lens)
    for b, n in enumerate(valid_lens.tolist()):      # padded query rows: compare real tokens
        torch.testing.assert_close(got[b, :n], expected[b, :n], atol=1e-5, rtol=1e-5)
    store_attention_weights(ours, False)              # fused path: same numbers
    torch.testing.assert_close(ours(X, valid_lens), got, atol=1e-6, rtol=1e-5)


# --- decoder block vs nn.TransformerDecoderLayer -------------------------------------------------

def make_decoder_pair(d, ffn, heads, bias, act, eps, seed=0, norm_first=False):
    torch.manual_seed(seed)
    ours = DecoderBlock(d, ffn, heads, dropout=0.0, bias=bias, activation=act, norm_eps=eps,
                        norm_first=norm_first).eval()
    randomise(ours, seed + 1)
    theirs = nn.TransformerDecoderLayer(d, heads, ffn, dropout=0.0, activation=act, layer_norm_eps=eps,
                                        batch_first=True, norm_first=norm_first).eval()
    copy_mha(ours.attention1, theirs.self_attn)
    copy_mha(ours.attention2, theirs.multihead_attn)
    copy_ffn_norms(ours.ffn, [ours.addnorm1, ours.addnorm2, ours.addnorm3], theirs,
                   [theirs.norm1, theirs.norm2, theirs.norm3])
    return ours, theirs


@pytest.mark.parametrize("d, ffn, heads, bias, act, eps", CONFIGS)
def test_decoder_block_matches_torch(d, ffn, heads, bias, act, eps):
    ours, theirs = make_decoder_pair(d, ffn, heads, bias, act, eps)
    X, memory = torch.randn(3, 6, d), torch.randn(3, 5, d)
    enc_valid_lens = torch.tensor([5, 2, 3])
    tgt_mask = ~torch.tril(torch.ones(6, 6, dtype=torch.bool))         # torch: True = NOT allowed
    with torch.no_grad():
        expected = theirs(X, memory, tgt_mask=tgt_mask,
                          memory_key_padding_mask=padding_mask(enc_valid_lens, 5))
    got = ours(X, memory, enc_valid_lens)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    # the boolean-mask form of enc_valid_lens (True = real token) gives the same
    torch.testing.assert_close(ours(X, memory, ~padding_mask(enc_valid_lens, 5)), got)
    store_attention_weights(ours, False)
    torch.testing.assert_close(ours(X, memory, enc_valid_lens), got, atol=1e-6, rtol=1e-5)


def test_decoder_block_keeps_attention_weights_with_causal_and_padding_structure():
    ours, _ = make_decoder_pair(16, 32, 4, True, "relu", 1e-5)
    X, memory = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
    ours(X, memory, torch.tensor([4, 2]))
    w_self, w_cross = ours.attention1.attention_weights, ours.attention2.attention_weights
    assert w_self.shape == (2, 4, 5, 5) and w_cross.shape == (2, 4, 5, 4)
    future = ~torch.tril(torch.ones(5, 5, dtype=torch.bool))
    assert (w_self[..., future] == 0).all() and (w_self[..., ~future] > 0).all()
    assert (w_cross[1, :, :, 2:] == 0).all() and (w_cross[1, :, :, :2] > 0).all()
    torch.testing.assert_close(w_self.sum(-1), torch.ones(2, 4, 5))


def test_decoder_position_does_not_see_the_future():
    ours, _ = make_decoder_pair(16, 32, 4, True, "relu", 1e-5)
    X, memory = torch.randn(1, 6, 16), torch.randn(1, 4, 16)
    changed = X.clone()
    changed[:, 4:] = torch.randn(1, 2, 16)                 # change positions 4 and 5
    a, b = ours(X, memory), ours(changed, memory)
    torch.testing.assert_close(a[:, :4], b[:, :4])         # positions 0..3 unaffected
    assert not torch.allclose(a[:, 4:], b[:, 4:])
    # the deliberately broken block without the mask does see the future
    leaky = DecoderBlock(16, 32, 4, bias=True, causal=False).eval()
    leaky.load_state_dict(ours.state_dict())
    assert not torch.allclose(leaky(X, memory)[:, :4], leaky(changed, memory)[:, :4])


def test_decoder_block_cache_gives_same_outputs_step_by_step():
    ours, _ = make_decoder_pair(16, 32, 4, True, "gelu", 1e-5)
    X, memory = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    enc_valid_lens = torch.tensor([4, 3])
    full = ours(X, memory, enc_valid_lens)
    cache = {}
    steps = [ours(X[:, t:t + 1], memory, enc_valid_lens, cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-6, rtol=1e-5)
    assert cache["self"][0].shape == (2, 4, 6, 4)          # (batch, heads, steps so far, d/heads)
    assert cache["cross"][0].shape == (2, 4, 4, 4)         # the encoder's keys, projected once
    # the last step's weights: one query over all 6 keys so far
    assert ours.attention1.attention_weights.shape == (2, 4, 1, 6)
    # feeding several new positions at once also works (the mask is aligned bottom-right)
    cache = {}
    first = ours(X[:, :2], memory, enc_valid_lens, cache)
    rest = ours(X[:, 2:], memory, enc_valid_lens, cache)
    torch.testing.assert_close(torch.cat([first, rest], 1), full, atol=1e-6, rtol=1e-5)


def test_decoder_block_errors():
    blk = DecoderBlock(16, 32, 4)
    X, memory = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
    with pytest.raises(ValueError, match=r"X must have shape \(batch, seq, num_hiddens=16\), got shape \(2, 5, 8\)"):
        blk(torch.randn(2, 5, 8), memory)
    with pytest.raises(ValueError, match=r"enc_outputs must have shape \(batch=2, src_len, num_hiddens=16\), "
                                         r"got shape \(2, 4, 8\).*encoder's width \(8\)"):
        blk(X, torch.randn(2, 4, 8))
    with pytest.raises(ValueError, match=r"enc_outputs must have shape \(batch=2.*got shape \(3, 4, 16\)"):
        blk(X, torch.randn(3, 4, 16))
    with pytest.raises(ValueError, match=r"enc_outputs must have shape.*3-D.*got shape \(4, 16\)"):
        blk(X, torch.randn(4, 16))
    with pytest.raises(ValueError, match="valid_lens must have shape"):
        blk(X, memory, torch.tensor([4, 3, 2]))
    with pytest.raises(TypeError, match="cache must be a dict"):
        blk(X, memory, cache=[])
    with pytest.raises(ValueError, match="num_hiddens must be divisible by num_heads"):
        DecoderBlock(10, 20, 4)
    with pytest.raises(ValueError, match="activation must be one of"):
        DecoderBlock(16, 32, 4, activation="swish")


# --- the whole model -------------------------------------------------------------------------

def small_model(seed=0, src_vocab=11, tgt_vocab=9, d=16, blks=2, causal=True):
    torch.manual_seed(seed)
    enc = TransformerEncoder(src_vocab, d, 32, 4, blks, max_len=20)
    dec = TransformerDecoder(tgt_vocab, d, 32, 4, blks, max_len=20, causal=causal)
    return EncoderDecoder(enc, dec).eval()


def test_embedding_is_scaled_before_adding_positions():
    model = small_model()
    tokens = torch.tensor([[3, 1, 4, 1, 5]])
    E = model.encoder.embedding.token.weight
    expected = E[tokens] * math.sqrt(16) + sinusoidal_encoding(20, 16)[:5]
    torch.testing.assert_close(model.encoder.embedding(tokens), expected)
    # the table starts with std 1/sqrt(d), so scaled tokens and sinusoids have similar size
    assert (E * math.sqrt(16)).std().item() == pytest.approx(1.0, abs=0.2)


def test_encoder_equals_stack_of_blocks_and_keeps_weights():
    model = small_model()
    src = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
    lens = torch.tensor([4, 2])
    X = model.encoder.embedding(src)
    for blk in model.encoder.blks:
        X = blk(X, lens)
    torch.testing.assert_close(model.encoder(src, lens), X)
    weights = model.encoder.attention_weights
    assert len(weights) == 2 and weights[0].shape == (2, 4, 4, 4)
    assert (weights[1][1, :, :, 2:] == 0).all()


def test_encoder_decoder_forward_shapes_and_padding_invariance():
    model = small_model()
    src = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
    lens = torch.tensor([4, 2])
    dec_in = torch.tensor([[1, 3, 4], [1, 5, 6]])
    logits = model(src, dec_in, lens)
    assert logits.shape == (2, 3, 9)
    assert len(model.decoder.self_attention_weights) == 2
    assert model.decoder.self_attention_weights[0].shape == (2, 4, 3, 3)
    assert model.decoder.cross_attention_weights[0].shape == (2, 4, 3, 4)
    # padding the source further changes nothing for real tokens
    longer = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], 1)
    torch.testing.assert_close(model(longer, dec_in, lens), logits, atol=1e-5, rtol=1e-5)
    # the second example alone, without padding, gives the same
    torch.testing.assert_close(model(src[1:, :2], dec_in[1:], lens[1:]), logits[1:], atol=1e-5, rtol=1e-5)


def test_decoder_cache_offsets_positions():
    model = small_model()
    src, lens = torch.tensor([[3, 4, 5]]), torch.tensor([3])
    memory = model.encoder(src, lens)
    tokens = torch.tensor([[1, 4, 2, 7, 3]])
    full = model.decoder(tokens, memory, lens)
    cache = model.decoder.init_cache()
    assert isinstance(cache, DecoderCache) and len(cache) == 0
    steps = []
    for t in range(5):
        steps.append(model.decoder(tokens[:, t:t + 1], memory, lens, cache))
        assert len(cache) == t + 1
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    with pytest.raises(TypeError, match="cache must come from this decoder's init_cache"):
        model.decoder(tokens, memory, lens, cache={})


@pytest.mark.parametrize("seed", range(5))
def test_incremental_greedy_equals_full_prefix_greedy(seed):
    model = small_model(seed)
    with torch.no_grad():              # sharper output layer: varied tokens, not one repeated
        model.decoder.dense.weight.mul_(4)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, 11, (6, 7), generator=g)
    lens = torch.tensor([7, 5, 1, 3, 7, 2])
    fast = greedy_decode(model, src, lens, bos_id=1, eos_id=2, max_len=12, use_cache=True)
    slow = greedy_decode(model, src, lens, bos_id=1, eos_id=2, max_len=12, use_cache=False)
    assert torch.equal(fast, slow)
    assert fast.shape[0] == 6 and 1 <= fast.shape[1] <= 12
    assert len(set(fast.flatten().tolist())) >= 3
    # and both equal a hand-written loop that re-runs the whole model on the prefix
    out = torch.full((6, 1), 1)
    for _ in range(fast.shape[1]):
        nxt = model(src, out, lens)[:, -1].argmax(-1)
        out = torch.cat([out, nxt[:, None]], 1)
    manual = out[:, 1:]
    for b in range(6):   # after a sequence's <eos>, greedy_decode writes <pad>
        row = manual[b].tolist()
        stop = row.index(2) + 1 if 2 in row else len(row)
        assert fast[b, :stop].tolist() == row[:stop]
        assert (fast[b, stop:] == 0).all()


def test_greedy_decode_stops_at_eos_and_restores_mode():
    model = small_model(3)
    with torch.no_grad():                        # force <eos> (id 2) at every step
        model.decoder.dense.bias.fill_(-100.0)
        model.decoder.dense.bias[2] = 100.0
    model.train()
    out = greedy_decode(model, torch.tensor([[3, 4]]), torch.tensor([2]), bos_id=1, eos_id=2, max_len=10)
    assert out.tolist() == [[2]]
    assert model.training                         # mode restored


def test_model_errors_are_named():
    with pytest.raises(ValueError, match=r"encoder and decoder widths differ: encoder num_hiddens=16, "
                                         r"decoder num_hiddens=32"):
        EncoderDecoder(TransformerEncoder(10, 16, 32, 4, 1), TransformerDecoder(10, 32, 64, 4, 1))
    with pytest.raises(TypeError, match="encoder and decoder must be modules with a num_hiddens"):
        EncoderDecoder(nn.Linear(2, 2), TransformerDecoder(10, 16, 32, 4, 1))
    model = small_model()
    src, lens = torch.tensor([[3, 4, 5]]), torch.tensor([3])
    with pytest.raises(ValueError, match=r"tokens must hold ids in \[0, vocab_size=11\), got values from 3 to 11"):
        model.encoder(torch.tensor([[3, 11]]))
    with pytest.raises(TypeError, match=r"tokens must be an integer tensor"):
        model.encoder(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, seq\).*got shape \(3,\)"):
        model.encoder(torch.tensor([3, 4, 5]))
    with pytest.raises(ValueError, match=r"X needs 21 positions but max_len=20"):
        model.encoder(torch.full((1, 21), 3))
    with pytest.raises(ValueError, match=r"tokens must hold ids in \[0, vocab_size=9\)"):
        model(src, torch.tensor([[1, 9]]), lens)
    with pytest.raises(ValueError, match=r"eos_id must be an int with 0 <= eos_id <= 8, got 100"):
        greedy_decode(model, src, lens, bos_id=1, eos_id=100, max_len=25)
    with torch.no_grad():                 # <eos> (id 2) never wins: decoding runs past max_len=20
        model.decoder.dense.bias[2] = -1e4
    with pytest.raises(ValueError, match=r"X needs positions 20\.\.20 but max_len=20"):
        greedy_decode(model, src, lens, bos_id=1, eos_id=2, max_len=25)
    with pytest.raises(ValueError, match="num_blks must be > 0"):
        TransformerEncoder(10, 16, 32, 4, 0)


# --- pre-norm (norm_first=True) ---------------------------------------------------------------------

@pytest.mark.parametrize("d, ffn, heads, bias, act, eps", CONFIGS)
def test_pre_norm_blocks_match_torch_norm_first(d, ffn, heads, bias, act, eps):
    """norm_first=True is PyTorch's norm_first=True: X + Sublayer(LayerNorm(X)), same parameters."""
    torch.manual_seed(0)
    enc = EncoderBlock(d, ffn, heads, bias=bias, activation=act, norm_eps=eps, norm_first=True).eval()
    randomise(enc, 1)
    theirs = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation=act, layer_norm_eps=eps,
                                        batch_first=True, norm_first=True).eval()
    copy_mha(enc.attention, theirs.self_attn)
    copy_ffn_norms(enc.ffn, [enc.addnorm1, enc.addnorm2], theirs, [theirs.norm1, theirs.norm2])
    X, valid_lens = torch.randn(3, 7, d), torch.tensor([7, 2, 5])
    with torch.no_grad():
        expected = theirs(X, src_key_padding_mask=padding_mask(valid_lens, 7))
    got = enc(X, valid_lens)
    for b, n in enumerate(valid_lens.tolist()):
        torch.testing.assert_close(got[b, :n], expected[b, :n], atol=1e-5, rtol=1e-5)

    dec, theirs = make_decoder_pair(d, ffn, heads, bias, act, eps, seed=1, norm_first=True)
    Y, memory, enc_lens = torch.randn(3, 6, d), torch.randn(3, 5, d), torch.tensor([5, 2, 3])
    with torch.no_grad():
        expected = theirs(Y, memory, tgt_mask=~torch.tril(torch.ones(6, 6, dtype=torch.bool)),
                          memory_key_padding_mask=padding_mask(enc_lens, 5))
    torch.testing.assert_close(dec(Y, memory, enc_lens), expected, atol=1e-5, rtol=1e-5)


def test_pre_norm_differs_from_post_norm_with_the_same_weights():
    torch.manual_seed(0)
    post = EncoderBlock(16, 32, 4, bias=True).eval()
    pre = EncoderBlock(16, 32, 4, bias=True, norm_first=True).eval()
    pre.load_state_dict(post.state_dict())             # same parameter names and shapes
    X = torch.randn(2, 5, 16)
    out_post, out_pre = post(X), pre(X)
    assert out_pre.shape == out_post.shape == (2, 5, 16)
    assert (out_pre - out_post).abs().max() > 0.1
    # post-norm ends in a layer norm (each position: mean 0, variance 1); pre-norm does not
    torch.testing.assert_close(out_post.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
    assert out_pre.mean(-1).abs().max() > 0.01
    # pre-norm keeps the input on an un-normalised residual path: X + (something)
    torch.testing.assert_close(pre.addnorm1.pre_norm(X, lambda H: torch.zeros_like(H)), X)


def test_pre_norm_stacks_have_a_final_layer_norm_and_train():
    torch.manual_seed(0)
    kw = dict(num_hiddens=16, ffn_num_hiddens=32, num_heads=4, num_blks=2, max_len=20)
    post = EncoderDecoder(TransformerEncoder(11, **kw), TransformerDecoder(9, **kw))
    pre = EncoderDecoder(TransformerEncoder(11, norm_first=True, **kw),
                         TransformerDecoder(9, norm_first=True, **kw))
    assert post.encoder.final_norm is None and post.decoder.final_norm is None
    assert isinstance(pre.encoder.final_norm, nn.LayerNorm) and isinstance(pre.decoder.final_norm, nn.LayerNorm)
    assert all(blk.norm_first for blk in [*pre.encoder.blks, *pre.decoder.blks])
    # exactly the two final layer norms more
    n_post, n_pre = (sum(p.numel() for p in m.parameters()) for m in (post, pre))
    assert n_pre - n_post == 2 * 2 * 16
    src, lens = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]]), torch.tensor([4, 2])
    dec_in = torch.tensor([[1, 3, 4], [1, 5, 6]])
    enc_out = pre.encoder(src, lens)
    torch.testing.assert_close(enc_out.mean(-1), torch.zeros(2, 4), atol=1e-5, rtol=0)   # the final norm
    logits = pre(src, dec_in, lens)
    assert logits.shape == (2, 3, 9)
    logits.sum().backward()
    for name, p in pre.named_parameters():        # every parameter gets a finite, non-zero gradient
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_pre_norm_cache_gives_the_same_greedy_decoding():
    torch.manual_seed(0)
    kw = dict(num_hiddens=16, ffn_num_hiddens=32, num_heads=4, num_blks=2, max_len=20, norm_first=True)
    model = EncoderDecoder(TransformerEncoder(11, **kw), TransformerDecoder(9, **kw))
    src, lens = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]]), torch.tensor([4, 2])
    args = dict(bos_id=1, eos_id=2, max_len=8)
    torch.testing.assert_close(greedy_decode(model, src, lens, use_cache=True, **args),
                               greedy_decode(model, src, lens, use_cache=False, **args))
    # step by step with the cache == the whole prefix at once
    dec_in = torch.tensor([[1, 3, 4, 5], [1, 6, 7, 8]])
    memory = model.encoder(src, lens)
    full = model.decoder(dec_in, memory, lens)
    cache = model.decoder.init_cache()
    steps = [model.decoder(dec_in[:, t:t + 1], memory, lens, cache) for t in range(4)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("make", [
    lambda v: EncoderBlock(16, 32, 4, norm_first=v),
    lambda v: DecoderBlock(16, 32, 4, norm_first=v),
    lambda v: TransformerEncoder(10, 16, 32, 4, 1, norm_first=v),
    lambda v: TransformerDecoder(10, 16, 32, 4, 1, norm_first=v),
])
@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_norm_first_must_be_a_bool(make, bad):
    with pytest.raises(TypeError, match=r"norm_first must be True or False, got"):
        make(bad)


def test_ch03_post_norm_and_pre_norm_models_start_from_the_same_weights():
    """Chapter 3, section 7: the post-norm and pre-norm models of the comparison (its make_model, the
    date task's vocabularies of 67 words and 14 characters) start from the same weights; pre-norm
    only adds the final layer norms."""
    def make(norm_first):
        torch.manual_seed(0)
        kw = dict(num_hiddens=32, ffn_num_hiddens=64, num_heads=4, num_blks=4, dropout=0.0, max_len=32,
                  norm_first=norm_first)
        return EncoderDecoder(TransformerEncoder(67, **kw), TransformerDecoder(14, causal=True, **kw)).state_dict()

    post, pre = make(False), make(True)
    assert sorted(set(pre) - set(post)) == ["decoder.final_norm.bias", "decoder.final_norm.weight",
                                            "encoder.final_norm.bias", "encoder.final_norm.weight"]
    assert all(torch.equal(w, pre[k]) for k, w in post.items())

"""The fast paths (``@fast_path`` methods of the layers, built from bertcourse.fast_paths) give the
numbers of the plain forwards: values and gradients, float32 and bfloat16, with dropout off
(with dropout on, the masks are other draws from the same distribution).

Tolerances: float32 1e-5 (values) and 1e-4 relative (gradients): the fast paths add the same
terms in another order (a fused QKV product, oneDNN instead of MKL); bfloat16: 2-5 % of the
largest value, what rounding 8-bit mantissas to another order gives in these sizes."""
import math

import pytest
import torch
import torch.nn.functional as F
from tiny_bert import full_batch, small_model

from torch import nn

import bertcourse.fast_paths as kernels
from bertcourse.attention import MultiHeadAttention, additive_mask
from bertcourse.batching import trim_batch
from bertcourse.bert import MaskLM
from bertcourse.fast_paths import dropout_mask, linear, onednn_enabled, use_onednn
from bertcourse.pretrain import mlm_loss, pretraining_losses
from bertcourse.transformer import EncoderBlock
from bertcourse.utils import FAST_PATH, show_source


def reference_mlm(features, weight, bias, labels, weights):
    return mlm_loss(F.linear(features, weight, bias).float(), labels, weights)

def fused_mlm_loss(features, weight, bias, labels, weights, **kw):
    """MaskLM.fused_loss with the decoder's weight and bias set to ``weight`` and ``bias``."""
    head = MaskLM(weight.shape[0], weight.shape[1])
    head.decoder.weight, head.decoder.bias = weight, bias
    return head.loss(features, labels, weights, fused=True) if not kw else head.fused_loss(
        features, labels, weights, **kw)

def random_mlm_problem(batch=6, preds=5, d=16, vocab=50, seed=0, zero_rows=True):
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(batch, preds, d, generator=g, requires_grad=True)
    weight = nn.Parameter(torch.randn(vocab, d, generator=g).mul_(0.5))
    bias = nn.Parameter(torch.randn(vocab, generator=g))
    labels = torch.randint(0, vocab, (batch, preds), generator=g)
    weights = torch.ones(batch, preds)
    if zero_rows:
        weights[:, -2:] = 0          # padding prediction slots
        weights[0] = 0               # a sequence without predictions
    return features, weight, bias, labels, weights

@pytest.mark.parametrize("chunk,block", [(128, 1024), (3, 3), (4, 7), (1, 5), (7, 2)])
def test_fused_mlm_loss_equals_the_reference_in_float32(chunk, block):
    f, w, b, lab, wt = random_mlm_problem()
    ref = reference_mlm(f, w, b, lab, wt)
    g_ref = torch.autograd.grad(ref, [f, w, b])
    got = fused_mlm_loss(f, w, b, lab, wt, chunk=chunk, block=block)
    g_got = torch.autograd.grad(got, [f, w, b])
    assert torch.allclose(got, ref, atol=1e-5, rtol=1e-5)
    for a, e in zip(g_got, g_ref):
        assert torch.allclose(a, e, atol=1e-6, rtol=1e-4)
    # padding slots get no gradient at all
    assert g_got[0][:, -2:].abs().max() == 0 and g_got[0][0].abs().max() == 0

def test_fused_mlm_loss_scales_with_the_upstream_gradient():
    f, w, b, lab, wt = random_mlm_problem(zero_rows=False)
    g1 = torch.autograd.grad(3.0 * fused_mlm_loss(f, w, b, lab, wt), [f, w, b])
    g2 = torch.autograd.grad(3.0 * reference_mlm(f, w, b, lab, wt), [f, w, b])
    for a, e in zip(g1, g2):
        assert torch.allclose(a, e, atol=1e-5, rtol=1e-4)

def test_fused_mlm_loss_in_bfloat16_is_close_to_autocast():
    f, w, b, lab, wt = random_mlm_problem(batch=8, preds=10, d=64, vocab=300, seed=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = mlm_loss(F.linear(f, w, b).float(), lab, wt)
    g_ref = torch.autograd.grad(ref, [f, w, b])
    got = fused_mlm_loss(f.to(torch.bfloat16), w, b, lab, wt, chunk=16, block=32)
    g_got = torch.autograd.grad(got, [f, w, b])
    assert got.dtype == torch.float32
    assert math.isclose(got.item(), ref.item(), rel_tol=2e-3)
    for a, e in zip(g_got, g_ref):
        assert (a - e).abs().max() <= 0.02 * e.abs().max()

def test_fused_mlm_loss_without_predictions_is_zero_and_differentiable():
    f, w, b, lab, _ = random_mlm_problem()
    loss = fused_mlm_loss(f, w, b, lab, torch.zeros(lab.shape))
    assert loss.item() == 0.0
    loss.backward()
    assert f.grad.abs().max() == 0 and w.grad.abs().max() == 0

def test_fused_mlm_loss_checks_its_inputs():
    f, w, b, lab, wt = random_mlm_problem()
    with pytest.raises(ValueError, match=r"features must have shape \(batch, num_preds, num_hiddens=16\)"):
        fused_mlm_loss(f[0], w, b, lab, wt)
    with pytest.raises(ValueError, match=r"features"):
        fused_mlm_loss(f[..., :8], w, b, lab, wt)
    with pytest.raises(ValueError, match=r"mlm_weights must have shape \(batch=6, max_preds=5\)"):
        fused_mlm_loss(f, w, b, lab, wt[:, :4])
    with pytest.raises(TypeError, match="mlm_labels must be an integer tensor"):
        fused_mlm_loss(f, w, b, lab.float(), wt)
    with pytest.raises(ValueError, match=r"mlm_labels must be ids in 0..49"):
        fused_mlm_loss(f, w, b, lab + 50, wt)
    with pytest.raises(ValueError, match="chunk must be"):
        fused_mlm_loss(f, w, b, lab, wt, chunk=0)
    with pytest.raises(TypeError, match="fused must be True or False"):
        MaskLM(50, 16).loss(f, lab, wt, fused="yes")


def test_plain_and_fused_loss_agree_and_plain_is_mlm_loss_of_the_logits():
    f, w, b, lab, wt = random_mlm_problem(zero_rows=False)
    head = MaskLM(50, 16)
    head.decoder.weight, head.decoder.bias = w, b
    plain = head.loss(f, lab, wt)
    assert torch.equal(plain, mlm_loss(head.decoder(f), lab, wt))
    assert torch.allclose(head.loss(f, lab, wt, fused=True), plain, atol=1e-5)


def test_mlm_features_are_what_the_head_feeds_its_decoder(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    batch = full_batch(dataset)
    encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
    direct = model.mlm(encoded, batch["pred_positions"])
    via = model.mlm.decoder(model.mlm.features(encoded, batch["pred_positions"]))
    assert torch.equal(direct, via)


def plain_features(model, batch):
    encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
    return model.mlm.features(encoded, batch["pred_positions"]), model.nsp(model.pooler(encoded))


def pretraining_features(model, batch, fast=True):
    return model.pretraining_features(batch["tokens"], batch["segments"], batch["valid_lens"],
                                      batch["pred_positions"], fast=fast)


def grads_of(model, outputs):
    features, nsp = outputs
    loss = (features.float() ** 2).sum() + (nsp.float() ** 2).sum()
    params = [p for n, p in model.named_parameters() if "decoder.bias" not in n]
    return torch.autograd.grad(loss, params)


@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("mode", ["eval", "train without dropout"])
def test_pretraining_features_equal_the_plain_encoder_and_heads(tokenizer, dataset, onednn, mode):
    model = small_model(tokenizer, dropout=0.0 if mode != "eval" else 0.1)
    model.train(mode != "eval")
    batch = trim_batch(full_batch(dataset))          # padding slots predict position 0; pairs of many lengths
    use_onednn(onednn, min_product=0)                # these products are small: oneDNN for all of them
    try:
        fast = pretraining_features(model, batch)
        plain = plain_features(model, batch)
        for a, b in zip(fast, plain):
            assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5, rtol=1e-5)
        for name_grad, (a, b) in enumerate(zip(grads_of(model, fast), grads_of(model, plain))):
            assert torch.allclose(a, b, atol=1e-5 * float(b.abs().max()) + 1e-7, rtol=1e-4), name_grad
    finally:
        use_onednn(True)


def test_pretraining_features_in_bfloat16_are_close_to_autocast(tokenizer, dataset):
    model = small_model(tokenizer, dropout=0.0).eval()
    batch = trim_batch(full_batch(dataset))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fast, plain = pretraining_features(model, batch), plain_features(model, batch)
    for a, b in zip(fast, plain):
        assert (a.float() - b.float()).abs().max() <= 0.05 * b.float().abs().max()


def test_the_fast_path_with_dropout_keeps_the_distribution_and_repeats_with_the_seed(tokenizer, dataset):
    model = small_model(tokenizer, dropout=0.3).train()
    batch = trim_batch(full_batch(dataset))
    torch.manual_seed(5)
    a = pretraining_features(model, batch)[0]
    torch.manual_seed(5)
    b = pretraining_features(model, batch)[0]
    c = pretraining_features(model, batch)[0]
    assert torch.equal(a, b) and not torch.equal(a, c)
    model.eval()
    assert not torch.allclose(a, pretraining_features(model, batch)[0])


def test_models_the_fast_path_does_not_know_use_the_plain_encoder(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    assert model.encoder.supports_fast_path()
    model.encoder.blks[0].norm_first = True          # a pre-norm block: not what fast_forward computes
    assert not model.encoder.supports_fast_path()
    batch = full_batch(dataset)
    fused, plain = pretraining_losses(model, batch, fused=True), pretraining_losses(model, batch, fused=False)
    assert torch.allclose(fused["loss"], plain["loss"], atol=1e-5)
    b = trim_batch(batch)
    with pytest.raises(TypeError, match="post-norm EncoderBlocks"):
        model.encoder.fast_forward(b["tokens"], b["segments"], b["valid_lens"])
    for f, p in zip(pretraining_features(model, b), plain_features(model, b)):     # fast=True falls back
        assert torch.equal(f, p)


def test_pretraining_features_check_their_inputs(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    batch = trim_batch(full_batch(dataset))
    with pytest.raises(ValueError, match=r"valid_lens must be \(batch=\d+,\) lengths of at least 1"):
        pretraining_features(model, {**batch, "valid_lens": batch["valid_lens"] * 0})
    with pytest.raises(ValueError, match=r"pred_positions must lie in \[0, seq=\d+\)"):
        pretraining_features(model, {**batch, "pred_positions": batch["pred_positions"] + 100})
    with pytest.raises(TypeError, match="pretraining heads"):
        pretraining_features(type(model)(model.config, with_heads=False), batch)


def test_dropout_mask_keeps_one_minus_p_and_scales():
    torch.manual_seed(0)
    mask = dropout_mask((1000, 1000), 0.2)
    assert set(mask.unique().tolist()) == {0.0, 1.25}
    assert abs((mask > 0).float().mean().item() - 0.8) < 0.002          # 1e6 draws: 5 standard errors
    assert abs(mask.mean().item() - 1.0) < 0.003                         # the expectation is kept
    torch.manual_seed(0)
    assert torch.equal(dropout_mask((1000, 1000), 0.2), mask)            # seeded: the same draws
    assert dropout_mask((3, 5), 0.0).eq(1).all() and dropout_mask((7,), 0.5, torch.float64).dtype == torch.float64
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\), got 1.0"):
        dropout_mask((2,), 1.0)


@pytest.mark.parametrize("onednn", [True, False])
def test_linear_is_torch_linear_with_the_same_gradients(onednn):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 16, generator=g, requires_grad=True)
    w = torch.randn(24, 16, generator=g, requires_grad=True)
    b = torch.randn(24, generator=g, requires_grad=True)
    use_onednn(onednn, min_product=0)
    try:
        for bias in (b, None):
            got, expected = linear(x, w, bias), F.linear(x, w, bias)
            assert got.shape == (4, 7, 24) and torch.allclose(got, expected, atol=1e-5)
            inputs = [x, w] + ([bias] if bias is not None else [])
            g_got = torch.autograd.grad(got.square().sum(), inputs)
            g_exp = torch.autograd.grad(expected.square().sum(), inputs)
            for a, e in zip(g_got, g_exp):
                assert torch.allclose(a, e, atol=1e-4, rtol=1e-5)
    finally:
        use_onednn(True)
    assert isinstance(onednn_enabled(), bool)
    with pytest.raises(TypeError, match="enabled must be True or False"):
        use_onednn("yes")


def test_fused_mlm_loss_is_the_same_with_and_without_onednn():
    f, w, b, lab, wt = random_mlm_problem(batch=8, preds=10, d=32, vocab=300, seed=3)
    results = []
    for onednn in (True, False):
        use_onednn(onednn, min_product=0)
        try:
            loss = fused_mlm_loss(f, w, b, lab, wt, chunk=16, block=32)
            results.append((loss, torch.autograd.grad(loss, [f, w, b])))
        finally:
            use_onednn(True)
    (l1, g1), (l2, g2) = results
    assert torch.allclose(l1, l2, atol=1e-6)
    for a, e in zip(g1, g2):
        assert torch.allclose(a, e, atol=1e-6, rtol=1e-5)


def test_onednn_keeps_kernels_for_a_bounded_number_of_shapes():
    w = torch.randn(8, 4)
    use_onednn(True, min_product=0)
    try:
        for rows in range(1, 60):
            linear(torch.randn(rows, 4), w)
        if onednn_enabled():
            assert kernels.onednn_shapes() == kernels.ONEDNN_MAX_SHAPES
        assert torch.allclose(linear(torch.ones(61, 4), w), F.linear(torch.ones(61, 4), w))   # beyond: PyTorch's
    finally:
        use_onednn(True)
    assert kernels.onednn_shapes() == 0
    linear(torch.randn(3, 4), w)                       # a small product: not sent to oneDNN
    assert kernels.onednn_shapes() == 0


# --- each layer's fast path against its own forward ---------------------------------------

def _layer_inputs(batch=3, seq=7, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, seq, d, generator=g, requires_grad=True)
    valid_lens = torch.tensor([7, 4, 1])
    rows = torch.tensor([[0, 3], [0, 1], [0, 0]])                    # [CLS] and one more position
    return X, valid_lens, rows


def _compare(fast, plain, inputs, params, tol):
    """Values and gradients (of the same random projection of the output) agree within
    ``tol`` times the largest value / the largest gradient entry. (Relative to the largest
    gradient of all, not of each tensor: some are zero in exact arithmetic — the key bias,
    which the softmax cancels — and hold only rounding noise.)"""
    assert fast.shape == plain.shape
    scale = float(plain.detach().float().abs().max())
    assert float((fast.detach().float() - plain.detach().float()).abs().max()) <= tol * scale
    probe = torch.randn(plain.shape, generator=torch.Generator().manual_seed(1))
    wrt = [*inputs, *params]
    g_fast = torch.autograd.grad((fast.float() * probe).sum(), wrt, retain_graph=True)
    g_plain = torch.autograd.grad((plain.float() * probe).sum(), wrt, retain_graph=True)
    largest = max(float(b.float().abs().max()) for b in g_plain)
    for a, b in zip(g_fast, g_plain):
        assert float((a.float() - b.float()).abs().max()) <= tol * largest


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 0.05)])
@pytest.mark.parametrize("subset", [False, True])
def test_attention_fast_self_attention_equals_forward(dtype, tol, subset):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, num_heads=2, dropout=0.1, bias=True).eval()
    X, valid_lens, rows = _layer_inputs()
    use_onednn(True, min_product=0)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            Xq = torch.gather(X, 1, rows[:, :, None].expand(-1, -1, 16)) if subset else X
            fast = mha.fast_self_attention(X, additive_mask(valid_lens, 7), Xq if subset else None)
            plain = mha(Xq, X, X, valid_lens)
    finally:
        use_onednn(True)
    _compare(fast, plain, [X], list(mha.parameters()), tol)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 0.05)])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_block_fast_forward_equals_forward(dtype, tol, activation):
    torch.manual_seed(0)
    blk = EncoderBlock(16, 32, 2, dropout=0.0, bias=True, activation=activation).train()   # dropout 0: exact
    X, valid_lens, rows = _layer_inputs()
    use_onednn(True, min_product=0)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            fast_all = blk.fast_forward(X, additive_mask(valid_lens, 7))
            plain = blk(X, valid_lens)
            fast_rows = blk.fast_forward(X, additive_mask(valid_lens, 7), rows)
    finally:
        use_onednn(True)
    _compare(fast_all, plain, [X], list(blk.parameters()), tol)
    picked = torch.gather(plain, 1, rows[:, :, None].expand(-1, -1, 16))
    _compare(fast_rows, picked, [X], list(blk.parameters()), tol)
    with pytest.raises(TypeError, match="post-norm"):
        EncoderBlock(16, 32, 2, norm_first=True).fast_forward(X, additive_mask(valid_lens, 7))


def test_additive_mask_masks_like_masked_softmax():
    from bertcourse.attention import masked_softmax
    scores = torch.randn(3, 2, 5, 5)
    valid_lens = torch.tensor([5, 2, 1])
    expected = masked_softmax(scores, valid_lens)
    assert torch.allclose(torch.softmax(scores + additive_mask(valid_lens, 5), dim=-1), expected, atol=1e-7)
    with pytest.raises(TypeError, match="valid_lens"):
        additive_mask(valid_lens.float(), 5)


def test_show_source_of_a_layer_shows_its_plain_forward_and_one_line_per_fast_path():
    shown = show_source(MultiHeadAttention).source
    assert "def forward" in shown and "def fast_self_attention" not in shown and "def cached" not in shown
    assert shown.count(FAST_PATH) == 2
    assert f"{FAST_PATH} show_source(MultiHeadAttention.cached)" in shown
    assert "def fast_self_attention" in show_source(MultiHeadAttention.fast_self_attention).source
    assert show_source(MaskLM).source.count(FAST_PATH) == 1 and "def loss" in show_source(MaskLM).source

"""bertcourse.speedups: the fused MLM loss, batch trimming and length buckets change no number."""
import math

import pytest
import torch
import torch.nn.functional as F
from tiny_bert import small_model, full_batch, interrupt_at

from bertcourse.checkpoints import load_checkpoint, save_checkpoint
from bertcourse.pretrain import mlm_loss, nsp_loss, pretraining_losses, pretraining_step
from bertcourse.speedups import (
    LengthBucketSampler,
    bucketed_loader,
    fused_mlm_loss,
    trim_batch,
)
from bertcourse.training import TrainConfig, Trainer


def reference_mlm(features, weight, bias, labels, weights):
    return mlm_loss(F.linear(features, weight, bias).float(), labels, weights)

def random_mlm_problem(batch=6, preds=5, d=16, vocab=50, seed=0, zero_rows=True):
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(batch, preds, d, generator=g, requires_grad=True)
    weight = torch.randn(vocab, d, generator=g).mul_(0.5).requires_grad_()
    bias = torch.randn(vocab, generator=g, requires_grad=True)
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
    got = fused_mlm_loss(f.to(torch.bfloat16), w.to(torch.bfloat16), b, lab, wt, chunk=16, block=32)
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
    with pytest.raises(ValueError, match=r"features must have shape \(batch, num_preds, num_hiddens\)"):
        fused_mlm_loss(f[0], w, b, lab, wt)
    with pytest.raises(ValueError, match=r"weight must have shape \(vocab, num_hiddens=16\), got shape \(50, 8\)"):
        fused_mlm_loss(f, w[:, :8], b, lab, wt)
    with pytest.raises(ValueError, match=r"bias must have shape \(vocab=50,\), got shape \(49,\)"):
        fused_mlm_loss(f, w, b[:-1], lab, wt)
    with pytest.raises(ValueError, match=r"mlm_weights must have shape \(batch=6, num_preds=5\), got shape \(6, 4\)"):
        fused_mlm_loss(f, w, b, lab, wt[:, :4])
    with pytest.raises(TypeError, match="mlm_labels must be an integer tensor"):
        fused_mlm_loss(f, w, b, lab.float(), wt)
    with pytest.raises(ValueError, match=r"mlm_labels must be ids in 0..49"):
        fused_mlm_loss(f, w, b, lab + 50, wt)

def test_mlm_features_are_what_the_head_feeds_its_decoder(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    batch = full_batch(dataset)
    encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
    direct = model.mlm(encoded, batch["pred_positions"])
    via = model.mlm.decoder(model.mlm.features(encoded, batch["pred_positions"]))
    assert torch.equal(direct, via)

def test_trim_batch_changes_nothing_but_the_speed(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    batch = full_batch(dataset)
    trimmed = trim_batch(batch)
    longest = int(batch["valid_lens"].max())
    assert trimmed["tokens"].shape == (len(dataset), longest) < batch["tokens"].shape
    assert torch.equal(trimmed["tokens"], batch["tokens"][:, :longest])
    for key in ("valid_lens", "pred_positions", "mlm_labels", "mlm_weights", "nsp_labels"):
        assert trimmed[key] is batch[key]
    a = pretraining_losses(model, batch, fused=False)          # trims inside
    _, mlm_full, nsp_full = model(batch["tokens"], batch["segments"], batch["valid_lens"],
                                  batch["pred_positions"])
    assert torch.allclose(a["mlm_loss"], mlm_loss(mlm_full, batch["mlm_labels"], batch["mlm_weights"]), atol=1e-5)
    assert torch.allclose(a["nsp_loss"], nsp_loss(nsp_full, batch["nsp_labels"]), atol=1e-5)
    with pytest.raises(ValueError, match=r"missing the key\(s\) \['nsp_labels'\]"):
        trim_batch({k: v for k, v in batch.items() if k != "nsp_labels"})
    with pytest.raises(TypeError, match="batch must be a dict"):
        trim_batch([batch["tokens"]])

def test_length_buckets_cover_every_example_once_with_similar_lengths():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(5, 60, (1000,), generator=g)
    sampler = LengthBucketSampler(lengths, batch_size=32, pool_batches=8, generator=torch.Generator().manual_seed(1))
    batches = list(sampler)
    assert len(batches) == len(sampler) == math.ceil(1000 / 32)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    spread = sum(int(lengths[b].max() - lengths[b].min()) for b in batches) / len(batches)
    random_spread = sum(int(lengths[b].max() - lengths[b].min())
                        for b in torch.randperm(1000, generator=g).split(32)) / len(batches)
    assert spread < random_spread / 4, (spread, random_spread)
    again = list(LengthBucketSampler(lengths, 32, 8, torch.Generator().manual_seed(1)))
    assert again == batches                                      # seeded: repeatable
    assert list(sampler) != batches                              # the next epoch is a new order
    with pytest.raises(ValueError, match="lengths must be a non-empty 1-D sequence"):
        LengthBucketSampler([], 4)

def test_resume_with_a_bucketed_loader(tokenizer, dataset, tmp_path):
    cfg = TrainConfig(steps=8, eval_every=None, warmup_steps=2, amp=False, seed=1)
    a = small_model(tokenizer)
    Trainer(a, bucketed_loader(dataset, 4, seed=5, pool_batches=2), pretraining_step(), cfg).fit(progress=False, plot=False)
    b = small_model(tokenizer)
    t = Trainer(b, bucketed_loader(dataset, 4, seed=5, pool_batches=2), pretraining_step(), cfg)
    interrupt_at(t, 6)                                     # in the second epoch (5 batches each)
    t.fit(progress=False, plot=False)
    save_checkpoint(tmp_path, b, tokenizer, t)
    b, _, state = load_checkpoint(tmp_path)
    t = Trainer(b, bucketed_loader(dataset, 4, seed=5, pool_batches=2), pretraining_step(), cfg)
    t.load_state_dict(state)
    t.fit(progress=False, plot=False)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k


# --- the fast path: pretraining_features, dropout_mask, linear --------------------------------

from bertcourse.speedups import (  # noqa: E402
    dropout_mask,
    fast_path_supported,
    linear,
    onednn_enabled,
    pretraining_features,
    use_onednn,
)


def plain_features(model, batch):
    encoded = model.encoder(batch["tokens"], batch["segments"], batch["valid_lens"])
    return model.mlm.features(encoded, batch["pred_positions"]), model.nsp(model.pooler(encoded))


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
    assert fast_path_supported(model)
    model.encoder.blks[0].norm_first = True          # a pre-norm block: not what pretraining_features computes
    assert not fast_path_supported(model)
    batch = full_batch(dataset)
    fused, plain = pretraining_losses(model, batch, fused=True), pretraining_losses(model, batch, fused=False)
    assert torch.allclose(fused["loss"], plain["loss"], atol=1e-5)
    with pytest.raises(TypeError, match="post-norm EncoderBlocks"):
        pretraining_features(model, trim_batch(batch))


def test_pretraining_features_check_their_inputs(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    batch = trim_batch(full_batch(dataset))
    with pytest.raises(ValueError, match=r"valid_lens must be \(batch,\) lengths of at least 1"):
        pretraining_features(model, {**batch, "valid_lens": batch["valid_lens"] * 0})
    with pytest.raises(ValueError, match=r"pred_positions must have shape \(batch=\d+, num_preds\) with values in"):
        pretraining_features(model, {**batch, "pred_positions": batch["pred_positions"] + 100})
    with pytest.raises(ValueError, match="missing the key"):
        pretraining_features(model, {"tokens": batch["tokens"]})


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
    import bertcourse.speedups as speedups
    w = torch.randn(8, 4)
    use_onednn(True, min_product=0)
    try:
        for rows in range(1, 60):
            linear(torch.randn(rows, 4), w)
        if onednn_enabled():
            assert len(speedups._ONEDNN["shapes"]) == speedups.ONEDNN_MAX_SHAPES
        assert torch.allclose(linear(torch.ones(61, 4), w), F.linear(torch.ones(61, 4), w))   # beyond: PyTorch's
    finally:
        use_onednn(True)
    assert len(speedups._ONEDNN["shapes"]) == 0
    linear(torch.randn(3, 4), w)                       # a small product: not sent to oneDNN
    assert len(speedups._ONEDNN["shapes"]) == 0

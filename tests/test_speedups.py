"""bertcourse.speedups: the fused MLM loss, batch trimming and length buckets change no number."""
import math

import pytest
import torch
import torch.nn.functional as F
from tiny_bert import (  # noqa: F401
    PARAGRAPHS,
    dataset,
    full_batch,
    interrupt_at,
    loader,
    one_thread,
    params_of,
    small_model,
    tokenizer,
)

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

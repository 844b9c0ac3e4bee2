"""bertcourse.pretrain: the losses, one training step, evaluation and the pretraining run."""
import math

import pytest
import torch
import torch.nn.functional as F
from tiny_bert import loader, small_model, full_batch

from bertcourse.bert import BERTModel
from bertcourse.pretrain import (
    evaluate,
    mlm_loss,
    nsp_loss,
    nsp_predictions,
    pretraining_losses,
    training_step,
)
from bertcourse.training import make_optimizer


def test_pretraining_losses_fused_and_plain_agree_with_data_losses(tokenizer, dataset):
    model = small_model(tokenizer).eval()            # eval: no dropout, so both paths see the same
    batch = full_batch(dataset)
    fused = pretraining_losses(model, batch, fused=True)
    plain = pretraining_losses(model, batch, fused=False)
    _, mlm_logits, nsp_logits = model(batch["tokens"], batch["segments"], batch["valid_lens"],
                                      batch["pred_positions"])
    expected_mlm = mlm_loss(mlm_logits, batch["mlm_labels"], batch["mlm_weights"])
    expected_nsp = nsp_loss(nsp_logits, batch["nsp_labels"])
    for out in (fused, plain):
        assert torch.allclose(out["mlm_loss"], expected_mlm, atol=1e-5)
        assert torch.allclose(out["nsp_loss"], expected_nsp, atol=1e-6)
        assert torch.allclose(out["loss"], expected_mlm + expected_nsp, atol=1e-5)
    # a fresh model with BERT's initialisation guesses nearly uniformly: MLM loss ~ ln(vocab)
    assert abs(fused["mlm_loss"].item() - math.log(len(tokenizer.vocab))) < 0.1
    assert abs(fused["nsp_loss"].item() - math.log(2)) < 0.05

@pytest.mark.parametrize("amp", [False, True])
def test_a_few_steps_lower_the_loss_on_a_fixed_batch(tokenizer, dataset, amp):
    model = small_model(tokenizer)
    batch = full_batch(dataset)
    opt = make_optimizer(model, lr=3e-3)
    torch.manual_seed(0)
    losses = [training_step(model, opt, batch, amp=amp)["loss"] for _ in range(40)]
    assert losses[0] > math.log(len(tokenizer.vocab))          # MLM ~ ln(vocab) plus NSP ~ ln 2
    assert sum(losses[-5:]) / 5 < 0.6 * losses[0], losses

def test_nsp_predictions_are_the_argmax_in_order_and_agree_with_evaluate(tokenizer, dataset):
    model = small_model(tokenizer, dropout=0.1)
    model.train()
    ev_loader = loader(dataset, 5, shuffle=False)
    pred = nsp_predictions(model, ev_loader)
    assert model.training                                         # restored
    assert pred.shape == (len(dataset),) and pred.dtype == torch.long
    model.eval()
    with torch.no_grad():
        expected = torch.cat([model(b["tokens"], b["segments"], b["valid_lens"])[2].argmax(-1)
                              for b in ev_loader])
    assert torch.equal(pred, expected)
    labels = torch.tensor([label for _, _, label in dataset.pairs])
    assert (pred == labels).float().mean().item() == pytest.approx(evaluate(model, ev_loader)["nsp_acc"])
    with pytest.raises(TypeError, match="with_heads=True"):
        nsp_predictions(BERTModel(model.config, with_heads=False), ev_loader)
    with pytest.raises(ValueError, match="no batches"):
        nsp_predictions(model, [])

def test_evaluate_counts_real_predictions_and_restores_the_mode(tokenizer, dataset):
    model = small_model(tokenizer)
    model.train()
    ev_loader = loader(dataset, 5, shuffle=False)
    ev = evaluate(model, ev_loader)
    assert model.training                                         # restored
    assert ev == evaluate(model, ev_loader)                       # eval mode: no dropout noise
    model.eval()
    hits = total = nsp_hits = 0
    with torch.no_grad():
        for b in ev_loader:
            _, mlm, nsp = model(b["tokens"], b["segments"], b["valid_lens"], b["pred_positions"])
            real = b["mlm_weights"] > 0
            hits += int(((mlm.argmax(-1) == b["mlm_labels"]) & real).sum())
            total += int(real.sum())
            nsp_hits += int((nsp.argmax(-1) == b["nsp_labels"]).sum())
    assert ev["num_preds"] == total and ev["num_pairs"] == len(dataset)
    assert ev["mlm_acc"] == pytest.approx(hits / total)
    assert ev["nsp_acc"] == pytest.approx(nsp_hits / len(dataset))
    assert ev["mlm_loss"] == pytest.approx(pretraining_losses(model, full_batch(dataset))["mlm_loss"].item(),
                                           rel=1e-5)


def _logits_labels_weights():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 7, generator=g) * 2
    labels = torch.randint(0, 7, (3, 4), generator=g)
    weights = torch.tensor([[1., 1., 1., 0.], [1., 0., 0., 0.], [1., 1., 1., 1.]])
    # make the padding slots' losses very different, so averaging them in would show
    logits[weights == 0] = 0.0
    logits[..., 0][weights == 0] = -20.0
    labels[weights == 0] = 0
    return logits, labels, weights

def test_mlm_loss_equals_a_hand_computation():
    logits, labels, weights = _logits_labels_weights()
    total, count = 0.0, 0
    for b in range(3):
        for j in range(4):
            if weights[b, j] == 1:
                log_probs = logits[b, j] - torch.logsumexp(logits[b, j], dim=0)
                total += -float(log_probs[labels[b, j]])
                count += 1
    assert count == 8
    assert float(mlm_loss(logits, labels, weights)) == pytest.approx(total / count, abs=1e-6)

def test_mlm_loss_differs_from_the_pitfall_version():
    logits, labels, weights = _logits_labels_weights()
    ours = mlm_loss(logits, labels, weights)
    # pitfall 2: reduction='mean' first, then the weights: the result is the plain mean
    # over all slots, padding included
    pitfall_scalar = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1))
    pitfall = (pitfall_scalar * weights.reshape(-1)).sum() / (weights.sum() + 1e-8)
    assert float(pitfall) == pytest.approx(float(pitfall_scalar), abs=1e-5)
    assert abs(float(ours) - float(pitfall)) > 1.0

def test_mlm_loss_fractional_weights_zero_weights_and_gradients():
    logits, labels, weights = _logits_labels_weights()
    w = weights * torch.linspace(0.5, 1.5, 4)
    per_slot = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), reduction="none")
    expected = (per_slot * w.reshape(-1)).sum() / w.sum()
    assert torch.allclose(mlm_loss(logits, labels, w), expected, atol=1e-6)
    zero = mlm_loss(logits, labels, torch.zeros(3, 4))
    assert torch.isfinite(zero) and float(zero) == 0.0
    # padding slots get no gradient
    logits.requires_grad_(True)
    mlm_loss(logits, labels, weights).backward()
    assert torch.all(logits.grad[weights == 0] == 0)
    assert torch.all(logits.grad[weights == 1].abs().sum(-1) > 0)

def test_mlm_loss_errors():
    logits, labels, weights = _logits_labels_weights()
    with pytest.raises(ValueError, match=r"\(batch, max_preds, vocab\)"):
        mlm_loss(logits[0], labels, weights)
    with pytest.raises(TypeError, match="mlm_labels must be an integer tensor"):
        mlm_loss(logits, labels.float(), weights)
    with pytest.raises(TypeError, match="mlm_weights must be a floating-point"):
        mlm_loss(logits, labels, weights.long())
    with pytest.raises(ValueError, match=r"mlm_weights must have shape \(batch=3, max_preds=4\)"):
        mlm_loss(logits, labels, weights[:, :3])
    with pytest.raises(ValueError, match=r"mlm_labels must have shape"):
        mlm_loss(logits, labels[:2], weights)
    with pytest.raises(ValueError, match=r"ids in 0\.\.6"):
        mlm_loss(logits, labels + 7, weights)
    with pytest.raises(TypeError, match="mlm_logits"):
        mlm_loss(logits.tolist(), labels, weights)

def test_nsp_loss():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 2, generator=g)
    labels = torch.tensor([0, 1, 1, 0, 0, 1])
    expected = sum(-float(torch.log_softmax(logits[i], 0)[labels[i]]) for i in range(6)) / 6
    assert float(nsp_loss(logits, labels)) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match=r"\(batch, 2\)"):
        nsp_loss(torch.randn(6, 3), labels)
    with pytest.raises(ValueError, match=r"\(batch=6,\)"):
        nsp_loss(logits, labels[:5])
    with pytest.raises(ValueError, match="0 \\(IsNext\\) or 1 \\(NotNext\\)"):
        nsp_loss(logits, labels + 1)
    with pytest.raises(TypeError, match="integer"):
        nsp_loss(logits, labels.float())

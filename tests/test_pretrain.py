"""bertcourse.pretrain: the losses, one training step, evaluation and the pretraining run."""
import functools
import math

import pytest
import torch
from tiny_bert import full_batch, interrupt_at, loader, small_model

from bertcourse.bert import BERTModel, mlm_loss, nsp_loss
from bertcourse.pretrain import (
    evaluate,
    init_bert_weights,
    nsp_predictions,
    pretrain,
    pretraining_losses,
    training_step,
)
from bertcourse.checkpoints import load_checkpoint
from bertcourse.training import TrainConfig, make_optimizer


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


def test_pretrain_saves_when_interrupted_and_resumes_like_an_uninterrupted_run(tokenizer, dataset, tmp_path,
                                                                              monkeypatch):
    """The one way a run is built (chapter 7, the command line, torchrun): interrupted, it saves a
    checkpoint; resumed from it, it ends with the weights of the run that was never stopped."""
    import bertcourse.pretrain as module
    cfg = TrainConfig(steps=9, eval_every=None, warmup_steps=2, amp=False, seed=3)
    straight = small_model(tokenizer)
    pretrain(straight, loader(dataset), None, cfg, progress=False, plot=False)

    class StopsAfterStep3(module.Trainer):             # Ctrl-C after step 3
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            interrupt_at(self, 3)

    monkeypatch.setattr(module, "Trainer", StopsAfterStep3)
    model = small_model(tokenizer)
    h = pretrain(model, loader(dataset), None, cfg, progress=False, plot=False, save_to=str(tmp_path),
                 tokenizer=tokenizer, extra={"note": "chapter 7"})
    assert h.interrupted and h.step == [1, 2, 3]
    monkeypatch.setattr(module, "Trainer", StopsAfterStep3.__bases__[0])
    torch.manual_seed(123)                          # the checkpoint restores the generator, not this
    model, tok, state = load_checkpoint(tmp_path)
    assert state["info"]["step"] == 3 and tok is not None
    h = pretrain(model, loader(dataset), None, cfg, progress=False, plot=False, state=state,
                 save_to=str(tmp_path), tokenizer=tok)
    assert h.stopped_by == "steps" and h.step == list(range(1, 10))
    for (k, a), b in zip(straight.state_dict().items(), model.state_dict().values()):
        assert torch.equal(a, b), k
    assert load_checkpoint(tmp_path)[2]["info"]["step"] == 9
    with pytest.raises(TypeError, match="state must be a dict"):
        pretrain(model, loader(dataset), None, cfg, progress=False, plot=False, state=[3])
    with pytest.raises(ValueError, match="save_to"):
        pretrain(model, loader(dataset), None, cfg, progress=False, plot=False, save_to="")


def test_init_bert_weights_draws_small_normal_weights_and_resets_the_norms(tokenizer):
    """BERT's initialisation as the course writes it: every linear and embedding weight (the
    learned positions too) from N(0, 0.02²), biases 0, layer norms 1 and 0."""
    model = small_model(tokenizer)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(5.0)
    torch.manual_seed(0)
    assert init_bert_weights(model) is model
    weights = torch.cat([m.weight.detach().flatten() for m in model.modules()
                         if isinstance(m, (torch.nn.Linear, torch.nn.Embedding))])
    assert weights.numel() > 10_000 and abs(float(weights.mean())) < 1e-3
    assert 0.019 < float(weights.std()) < 0.021
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            assert torch.all(p == 0), name
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(torch.all(m.weight == 1) for m in norms)
    assert not any(torch.all(p == 5.0) for p in model.parameters())      # nothing left out
    with pytest.raises(ValueError, match="std must be > 0"):
        init_bert_weights(model, std=0)


@functools.lru_cache(maxsize=1)
def _chapter7_training_data():
    """Chapter 7's training split as the notebook loads it (seed 0, batches of 128, 64 tokens)."""
    from bertcourse.data import load_pretrain_data
    loader_, tokenizer_ = load_pretrain_data(batch_size=128, max_len=64, split="train", seed=0)
    return loader_.dataset, tokenizer_


def test_ch07_fresh_masks_change_the_blanks_and_static_masks_come_back():
    """Chapter 7, pitfall 1: with dynamic_masking at epoch 1 most of the first 1,024 training pairs get
    other blanks, and switching back to static masking gives the training masks again."""
    dataset, _ = _chapter7_training_data()
    training_masks = [dataset[i]["pred_positions"] for i in range(1024)]
    trained_epoch = dataset.epoch
    dataset.dynamic_masking = True
    dataset.set_epoch(1)
    changed = sum(not torch.equal(dataset[i]["pred_positions"], training_masks[i]) for i in range(1024))
    dataset.dynamic_masking = False
    dataset.set_epoch(trained_epoch + 3)                 # static masks do not depend on the epoch
    assert changed / 1024 > 0.9
    assert all(torch.equal(dataset[i]["pred_positions"], training_masks[i]) for i in range(1024))
    dataset.set_epoch(trained_epoch)


def test_ch07_silver_and_gold_sentences_have_one_sense_and_one_token():
    """Chapter 7, contextual vectors: every training sentence with *silver* or *gold* has exactly one
    of the two senses by its cue words, and the word is one WordPiece token there."""
    import re

    from bertcourse.data import generate_corpus
    _, tokenizer_ = _chapter7_training_data()
    corpus = generate_corpus(0)
    senses = {"metal": ("export", "sells", "famous"), "colour": ("flag", "colours")}   # the notebook's cues
    train_sentences = sorted({s for paragraph in corpus.split("train") for s in paragraph})
    for word in ("silver", "gold"):
        found = [s for s in train_sentences if re.search(rf"\b{word}\b", s)]
        kinds = [[k for k, keys in senses.items() if any(key in s.split() for key in keys)] for s in found]
        assert len(found) >= 10 and {k for ks in kinds for k in ks} == set(senses)
        assert all(len(k) == 1 for k in kinds), [s for k, s in zip(kinds, found) if len(k) != 1][:3]
        assert all(word in tokenizer_.tokenize(s) for s in found)

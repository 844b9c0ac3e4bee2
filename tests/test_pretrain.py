"""bertcourse.pretrain: the losses, the training loop, evaluation, baselines, checkpoints
and the command line."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.nn.functional as F

from bertcourse.bert import BERTModel, get_config
from bertcourse.data import PretrainDataset, train_wordpiece
from bertcourse.pretrain import (History, LengthBucketSampler, TrainConfig, Trainer, baselines, bucketed_loader,
                                 count_based_accuracy, evaluate, fused_mlm_loss, init_bert_weights,
                                 load_checkpoint, lr_factor, main, make_optimizer, mlm_loss, nsp_loss,
                                 most_frequent_token_accuracy, nsp_chance_accuracy, nsp_predictions,
                                 plot_history, pretrain, pretraining_losses, save_checkpoint,
                                 training_step, trim_batch)

PARAGRAPHS = [
    ["velora is a country in the north.", "its capital is tarnum.", "tarnum lies on the river osk.",
     "people there speak velish."],
    ["brisk is a country in the south.", "its capital is olm.", "olm is a big town by the sea.",
     "people there speak briskan."],
    ["the fox is a small animal.", "it is red.", "it eats mice at night.", "it lives in the forest."],
    ["mira holt works as a baker in olm.", "she bakes bread every morning.", "she has a cat.",
     "she likes to swim."],
    ["the bear is a big animal.", "it is brown.", "it eats fish.", "it lives by the river."],
    ["tom vale works as a smith in tarnum.", "he makes tools.", "he has a dog.", "he plays football."],
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """These models are tiny: one thread is as fast, and on a busy machine much faster
    than two threads that wait for each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece([s for p in PARAGRAPHS for s in p] * 3, vocab_size=150)


@pytest.fixture(scope="module")
def dataset(tokenizer):
    return PretrainDataset(PARAGRAPHS, tokenizer, max_len=32, seed=0)


def loader(dataset, batch_size=4, shuffle=True, seed=0):
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                       generator=torch.Generator().manual_seed(seed) if shuffle else None)


def small_model(tokenizer, seed=0, **overrides):
    torch.manual_seed(seed)
    cfg = get_config("tiny", vocab_size=len(tokenizer.vocab), num_hiddens=32, ffn_num_hiddens=64,
                     max_len=32, **overrides)
    return init_bert_weights(BERTModel(cfg))


def full_batch(dataset):
    return next(iter(loader(dataset, batch_size=len(dataset), shuffle=False)))


# ---------------------------------------------------------------------------------------
# The fused MLM loss
# ---------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------
# Losses of a batch, trimming, one step
# ---------------------------------------------------------------------------------------

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


@pytest.mark.parametrize("amp", [False, True])
def test_a_few_steps_lower_the_loss_on_a_fixed_batch(tokenizer, dataset, amp):
    model = small_model(tokenizer)
    batch = full_batch(dataset)
    opt = make_optimizer(model, lr=3e-3)
    torch.manual_seed(0)
    losses = [training_step(model, opt, batch, amp=amp)["loss"] for _ in range(40)]
    assert losses[0] > math.log(len(tokenizer.vocab))          # MLM ~ ln(vocab) plus NSP ~ ln 2
    assert sum(losses[-5:]) / 5 < 0.6 * losses[0], losses


def test_optimizer_decays_matrices_only(tokenizer):
    model = small_model(tokenizer)
    decay, no_decay = make_optimizer(model, weight_decay=0.1).param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    n = sum(p.numel() for g in (decay, no_decay) for p in g["params"])
    assert n == sum(p.numel() for p in model.parameters())    # every parameter once (tied decoder)


def test_lr_factor_warms_up_then_decays_linearly():
    assert lr_factor(0, 0.0, 10) == pytest.approx(0.1)
    assert lr_factor(4, 0.0, 10) == pytest.approx(0.5)
    assert lr_factor(9, 0.0, 10) == pytest.approx(1.0)
    assert lr_factor(50, 0.5, 10) == pytest.approx(0.5)
    assert lr_factor(99, 1.0, 10) == pytest.approx(0.0)
    assert lr_factor(99, 1.0, 10, final_ratio=0.1) == pytest.approx(0.1)
    assert lr_factor(0, 0.0, 0) == 1.0
    assert lr_factor(5, 2.0, 0) == 0.0                          # progress is clipped to [0, 1]


def test_train_config_checks_its_fields():
    with pytest.raises(ValueError, match="give steps or seconds"):
        TrainConfig(steps=None, seconds=None)
    with pytest.raises(ValueError, match="seconds must be > 0, got 0"):
        TrainConfig(seconds=0)
    with pytest.raises(ValueError, match="steps must be > 0, got -3"):
        TrainConfig(steps=-3)
    with pytest.raises(ValueError, match="amp must be True, False or 'auto'"):
        TrainConfig(amp="bf16")
    with pytest.raises(ValueError, match="clip must be a number > 0 or None"):
        TrainConfig(clip=0)


# ---------------------------------------------------------------------------------------
# The loop: budget, history, evaluation, resume
# ---------------------------------------------------------------------------------------

def test_pretrain_records_history_and_evaluates(tokenizer, dataset):
    model = small_model(tokenizer)
    cfg = TrainConfig(steps=12, eval_every=5, warmup_steps=3, lr=2e-3, amp=False)
    h = pretrain(model, loader(dataset), loader(dataset, 8, shuffle=False), cfg, progress=False, plot=False)
    assert h.step == list(range(1, 13)) and len(h.loss) == len(h.lr) == len(h.time) == 12
    assert [e["step"] for e in h.evals] == [5, 10, 12]
    assert h.stopped_by == "steps" and not h.interrupted
    assert h.lr[0] == pytest.approx(2e-3 / 3) and h.lr[2] == pytest.approx(2e-3 * (1 - 2 / 12))
    assert h.time == sorted(h.time)
    assert model.training
    assert History.from_dict(json.loads(json.dumps(h.to_dict()))) == h
    fig = plot_history(h)
    assert len(fig.axes[0].lines) == 3 and len(fig.axes[1].lines) == 2
    assert list(fig.axes[1].lines[0].get_ydata()) == [e["mlm_acc"] for e in h.evals]


def test_time_budget_is_respected(tokenizer, dataset):
    model = small_model(tokenizer)
    cfg = TrainConfig(steps=None, seconds=2.0, eval_every=None, amp=False)
    start = time.perf_counter()
    h = pretrain(model, loader(dataset), None, cfg, progress=False, plot=False)
    wall = time.perf_counter() - start
    step_times = [b - a for a, b in zip([0.0] + h.time[:-1], h.time)]
    assert h.stopped_by == "seconds"
    assert h.time[-1] >= 2.0 and h.time[-2] < 2.0                 # stopped at the first step past it
    assert wall <= 2.0 + max(step_times) + 0.5, (wall, max(step_times))


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


def params_of(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def interrupt_at(trainer, step):
    """Make ``trainer`` receive a Ctrl-C (SIGINT) right after optimizer step ``step``."""
    original = trainer.optimizer.step

    def step_then_interrupt(*args, **kwargs):
        out = original(*args, **kwargs)
        if trainer.step + 1 == step:          # trainer.step is counted after optimizer.step
            os.kill(os.getpid(), signal.SIGINT)
        return out

    trainer.optimizer.step = step_then_interrupt


def test_resume_continues_exactly_like_an_uninterrupted_run(tokenizer, dataset, tmp_path):
    cfg = TrainConfig(steps=9, eval_every=None, warmup_steps=2, amp=False, seed=3)
    # uninterrupted: 9 steps (an epoch has 5 batches of 4: the run crosses an epoch boundary)
    a = small_model(tokenizer)
    Trainer(a, loader(dataset), None, cfg).fit(progress=False, plot=False)
    # Ctrl-C after step 3 (inside the first epoch), and after step 7 (inside the second)
    b = small_model(tokenizer)
    t = Trainer(b, loader(dataset), None, cfg)
    for stop in (3, 7, None):
        if stop is not None:
            interrupt_at(t, stop)
        h = t.fit(progress=False, plot=False)
        assert t.step == (stop or 9) and h.stopped_by == ("interrupt" if stop else "steps")
        if stop is None:
            break
        save_checkpoint(tmp_path, b, tokenizer, t)
        torch.manual_seed(123)                  # the file restores the generator, not this
        b, _, state = load_checkpoint(tmp_path)
        t = Trainer(b, loader(dataset), None, cfg)
        t.load_state_dict(state)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k
    assert len(t.history.loss) == 9 and t.history.step == list(range(1, 10))


def test_ctrl_c_stops_after_the_current_step(tokenizer, dataset):
    model = small_model(tokenizer)
    cfg = TrainConfig(steps=1000, eval_every=None, amp=False)
    trainer = Trainer(model, loader(dataset), None, cfg)
    calls = {"n": 0}
    original = trainer.optimizer.step

    def step_then_interrupt(*args, **kwargs):
        out = original(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 4:
            os.kill(os.getpid(), signal.SIGINT)    # as if the learner pressed Ctrl-C
        return out

    trainer.optimizer.step = step_then_interrupt
    h = trainer.fit(progress=False, plot=False)
    assert h.interrupted and trainer.step == 4 and len(h.loss) == 4
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# ---------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------

def test_checkpoint_round_trip_is_exact(tokenizer, dataset, tmp_path):
    model = small_model(tokenizer, dropout=0.2, activation="relu")
    pretrain(model, loader(dataset), None, TrainConfig(steps=3, eval_every=None, amp=False),
             progress=False, plot=False)
    model.eval()
    save_checkpoint(tmp_path / "ckpt", model, tokenizer, extra={"note": "test"})
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["config.json", "model.safetensors", "tokenizer.json"]
    loaded, tok, state = load_checkpoint(tmp_path / "ckpt")
    assert state is None and not loaded.training
    assert loaded.config == model.config
    assert loaded.mlm.decoder.weight is loaded.encoder.token_embedding.weight      # tie restored
    for (k, a), b in zip(model.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), k
    batch = full_batch(dataset)
    with torch.no_grad():
        out_a = model(batch["tokens"], batch["segments"], batch["valid_lens"], batch["pred_positions"])
        out_b = loaded(batch["tokens"], batch["segments"], batch["valid_lens"], batch["pred_positions"])
    for a, b in zip(out_a, out_b):
        assert torch.equal(a, b)
    assert tok.vocab.tokens == tokenizer.vocab.tokens
    assert tok.encode("its capital is olm.") == tokenizer.encode("its capital is olm.")
    with open(tmp_path / "ckpt" / "config.json") as f:
        assert json.load(f)["extra"] == {"note": "test"}
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        load_checkpoint(tmp_path / "nothing")


# ---------------------------------------------------------------------------------------
# Baselines
# ---------------------------------------------------------------------------------------

def make_batch(rows, preds, nsp=None):
    """A batch from token-id rows (no padding) and, per row, a list of (position, label)
    predictions; the input at a prediction position is [MASK] (id 4)."""
    n, L = len(rows), max(map(len, rows))
    P = max(len(p) for p in preds)
    b = {"tokens": torch.zeros(n, L, dtype=torch.long), "segments": torch.zeros(n, L, dtype=torch.long),
         "valid_lens": torch.tensor([len(r) for r in rows]), "pred_positions": torch.zeros(n, P, dtype=torch.long),
         "mlm_labels": torch.zeros(n, P, dtype=torch.long), "mlm_weights": torch.zeros(n, P),
         "nsp_labels": torch.tensor(nsp or [0] * n)}
    for i, (r, ps) in enumerate(zip(rows, preds)):
        b["tokens"][i, :len(r)] = torch.tensor(r)
        for j, (pos, lab) in enumerate(ps):
            b["tokens"][i, pos] = 4
            b["pred_positions"][i, j], b["mlm_labels"][i, j], b["mlm_weights"][i, j] = pos, lab, 1.0
    return b


def test_baselines_on_a_hand_made_example():
    # training text (ids >= 5 are words): "5 6 7", "5 6 7", "5 8 9", "10 6 9", "10 6 9", "10 6 9"
    train = [make_batch([[2, 5, 6, 7, 3], [2, 5, 6, 7, 3], [2, 5, 8, 9, 3]], [[(2, 6)], [(1, 5)], [(3, 9)]]),
             make_batch([[2, 10, 6, 9, 3]] * 3, [[(2, 6)], [(3, 9)], [(1, 10)]])]
    # most frequent word: 6 (5 times). After 5: 6 (twice) vs 8 (once). Between 5 and 9: 8.
    ev = [make_batch([[2, 5, 8, 9, 3], [2, 10, 6, 9, 3], [2, 11, 6, 3]], [[(2, 8)], [(2, 6)], [(2, 6)]],
                     nsp=[0, 1, 1])]
    # row 0, blank between 5 and 9: both -> 8 (right), left -> 6 (wrong), most frequent -> 6 (wrong)
    # row 1, blank between 10 and 9: both -> 6 (right), left -> 6 (right), most frequent -> 6 (right)
    # row 2, blank after 11 (never seen): both/left back off to the most frequent, 6 (right)
    assert most_frequent_token_accuracy(train, ev) == pytest.approx(2 / 3)
    assert count_based_accuracy(train, ev, "left") == pytest.approx(2 / 3)
    assert count_based_accuracy(train, ev, "both") == pytest.approx(3 / 3)
    assert nsp_chance_accuracy(ev) == pytest.approx(2 / 3)
    assert baselines(train, ev) == {"mlm_most_frequent": pytest.approx(2 / 3), "mlm_bigram": pytest.approx(2 / 3),
                                    "mlm_both_neighbours": pytest.approx(1.0), "nsp_chance": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="context must be 'left' or 'both'"):
        count_based_accuracy(train, ev, "right")


def test_baselines_on_the_test_corpus_are_sensible(dataset):
    ld = loader(dataset, 4, shuffle=False)
    b = baselines(ld, ld)
    assert 0 < b["mlm_most_frequent"] <= b["mlm_bigram"] <= 1
    assert 0.5 <= b["nsp_chance"] <= 1


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------

def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,message", [
    (["--config", "huge"], "--config must be one of tiny, d2l-small, base, large, got 'huge'"),
    (["--seconds", "0"], "--seconds must be > 0, got 0"),
    (["--seconds", "-5"], "--seconds must be > 0, got -5"),
    (["--seconds", "soon"], "--seconds must be a number, got 'soon'"),
    (["--steps", "0"], "--steps must be > 0, got 0"),
    (["--batch-size", "2.5"], "--batch-size must be a whole number, got '2.5'"),
    (["--amp", "fp8"], "argument --amp: invalid choice: 'fp8'"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_options_give_one_line_and_exit_code_2(capsys, tmp_path, argv, message):
    code, out, err = run_main(capsys, "--out", str(tmp_path / "run"), *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert out == ""


def test_unwritable_output_folder_and_missing_resume_state(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = run_main(capsys, "--out", str(blocker / "run"))
    assert code == 2 and err.startswith("error: --out") and "not a writable folder" in err
    assert err.count("\n") == 1
    code, _, err = run_main(capsys, "--out", str(tmp_path / "empty"), "--resume")
    assert code == 2 and "--resume: no saved run in" in err
    code, _, err = run_main(capsys)
    assert code == 2 and err == "error: the following arguments are required: --out\n"


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--config", "--seconds", "--steps", "--out", "--resume", "--batch-size", "--max-len",
                   "--lr", "--warmup-steps", "--weight-decay", "--clip", "--eval-every", "--seed",
                   "--num-paragraphs", "--amp", "--threads", "--quiet"):
        assert option in text


CLI = [sys.executable, "-m", "bertcourse.pretrain"]


def test_cli_error_is_not_a_traceback():
    r = subprocess.run(CLI + ["--config", "huge", "--out", "runs/never"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: --config must be one of tiny, d2l-small, base, large, got 'huge'"]
    assert "Traceback" not in r.stderr


def test_cli_ctrl_c_saves_a_checkpoint_and_resume_continues(tmp_path):
    out = tmp_path / "run"
    args = CLI + ["--config", "tiny", "--out", str(out), "--num-paragraphs", "60", "--batch-size", "8",
                  "--eval-every", "100000", "--quiet", "--amp", "off", "--threads", "1"]
    p = subprocess.Popen(args + ["--steps", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stdout:                       # wait until training has started
        lines.append(line)
        if line.startswith("training a tiny BERT"):
            break
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=120)
    assert p.returncode == 130, (lines, rest, err)
    assert "Traceback" not in err
    assert "interrupted at step" in rest and "--resume" in rest
    with open(out / "trainer_state.json") as f:
        step = json.load(f)["step"]
    assert step > 0
    model, tok, state = load_checkpoint(out)
    assert state["info"]["history"]["stopped_by"] == "interrupt"

    r = subprocess.run(args + ["--steps", str(step + 3), "--resume"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"resuming from step {step}" in r.stdout and f"done: {step + 3} steps" in r.stdout
    model2, _, state2 = load_checkpoint(out)
    assert state2["info"]["step"] == step + 3
    assert len(state2["info"]["history"]["loss"]) == step + 3
    assert not all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values()))


# ---------------------------------------------------------------------------------------
# Length buckets
# ---------------------------------------------------------------------------------------

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
    Trainer(a, bucketed_loader(dataset, 4, seed=5, pool_batches=2), None, cfg).fit(progress=False, plot=False)
    b = small_model(tokenizer)
    t = Trainer(b, bucketed_loader(dataset, 4, seed=5, pool_batches=2), None, cfg)
    interrupt_at(t, 6)                                     # in the second epoch (5 batches each)
    t.fit(progress=False, plot=False)
    save_checkpoint(tmp_path, b, tokenizer, t)
    b, _, state = load_checkpoint(tmp_path)
    t = Trainer(b, bucketed_loader(dataset, 4, seed=5, pool_batches=2), None, cfg)
    t.load_state_dict(state)
    t.fit(progress=False, plot=False)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k


def test_fit_uses_the_fused_attention_and_restores_the_setting(tokenizer, dataset):
    from bertcourse.attention import DotProductAttention, store_attention_weights
    model = store_attention_weights(small_model(tokenizer), True)
    layers = [m for m in model.modules() if isinstance(m, DotProductAttention)]
    seen = []
    trainer = Trainer(model, loader(dataset), None, TrainConfig(steps=2, eval_every=None, amp=False))
    original = trainer.optimizer.step

    def spy(*args, **kwargs):
        seen.append([m.store_weights for m in layers])
        return original(*args, **kwargs)

    trainer.optimizer.step = spy
    trainer.fit(progress=False, plot=False)
    assert seen == [[False, False], [False, False]]           # fused path while training
    assert [m.store_weights for m in layers] == [True, True]  # the setting is back


# --- the losses ---------------------------------------------------------------------------

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

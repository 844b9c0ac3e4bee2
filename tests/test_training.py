"""bertcourse.training: the one training loop (budget, schedule, history, evaluation, resume, Ctrl-C)."""
import json
import os
import signal
import time

import pytest
import torch
from tiny_bert import PARAGRAPHS, loader, small_model, interrupt_at

from bertcourse.checkpoints import load_checkpoint, save_checkpoint
from bertcourse.data import PretrainDataset
from bertcourse.pretrain import pretrain, pretraining_step
from bertcourse.training import (
    evaluation_batches,
    History,
    TrainConfig,
    Trainer,
    lr_factor,
    make_optimizer,
    plot_history,
)
from bertcourse.memory import saved_for_backward


def test_optimizer_decays_matrices_only(tokenizer):
    model = small_model(tokenizer)
    decay, no_decay = make_optimizer(model, weight_decay=0.1).param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    n = sum(p.numel() for g in (decay, no_decay) for p in g["params"])
    assert n == sum(p.numel() for p in model.parameters())    # every parameter once (tied decoder)


def test_optimizer_is_the_fused_adamw_and_steps_like_the_plain_one(tokenizer):
    # the fused kernel (faster, no temporary copies) must be the same algorithm
    models = [small_model(tokenizer, seed=0), small_model(tokenizer, seed=0)]
    fused = make_optimizer(models[0], lr=1e-2, weight_decay=0.1)
    assert fused.defaults["fused"] is True
    plain = torch.optim.AdamW([{"params": [p for p in models[1].parameters() if p.dim() >= 2], "weight_decay": 0.1},
                               {"params": [p for p in models[1].parameters() if p.dim() < 2], "weight_decay": 0.0}],
                              lr=1e-2, eps=1e-6, foreach=False)
    for step in range(3):
        for model, opt in zip(models, (fused, plain)):
            g = torch.Generator().manual_seed(step)
            for p in model.parameters():
                p.grad = torch.randn(p.shape, generator=g)
            opt.step()
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_lr_factor_warms_up_then_decays_linearly():
    assert lr_factor(0, 0.0, 10) == pytest.approx(0.1)
    assert lr_factor(4, 0.0, 10) == pytest.approx(0.5)
    assert lr_factor(9, 0.0, 10) == pytest.approx(1.0)
    assert lr_factor(50, 0.5, 10) == pytest.approx(0.5)
    assert lr_factor(99, 1.0, 10) == pytest.approx(0.0)
    assert lr_factor(99, 1.0, 10, final_ratio=0.1) == pytest.approx(0.1)
    assert lr_factor(0, 0.0, 0) == 1.0
    assert lr_factor(5, 2.0, 0) == 0.0                          # progress is clipped to [0, 1]


def test_the_schedule_multiplies_warm_up_and_decay_so_it_peaks_below_the_base_rate():
    """The decay runs from step 0, also during the warm-up: the peak is 1 - (W - 1) / T, at step
    W - 1 (chapter 9: T = 150, W = 15, about 0.91; chapter 7: T = 1600, W = 50, about 0.97)."""
    for steps, warmup, rounded in [(150, 15, 0.91), (1600, 50, 0.97)]:
        factors = [lr_factor(t, t / steps, warmup) for t in range(steps)]
        peak = max(factors)
        assert factors.index(peak) == warmup - 1
        assert peak == pytest.approx(1 - (warmup - 1) / steps) and round(peak, 2) == rounded
    # Hugging Face's get_linear_schedule_with_warmup would peak at 1 (decay after the warm-up)
    hf = [min((t + 1) / 15, (150 - t) / (150 - 15)) for t in range(150)]
    assert max(hf) == 1.0 > max(lr_factor(t, t / 150, 15) for t in range(150))

def test_train_config_checks_its_fields():
    with pytest.raises(ValueError, match="give steps or seconds"):
        TrainConfig(steps=None, seconds=None)
    with pytest.raises(ValueError, match="seconds must be > 0, got 0"):
        TrainConfig(seconds=0)
    with pytest.raises(ValueError, match="steps must be > 0, got -3"):
        TrainConfig(steps=-3)
    with pytest.raises(ValueError, match="amp must be True, False or 'auto'"):
        TrainConfig(amp="bf16")
    with pytest.raises(ValueError, match="clip must be > 0, got 0"):
        TrainConfig(clip=0)
    for name in ("lr", "clip", "weight_decay", "seconds", "eps"):     # NaN and infinity make no sense
        for bad in (float("nan"), float("inf")):
            with pytest.raises(ValueError, match=f"{name} must be a finite number"):
                TrainConfig(**{name: bad})
    with pytest.raises(ValueError, match="lr must be > 0, got 0"):                # trains nothing
        TrainConfig(lr=0)
    with pytest.raises(TypeError, match="betas must be a pair"):
        TrainConfig(betas=0.9)
    with pytest.raises(ValueError, match=r"betas\[1\] must be < 1"):
        TrainConfig(betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="step must be >= 0, got -5"):
        lr_factor(-5, 0, 10)

def test_pretrain_records_history_and_evaluates(tokenizer, dataset):
    model = small_model(tokenizer)
    cfg = TrainConfig(steps=12, eval_every=5, warmup_steps=3, lr=2e-3, amp=False)
    h = pretrain(model, loader(dataset), loader(dataset, 8, shuffle=False), cfg, progress=False, plot=False)
    assert h.step == list(range(1, 13)) and len(h["loss"]) == len(h.lr) == len(h.time) == 12
    assert set(h.metrics) == {"loss", "mlm_loss", "nsp_loss", "grad_norm"}
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

def test_resume_continues_exactly_like_an_uninterrupted_run(tokenizer, dataset, tmp_path):
    cfg = TrainConfig(steps=9, eval_every=None, warmup_steps=2, amp=False, seed=3)
    # uninterrupted: 9 steps (an epoch has 5 batches of 4: the run crosses an epoch boundary)
    a = small_model(tokenizer)
    Trainer(a, loader(dataset), pretraining_step(), cfg).fit(progress=False, plot=False)
    # Ctrl-C after step 3 (inside the first epoch), and after step 7 (inside the second)
    b = small_model(tokenizer)
    t = Trainer(b, loader(dataset), pretraining_step(), cfg)
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
        t = Trainer(b, loader(dataset), pretraining_step(), cfg)
        t.load_state_dict(state)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k
    assert len(t.history["loss"]) == 9 and t.history.step == list(range(1, 10))


def test_the_loop_reads_a_batch_as_a_dataloader_does(tokenizer, dataset):
    """The Trainer draws its batches from the loader's sampler itself (so that a resumed run can
    skip batches without reading them) and reads each batch through the dataset's
    ``__getitems__`` when it has one, as a DataLoader does: once per batch, none one by one, and
    the same batches as reading the examples one by one, so the same training to the bit."""
    class OneByOne(PretrainDataset):
        __getitems__ = None                 # a DataLoader and the Trainer then read dataset[i]

    calls = {"batch": 0, "example": 0}

    class Counted(PretrainDataset):
        def __getitems__(self, indices):
            calls["batch"] += 1
            return super().__getitems__(indices)

        def __getitem__(self, index):
            calls["example"] += 1
            return super().__getitem__(index)

    cfg = TrainConfig(steps=7, eval_every=None, warmup_steps=2, amp=False, seed=1)   # crosses an epoch
    seen, models = {}, {}
    for kind in (OneByOne, Counted):
        data = kind(PARAGRAPHS, tokenizer, max_len=32, seed=0)
        assert len(data) == len(dataset)
        seen[kind] = []

        def step(model, batch, record=seen[kind]):
            record.append({k: v.clone() for k, v in batch.items()})
            return pretraining_step()(model, batch)
        models[kind] = small_model(tokenizer)
        Trainer(models[kind], loader(data), step, cfg).fit(progress=False, plot=False)
    assert calls == {"batch": 7, "example": 0}
    assert len(seen[OneByOne]) == len(seen[Counted]) == 7
    for a, b in zip(seen[OneByOne], seen[Counted]):
        assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    for (k, va), vb in zip(models[OneByOne].state_dict().items(), models[Counted].state_dict().values()):
        assert torch.equal(va, vb), k


def test_ctrl_c_stops_after_the_current_step(tokenizer, dataset):
    # what SIGINT did before (Python's KeyboardInterrupt; SIG_IGN in a shell's background job)
    before = signal.getsignal(signal.SIGINT)
    model = small_model(tokenizer)
    cfg = TrainConfig(steps=1000, eval_every=None, amp=False)
    trainer = Trainer(model, loader(dataset), pretraining_step(), cfg)
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
    assert h.interrupted and trainer.step == 4 and len(h["loss"]) == 4
    assert signal.getsignal(signal.SIGINT) is before

def test_fit_uses_the_fused_attention_and_restores_the_setting(tokenizer, dataset):
    from bertcourse.attention import DotProductAttention, store_attention_weights
    model = store_attention_weights(small_model(tokenizer), True)
    layers = [m for m in model.modules() if isinstance(m, DotProductAttention)]
    seen = []
    trainer = Trainer(model, loader(dataset), pretraining_step(), TrainConfig(steps=2, eval_every=None, amp=False))
    original = trainer.optimizer.step

    def spy(*args, **kwargs):
        seen.append([m.store_weights for m in layers])
        return original(*args, **kwargs)

    trainer.optimizer.step = spy
    trainer.fit(progress=False, plot=False)
    assert seen == [[False, False], [False, False]]           # fused path while training
    assert [m.store_weights for m in layers] == [True, True]  # the setting is back

def test_device_is_checked_and_batches_of_any_shape_are_moved(tokenizer, dataset):
    with pytest.raises(TypeError, match="device must be a str"):
        TrainConfig(device=0)
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        Trainer(small_model(tokenizer), loader(dataset), pretraining_step(), TrainConfig(device="gpu"))
    seen = []

    def step_fn(model, batch):                      # a tuple batch: (dict of tensors, tensor)
        pairs, extra = batch
        seen.append((pairs["tokens"].device, extra.device))
        return pretraining_step()(model, pairs)

    tuples = [(b, torch.ones(2)) for b in loader(dataset)]
    trainer = Trainer(small_model(tokenizer), tuples, step_fn, TrainConfig(steps=2, eval_every=None, device="cpu"))
    trainer.fit(progress=False, plot=False)
    assert trainer.device == torch.device("cpu") and seen == [(torch.device("cpu"),) * 2] * 2
    assert trainer.world_size == 1 and trainer.is_main and trainer.ddp is None
    assert TrainConfig(amp=False).use_amp(torch.device("cpu")) is False


def test_bf16_autocast_only_where_it_is_measured_faster(monkeypatch):
    from bertcourse import precision, training
    assert training.cpu_has_fast_bf16 is precision.cpu_has_fast_bf16      # re-exported where chapter 9 imports it
    state = torch.get_rng_state()
    ratio = precision.bf16_speedup()
    assert isinstance(ratio, float) and 0 < ratio < 100 and ratio == ratio
    assert torch.equal(torch.get_rng_state(), state)         # a notebook's random numbers do not move
    # (native bf16, measured speed-up, bf16 autocast?): without native bf16 the speed is not even measured
    cases = [(True, 0.55, False), (True, precision.FAST_BF16_SPEEDUP, True), (True, 4.0, True), (False, 4.0, False)]
    try:
        for native, speedup, expected in cases:
            calls = []
            monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda native=native: native)
            monkeypatch.setattr(precision, "bf16_speedup", lambda speedup=speedup: calls.append(1) or speedup)
            precision.cpu_has_fast_bf16.cache_clear()
            assert precision.cpu_has_fast_bf16() is expected, (native, speedup)
            assert precision.cpu_has_fast_bf16() is expected and len(calls) == int(native)   # measured once
            assert TrainConfig(amp="auto").use_amp(torch.device("cpu")) is expected
    finally:
        monkeypatch.undo()
        precision.cpu_has_fast_bf16.cache_clear()


def test_a_quick_second_ctrl_c_still_stops_cleanly(tokenizer, dataset):
    # torchrun passes the terminal's Ctrl-C on to its workers, which got it already: two in a row
    trainer = Trainer(small_model(tokenizer), loader(dataset), pretraining_step(),
                      TrainConfig(steps=1000, eval_every=None, amp=False))
    original = trainer.optimizer.step

    def step_then_two_interrupts(*args, **kwargs):
        out = original(*args, **kwargs)
        if trainer.step + 1 == 3:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return out

    trainer.optimizer.step = step_then_two_interrupts
    h = trainer.fit(progress=False, plot=False)
    assert h.interrupted and trainer.step == 3


def test_saved_for_backward_counts_what_autograd_keeps_and_changes_nothing():
    # Linear(4, 8) keeps its input x for the weight's gradient, ReLU its output, which is also
    # the input Linear(8, 1) keeps: one (3, 4) and one (3, 8) float32 tensor, (12 + 24) * 4 bytes
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1), torch.nn.Dropout(0.5))
    model.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def step(m, x):
        m.calls += 1                    # a buffer the forward changes: must be put back
        return {"loss": m(x).sum()}

    x = torch.randn(3, 4)
    model.eval()
    rng = torch.get_rng_state()
    kept = saved_for_backward(model, lambda m, x: {"loss": m[:3](x).sum()}, x)
    assert kept == (12 + 24) * 4
    # with dropout in train mode, its mask is kept too (the forward runs as in training)
    assert saved_for_backward(model, step, x) > kept
    assert not model.training and int(model.calls) == 0 and torch.equal(torch.get_rng_state(), rng)
    with pytest.raises(TypeError, match=r"model must be a Module \(torch.nn.Module, e.g. a BERTClassifier\), got str"):
        saved_for_backward("model", step, x)
    with pytest.raises(TypeError, match="step_fn must be a function"):
        saved_for_backward(model, None, x)


def test_evaluation_batches_is_eval_mode_without_gradients_and_restores_the_mode(tokenizer, dataset):
    """The one evaluation loop: at most max_batches batches, on the model's device, dropout off and
    no gradients while it runs, and the model's mode as it was afterwards (also after an error)."""
    model = small_model(tokenizer).train()
    seen = []
    for batch in evaluation_batches(model, loader(dataset, 4, shuffle=False), max_batches=2):
        seen.append((model.training, torch.is_grad_enabled(), batch["tokens"].device.type))
    assert seen == [(False, False, "cpu")] * 2 and model.training
    with pytest.raises(RuntimeError, match="boom"):
        for _ in evaluation_batches(model, loader(dataset, 4, shuffle=False)):
            raise RuntimeError("boom")
    assert model.training and torch.is_grad_enabled()
    with pytest.raises(ValueError, match="max_batches must be > 0"):
        list(evaluation_batches(model, loader(dataset), max_batches=0))

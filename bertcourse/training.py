"""One training loop for every chapter: chapter 3's date Transformer, chapter 7's pretraining
and chapter 9's fine-tuning all train through :class:`Trainer`.

A task brings a *step function* and, optionally, an *evaluation function*::

    def step_fn(model, batch) -> dict:        # forward + loss of one batch
        return {"loss": loss, "acc": acc}     # "loss" is backpropagated; the rest is logged

    def eval_fn(model, loader) -> dict:       # runs in eval() mode, under torch.no_grad()
        return {"acc": 0.91}

    history = Trainer(model, train_loader, step_fn, TrainConfig(steps=500),
                      eval_loader=val_loader, eval_fn=eval_fn).fit()

The loop does the rest, the same way for every task: AdamW (:func:`make_optimizer`), linear
warm-up then linear decay (:func:`lr_factor`), gradient clipping, a step count or a time
budget, a tqdm progress bar, a live loss plot in a notebook (text lines elsewhere), periodic
evaluation, Ctrl-C that stops cleanly after the current step, and a state that resumes exactly
(:meth:`Trainer.state_dict`). Training never changes the global random state of the caller:
it runs on a fork of torch's generator seeded with ``cfg.seed``. ``cfg.device`` picks the CPU
or a GPU; under ``torchrun`` the loop trains data-parallel by itself (chapter 14,
:mod:`bertcourse.distributed`): rank 0 alone shows progress and evaluates.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import signal
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
from IPython import get_ipython
from IPython.display import display
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from ._checks import check_betas, check_bool, check_finite_number, check_instance, check_optimizer, check_positive_int
from .attention import inspect_attention
from .distributed import agree, data_parallel, device_of, move_to, resolve_device, step_seed, world
from .i18n import gettext as _, gettext_noop as N_
from .precision import FAST_BF16_SPEEDUP, autocast, bf16_speedup, cpu_has_fast_bf16   # re-exported (chapter 9)
from .utils import evaluation_mode

__all__ = ["TrainConfig", "History", "Trainer", "make_optimizer", "lr_factor", "optimizer_step",
           "plot_history", "cpu_has_fast_bf16", "bf16_speedup", "FAST_BF16_SPEEDUP", "autocast",
           "evaluation_batches", "evaluation_mode"]


# ---------------------------------------------------------------------------------------
# Configuration, optimizer and schedule
# ---------------------------------------------------------------------------------------

@dataclass
class TrainConfig:
    """How to train. Give ``steps``, ``seconds`` or both (training stops at whichever comes
    first). The time budget covers the training steps and the periodic evaluations; the final
    evaluation comes after it.

    * ``lr``: the base learning rate of AdamW, multiplied at every step by :func:`lr_factor`:
      a warm-up ramp (linear from 0 to 1 over ``warmup_steps`` steps) *times* a linear decay
      from 1 at the start to ``final_lr_ratio`` at the end of the budget. The decay already
      runs during the warm-up, so the largest rate, reached at the end of the warm-up, is a
      little below ``lr`` (with 10 % warm-up and ``final_lr_ratio=0``: about ``0.9 * lr``).
    * ``weight_decay``: AdamW's decoupled weight decay, not applied to biases and layer norms
      (as in BERT); ``betas``, ``eps``: AdamW's other settings. ``clip``: maximal gradient norm
      (``None``: no clipping).
    * ``eval_every``: evaluate every that many steps (and at the end); ``eval_batches``
      limits how many evaluation batches are used (``None``: all).
    * ``amp``: bf16 autocast around the step and evaluation functions (``"auto"``: when the
      CPU has fast bfloat16, or the GPU supports bfloat16). ``seed``: seeds the forked random
      generator (dropout, shuffling).
    * ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"`` (a GPU when there is one);
      the model is moved there and every batch too (:func:`bertcourse.distributed.move_to`).
    """
    steps: int | None = 1000
    seconds: float | None = None
    lr: float = 5e-3
    warmup_steps: int = 50
    final_lr_ratio: float = 0.0
    weight_decay: float = 0.01
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-6
    clip: float | None = 1.0
    eval_every: int | None = 200
    eval_batches: int | None = None
    amp: bool | str = "auto"
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self):
        if self.steps is None and self.seconds is None:
            raise ValueError("give steps or seconds (or both): training needs a budget")
        check_positive_int("steps", self.steps, allow_none=True)
        check_finite_number("seconds", self.seconds, low=0, low_open=True, allow_none=True)
        check_finite_number("lr", self.lr, low=0, low_open=True)
        check_finite_number("final_lr_ratio", self.final_lr_ratio, low=0, high=1)
        check_finite_number("weight_decay", self.weight_decay, low=0)
        check_finite_number("eps", self.eps, low=0, low_open=True)
        self.betas = check_betas("betas", self.betas)
        check_finite_number("clip", self.clip, low=0, low_open=True, allow_none=True)
        check_positive_int("warmup_steps", self.warmup_steps, allow_zero=True)
        check_positive_int("eval_every", self.eval_every, allow_none=True)
        check_positive_int("eval_batches", self.eval_batches, allow_none=True)
        if not (isinstance(self.amp, bool) or (isinstance(self.amp, str) and self.amp == "auto")):   # 0 == False
            raise ValueError(f"amp must be True, False or 'auto', got {self.amp!r}")
        check_positive_int("seed", self.seed, allow_zero=True)
        check_instance("device", self.device, str, "'cpu', 'cuda', 'cuda:N' or 'auto'")

    def use_amp(self, device: torch.device | None = None) -> bool:
        """Whether bf16 autocast is on (``"auto"``: when the CPU has fast bfloat16, or the GPU
        computes in bfloat16; older GPUs stay in float32)."""
        if self.amp != "auto":
            return bool(self.amp)
        if device is not None and device.type == "cuda":
            return torch.cuda.is_bf16_supported()
        return cpu_has_fast_bf16()

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def evaluation_batches(model: nn.Module, loader: Iterable, max_batches: int | None = None,
                       amp: bool | None = None):
    """The one evaluation loop: yields ``loader``'s batches (at most ``max_batches``) moved to
    the model's device, while the model is in ``eval()`` mode (restored afterwards), without
    gradients and under :func:`autocast` (``amp``). A task computes its own metric on them::

        for batch in evaluation_batches(model, loader):
            correct += (model(batch["x"]).argmax(-1) == batch["y"]).sum()
    """
    if max_batches is not None:
        check_positive_int("max_batches", max_batches)
    device = device_of(model)
    with evaluation_mode(model), torch.no_grad(), autocast(amp, device.type):
        for batch in itertools.islice(loader, max_batches):
            yield move_to(batch, device)


def make_optimizer(model: nn.Module, lr: float = 1e-3, weight_decay: float = 0.01,
                   betas: tuple = (0.9, 0.999), eps: float = 1e-6) -> torch.optim.AdamW:
    """AdamW with weight decay on the weight matrices (and embeddings) only; biases and
    layer-norm parameters are not decayed (as in BERT). Frozen parameters are left out."""
    check_instance("model", model, nn.Module, "e.g. a bertcourse BERTModel")
    check_finite_number("lr", lr, low=0, low_open=True)
    check_finite_number("weight_decay", weight_decay, low=0)
    betas = check_betas("betas", betas)
    check_finite_number("eps", eps, low=0, low_open=True)
    decay, no_decay = [], []
    for p in model.parameters():     # a tied weight appears once
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    if not decay and not no_decay:
        raise ValueError("model has no trainable parameters (all have requires_grad=False)")
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    try:
        # fused: one kernel updates every parameter, instead of PyTorch's default chain of
        # "foreach" operations, each of which makes a temporary copy of all the parameters. On
        # a CPU it is several times faster, and fine-tuning MiniLM (chapter 9) peaks ~100 MB lower.
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=True)
    except (RuntimeError, TypeError, ValueError):    # a device, or an older PyTorch, without it
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)


def lr_factor(step: int, progress: float, warmup_steps: int, final_ratio: float = 0.0) -> float:
    """Learning-rate multiplier: the *product* of a linear warm-up ramp,
    ``min(1, (step + 1) / warmup_steps)``, and a linear decay from 1 to ``final_ratio`` as
    ``progress`` goes from 0 to 1.

    ``progress`` is the fraction of the budget used (``step / steps`` or ``elapsed /
    seconds``). The decay starts at step 0, not after the warm-up, so the factor peaks at
    ``step = warmup_steps - 1`` at ``1 - (1 - final_ratio) * progress`` there, below 1: with
    150 steps, 15 of warm-up and ``final_ratio=0`` (chapter 9), ``1 - 14/150 ≈ 0.91``.
    Hugging Face's ``get_linear_schedule_with_warmup`` starts its decay after the warm-up and
    peaks at 1. Warm-up protects Adam's first steps, whose moment estimates are still noisy;
    the decay lets the model settle at the end.
    """
    check_positive_int("step", step, allow_zero=True)
    check_finite_number("progress", progress)
    check_positive_int("warmup_steps", warmup_steps, allow_zero=True)
    check_finite_number("final_ratio", final_ratio, low=0, high=1)
    warm = 1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps)
    progress = min(max(progress, 0.0), 1.0)
    return warm * (1.0 - (1.0 - final_ratio) * progress)


def optimizer_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, clip: float | None = 1.0) -> float:
    """Backward pass, gradient clipping and one optimizer step; returns the gradient norm
    (before clipping). The gradients are cleared first, so nothing accumulates by accident."""
    check_optimizer("optimizer", optimizer)
    check_finite_number("clip", clip, low=0, low_open=True, allow_none=True)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    if not params:
        raise ValueError("the loss does not depend on any parameter of the optimizer "
                         "(no parameter received a gradient)")
    if clip is not None:
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, clip))
    else:
        grad_norm = float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])))
    optimizer.step()
    return grad_norm


# ---------------------------------------------------------------------------------------
# History and its plot
# ---------------------------------------------------------------------------------------

@dataclass
class History:
    """What happened during training: per step the ``step`` number, the seconds since the
    start (``time``), the learning rate (``lr``) and every metric the step function returned
    (``metrics[name]``, also ``history[name]``); one dict per evaluation in ``evals``
    (``step`` plus the keys of the evaluation function). ``stopped_by`` is ``"steps"``,
    ``"seconds"`` or ``"interrupt"``."""
    step: list = field(default_factory=list)
    time: list = field(default_factory=list)
    lr: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    evals: list = field(default_factory=list)
    stopped_by: str | None = None

    def __getitem__(self, name: str) -> list:
        if name not in self.metrics:
            raise KeyError(f"no metric {name!r} in this history; it has {sorted(self.metrics)}")
        return self.metrics[name]

    def log(self, step: int, seconds: float, lr: float, metrics: dict) -> None:
        self.step.append(step)
        self.time.append(seconds)
        self.lr.append(lr)
        for name, value in metrics.items():
            self.metrics.setdefault(name, []).append(value)

    @property
    def interrupted(self) -> bool:
        return self.stopped_by == "interrupt"

    @property
    def final_eval(self) -> dict | None:
        return self.evals[-1] if self.evals else None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "History":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def frame(self):
        """The per-step records as a pandas DataFrame."""
        import pandas as pd          # lazy: a heavy import (CONTRIBUTING.md, "Imports")
        return pd.DataFrame({"step": self.step, "time": self.time, "lr": self.lr, **self.metrics})


def _smooth(values: list, window: int) -> list:
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def plot_history(history: History, smooth: int = 20):
    """Training losses (left: every metric whose name ends in ``loss``, smoothed over
    ``smooth`` steps) and the evaluations' accuracies (right: keys ending in ``acc``), as a
    matplotlib Figure."""
    from matplotlib.figure import Figure     # lazy: a heavy import (CONTRIBUTING.md, "Imports")
    if not isinstance(history, History):
        raise TypeError(f"history must be a History, got {type(history).__name__}")
    check_positive_int("smooth", smooth)
    fig = Figure(figsize=(10, 3.6))
    ax1, ax2 = fig.subplots(1, 2)
    for name, values in history.metrics.items():
        if name.endswith("loss"):
            ax1.plot(history.step, _smooth(values, smooth), label=name)
    ax1.set(xlabel=_("step"), ylabel=_("training loss (mean of {n} steps)").format(n=smooth), title=_("Training loss"))
    if ax1.lines:
        ax1.legend(loc="upper right")
    ax1.grid(alpha=0.3)
    if history.evals:
        steps = [e["step"] for e in history.evals]
        for key in history.evals[-1]:
            if key.endswith("acc"):
                ax2.plot(steps, [e.get(key) for e in history.evals], "o-", label=key)
        if ax2.lines:
            ax2.legend(loc="lower right")
    ax2.set(xlabel=_("step"), ylabel=_("accuracy"), title=_("Evaluation"), ylim=(0, 1))
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _in_notebook() -> bool:
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _LivePlot:
    """In a notebook: one figure that is redrawn in place (at most every ``every_s``
    seconds, and at the end). Elsewhere: a text line per evaluation."""

    def __init__(self, enabled: bool, every_s: float = 3.0):
        self.enabled = enabled
        self.notebook = enabled and _in_notebook()
        self.every_s, self.last = every_s, -math.inf
        self.handle = None

    def update(self, history: History, force: bool = False) -> None:
        if not self.notebook or (not force and time.perf_counter() - self.last < self.every_s):
            return
        fig = plot_history(history)
        if self.handle is None:
            self.handle = display(fig, display_id=True)
        else:
            self.handle.update(fig)
        self.last = time.perf_counter()

    def text(self, line: str, bar=None) -> None:
        if self.enabled and not self.notebook:
            (bar.write if bar is not None else print)(line)


def _format_eval(step: int, ev: dict) -> str:
    parts = [f"{k} {v:.3f}" for k, v in ev.items() if isinstance(v, float)]
    return _("step {n}: {metrics}").format(n=step, metrics=", ".join(parts))


# ---------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------

class _StopFlag:
    """Ctrl-C (SIGINT) during training sets a flag; the loop stops after the current step,
    so that parameters and optimizer state are never left half-updated. A second Ctrl-C
    (more than a second later) interrupts at once. Under torchrun, SIGTERM counts too, and
    the quick second SIGINT is expected: torchrun passes the terminal's Ctrl-C on to its
    workers, which got it from the terminal already."""

    def __init__(self, signals=(signal.SIGINT,)):
        self.stop, self.first = False, None
        self.signals, self.previous = signals, {}

    def __enter__(self):
        for sig in self.signals:
            try:
                self.previous[sig] = signal.signal(sig, self._handler)
            except ValueError:   # not the main thread: Ctrl-C raises KeyboardInterrupt as usual
                pass
        return self

    def _handler(self, signum, frame):
        now = time.monotonic()
        if self.first is not None and now - self.first > 1.0:
            raise KeyboardInterrupt
        self.stop, self.first = True, self.first or now

    def __exit__(self, *exc):
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)
        return False


def _loader_parts(loader):
    """``(batch_sampler, dataset, collate_fn)`` of a map-style DataLoader without workers,
    which lets the trainer skip batches cheaply when it resumes; ``None`` otherwise."""
    if (isinstance(loader, DataLoader) and loader.num_workers == 0 and loader.batch_sampler is not None
            and hasattr(loader.dataset, "__getitem__")):
        return loader.batch_sampler, loader.dataset, loader.collate_fn
    return None


def _fetch(dataset, indices) -> list:
    """The examples ``indices`` of a map-style dataset, as a DataLoader reads them: through the
    dataset's ``__getitems__`` when it has one (one read for the whole batch), else one by one."""
    getitems = getattr(dataset, "__getitems__", None)
    return getitems(indices) if getitems else [dataset[i] for i in indices]


def _as_float(name: str, value) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"step_fn's {name!r} must be a number or a one-element tensor, got shape "
                             f"{tuple(value.shape)}")
        value = value.detach().item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"step_fn's {name!r} must be a number or a one-element tensor, got "
                        f"{type(value).__name__}")
    return float(value)


class Trainer:
    """Train ``model`` on ``train_loader`` with ``step_fn(model, batch) -> {"loss": ...}``.

    ``fit()`` trains until the budget of ``cfg`` (a total over all ``fit`` calls, so a
    resumed run continues towards the same end) and returns the :class:`History`.
    ``eval_fn(model, eval_loader) -> dict`` runs every ``cfg.eval_every`` steps and at the
    end, with the model in ``eval()`` mode and no gradients. ``state_dict()`` /
    ``load_state_dict()`` hold the optimizer, the step, the elapsed time, the history, the
    random generator and the position in the data, so that a resumed run is the same run.

    ``cfg.device``: the model is moved there (``self.device``), and every batch when it is
    used. Under torchrun (:mod:`bertcourse.distributed`; the process group already joined)
    the trainer trains data-parallel: the step goes through ``DistributedDataParallel``, the
    ranks agree on when to stop (budget, Ctrl-C), each step's dropout masks come from
    :func:`~bertcourse.distributed.step_seed`, and rank 0 alone shows progress and evaluates.
    Every rank must be given its own shard of the data (e.g. ``bucketed_loader(...,
    world_size, rank)``).
    """

    def __init__(self, model: nn.Module, train_loader: Iterable, step_fn: Callable,
                 cfg: TrainConfig | None = None, *, eval_loader: Iterable | None = None,
                 eval_fn: Callable | None = None, optimizer: torch.optim.Optimizer | None = None,
                 desc: str = N_("training")):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(step_fn):
            raise TypeError(f"step_fn must be a function (model, batch) -> dict, got {type(step_fn).__name__}")
        if not hasattr(train_loader, "__iter__"):
            raise TypeError(f"train_loader must be an iterable of batches, got {type(train_loader).__name__}")
        if (eval_loader is None) != (eval_fn is None):
            raise ValueError("give eval_loader and eval_fn together (or neither)")
        if eval_fn is not None and not callable(eval_fn):
            raise TypeError(f"eval_fn must be a function (model, loader) -> dict, got {type(eval_fn).__name__}")
        cfg = TrainConfig() if cfg is None else cfg
        if not isinstance(cfg, TrainConfig):
            raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self.model, self.train_loader, self.step_fn, self.cfg = model, train_loader, step_fn, cfg
        self.eval_loader, self.eval_fn, self.desc = eval_loader, eval_fn, desc
        self.device = resolve_device(cfg.device)
        model.to(self.device)
        # under torchrun every rank measures its CPU: bf16 for all if any rank chose it (the same answer everywhere)
        self.amp = bool(agree(int(cfg.use_amp(self.device)), self.device))
        self.rank, self.world_size = world()
        self.is_main = self.rank == 0
        # data-parallel: the step through DistributedDataParallel (None when training alone)
        self.ddp = data_parallel(model, step_fn, self.device) if self.world_size > 1 else None
        self.optimizer = optimizer or make_optimizer(model, cfg.lr, cfg.weight_decay, cfg.betas, cfg.eps)
        for group in self.optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.history = History()
        self.step = 0                 # optimizer steps done
        self.elapsed = 0.0            # seconds spent in fit() so far
        self.epoch = 0
        self.batch_in_epoch = 0       # batches of the current epoch already used
        self._epoch_rng = None        # (torch RNG, sampler RNG) at the start of the epoch
        self._rng_state = None        # the forked torch RNG, carried from one fit() to the next
        self._cuda_rng_state = None   # the same for this GPU's generator

    # -- budget --------------------------------------------------------------------------
    def progress(self) -> float:
        """Fraction of the budget used (the larger of steps and seconds)."""
        parts = []
        if self.cfg.steps is not None:
            parts.append(self.step / self.cfg.steps)
        if self.cfg.seconds is not None:
            parts.append(self.elapsed / self.cfg.seconds)
        return max(parts)

    def _done(self) -> str | None:
        if self.cfg.steps is not None and self.step >= self.cfg.steps:
            return "steps"
        if self.cfg.seconds is not None and self.elapsed >= self.cfg.seconds:
            return "seconds"
        return None

    # -- data ----------------------------------------------------------------------------
    def _sampler_generator(self):
        parts = _loader_parts(self.train_loader)
        if parts is None:
            return None
        batch_sampler = parts[0]
        if getattr(batch_sampler, "generator", None) is not None:      # LengthBucketSampler
            return batch_sampler.generator
        return getattr(getattr(batch_sampler, "sampler", None), "generator", None)

    def _batches(self):
        """Endless batches: epoch after epoch, starting at ``(epoch, batch_in_epoch)``.

        The order of an epoch is drawn from the random generators as they were when the
        epoch started; a resumed run sets them back to that state, draws the same order,
        skips the batches already used and then restores the generators."""
        parts = _loader_parts(self.train_loader)
        while True:
            gen = self._sampler_generator()
            resuming = self._epoch_rng is not None
            if resuming:
                current = torch.get_rng_state()
                torch.set_rng_state(self._epoch_rng[0])
                if gen is not None and self._epoch_rng[1] is not None:
                    gen.set_state(self._epoch_rng[1])
            else:                                 # a fresh epoch: remember how it starts
                self._epoch_rng = (torch.get_rng_state(), None if gen is None else gen.get_state())
            if hasattr(getattr(self.train_loader, "dataset", None), "set_epoch"):
                self.train_loader.dataset.set_epoch(self.epoch)
            if parts is not None:
                batch_sampler, dataset, collate = parts
                index_batches = list(batch_sampler)          # draws the epoch's order now
                source = (collate(_fetch(dataset, idx)) for idx in index_batches[self.batch_in_epoch:])
            else:                                 # any iterable of batches: skip by reading
                source = iter(self.train_loader)
                for _ in range(self.batch_in_epoch):
                    next(source, None)
            if resuming:
                torch.set_rng_state(current)
            any_batch = False
            for batch in source:
                any_batch = True
                self.batch_in_epoch += 1
                yield batch
            if not any_batch and self.batch_in_epoch == 0:
                raise ValueError("train_loader gave no batches (is it empty?)")
            self.epoch += 1
            self.batch_in_epoch = 0
            self._epoch_rng = None

    # -- the loop ------------------------------------------------------------------------
    def evaluate(self) -> dict | None:
        """Run ``eval_fn`` on the evaluation loader now (eval mode, no gradients; the
        model's mode is restored) and record the result in the history."""
        if self.eval_fn is None:
            return None
        batches = (move_to(b, self.device) for b in itertools.islice(self.eval_loader, self.cfg.eval_batches))
        with evaluation_mode(self.model), torch.no_grad(), autocast(self.amp, self.device.type):
            ev = self.eval_fn(self.model, batches)
        if not isinstance(ev, dict):
            raise TypeError(f"eval_fn must return a dict of metrics, got {type(ev).__name__}")
        self.history.evals.append({"step": self.step, **ev})
        return ev

    def train_step(self, batch) -> dict:
        """One step: ``step_fn`` (under autocast when ``amp``), backward, clip, optimizer
        step. Returns the logged metrics as floats (with ``grad_norm``)."""
        batch = move_to(batch, self.device)
        with autocast(self.amp, self.device.type):
            # DistributedDataParallel averages the gradients of what goes through its forward
            out = self.ddp(batch) if self.ddp is not None else self.step_fn(self.model, batch)
        if not isinstance(out, dict) or "loss" not in out:
            raise TypeError("step_fn must return a dict with the key 'loss' (a 0-d tensor to "
                            f"backpropagate), got {type(out).__name__}"
                            + (f" with keys {sorted(out)}" if isinstance(out, dict) else ""))
        loss = out["loss"]
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            raise TypeError("step_fn's 'loss' must be a one-element tensor that depends on the "
                            "model's parameters (requires_grad=True)")
        if not torch.isfinite(loss.detach()).all():
            raise FloatingPointError(f"the loss is {loss.item()} at step {self.step + 1}: training "
                                     "diverged (try a smaller learning rate)")
        grad_norm = optimizer_step(self.optimizer, loss, self.cfg.clip)
        metrics = {name: _as_float(name, value) for name, value in out.items()}
        metrics["grad_norm"] = grad_norm
        return metrics

    def fit(self, progress: bool = True, plot: bool = True) -> History:
        """Train until the budget is used up or Ctrl-C; return the history.

        ``progress``: a tqdm progress bar (a widget in notebooks). ``plot``: a live loss
        plot in a notebook, text lines with the evaluations elsewhere. Attention layers use
        the fused kernel while training (no weights kept); the model's mode and attention
        settings are restored afterwards. The caller's global random state is untouched:
        training runs on a fork of torch's generator, seeded with ``cfg.seed`` on the first
        call and carried over from one ``fit`` to the next (and through ``state_dict``).
        Under torchrun, only rank 0 shows the progress bar and the plot.
        """
        for name, flag in (("progress", progress), ("plot", plot)):
            check_bool(name, flag)
        gpu = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=gpu):
            if self._rng_state is None:
                torch.manual_seed(self.cfg.seed)
            else:
                torch.set_rng_state(self._rng_state)
                if gpu and self._cuda_rng_state is not None:
                    torch.cuda.set_rng_state(self._cuda_rng_state, self.device)
            with inspect_attention(self.model, keep_weights=False, eval_mode=False):
                self.model.train()
                try:
                    return self._fit(progress and self.is_main, plot and self.is_main)
                finally:
                    self._rng_state = torch.get_rng_state()
                    if gpu:
                        self._cuda_rng_state = torch.cuda.get_rng_state(self.device)

    def _fit(self, progress: bool, plot: bool) -> History:
        cfg, h = self.cfg, self.history
        live = _LivePlot(plot)
        total = cfg.steps if cfg.steps is not None else None
        bar = tqdm(total=total, initial=self.step if total else 0, disable=not progress,
                   unit=_("step"), desc=_(self.desc), dynamic_ncols=True, leave=True)
        batches = self._batches()
        h.stopped_by = None
        start = time.perf_counter() - self.elapsed
        reasons = [None, "steps", "seconds", "interrupt"]
        signals = (signal.SIGINT, signal.SIGTERM) if self.world_size > 1 else (signal.SIGINT,)
        with _StopFlag(signals) as flag:
            try:
                while True:
                    reason = self._done() or ("interrupt" if flag.stop else None)
                    # all ranks stop after the same step: one leaving alone would hang the others
                    reason = reasons[agree(reasons.index(reason), self.device)]
                    if reason is not None:
                        h.stopped_by = reason
                        break
                    factor = lr_factor(self.step, self.progress(), cfg.warmup_steps, cfg.final_lr_ratio)
                    for group in self.optimizer.param_groups:
                        group["lr"] = group["initial_lr"] * factor
                    batch = next(batches)
                    if self.world_size > 1:     # each rank its own dropout masks, repeatable on resume
                        torch.manual_seed(step_seed(cfg.seed, self.step, self.rank))
                    metrics = self.train_step(batch)
                    self.step += 1
                    self.elapsed = time.perf_counter() - start
                    h.log(self.step, self.elapsed, self.optimizer.param_groups[0]["lr"], metrics)
                    bar.update(1)
                    bar.set_postfix({k: f"{v:.3f}" for k, v in metrics.items() if k.endswith("loss")},
                                    refresh=False)
                    if cfg.eval_every and self.step % cfg.eval_every == 0 and self._done() is None and self.is_main:
                        if self.evaluate() is not None:
                            live.text(_format_eval(self.step, h.evals[-1]), bar if progress else None)
                        self.elapsed = time.perf_counter() - start
                    live.update(h)
            finally:
                self.elapsed = time.perf_counter() - start
                bar.close()
        if self.eval_fn is not None and self.is_main and (not h.evals or h.evals[-1]["step"] != self.step):
            self.evaluate()
            live.text(_format_eval(self.step, h.evals[-1]))
        live.update(h, force=True)
        return h

    # -- state for resuming --------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything but the model's weights: ``{"tensors": {...}, "info": {...}}``
        (tensors for safetensors, the rest JSON-friendly)."""
        opt = self.optimizer.state_dict()
        tensors, state_keys = {}, {}
        for idx, st in opt["state"].items():
            state_keys[str(idx)] = {}
            for k, v in st.items():
                if isinstance(v, torch.Tensor):
                    tensors[f"optimizer.{idx}.{k}"] = v.contiguous()
                    state_keys[str(idx)][k] = "tensor"
                else:
                    state_keys[str(idx)][k] = v
        if self._rng_state is not None:
            tensors["rng.torch"] = self._rng_state
        if self._cuda_rng_state is not None:
            tensors["rng.cuda"] = self._cuda_rng_state
        if self._epoch_rng is not None:
            tensors["rng.epoch_torch"] = self._epoch_rng[0]
            if self._epoch_rng[1] is not None:
                tensors["rng.epoch_sampler"] = self._epoch_rng[1]
        info = {"step": self.step, "elapsed": self.elapsed, "epoch": self.epoch,
                "batch_in_epoch": self.batch_in_epoch,
                "optimizer_param_groups": opt["param_groups"], "optimizer_state": state_keys,
                "history": self.history.to_dict(), "train_config": self.cfg.to_dict()}
        return {"tensors": tensors, "info": info}

    def load_state_dict(self, state: dict) -> None:
        """Continue the run saved by :meth:`state_dict` (call before :meth:`fit`)."""
        if not isinstance(state, dict) or not {"tensors", "info"} <= set(state):
            raise TypeError("state must be the dict of Trainer.state_dict() ({'tensors': ..., 'info': ...})")
        tensors, info = state["tensors"], state["info"]
        try:
            opt_state = {}
            for idx, keys in info["optimizer_state"].items():
                opt_state[int(idx)] = {k: (tensors[f"optimizer.{idx}.{k}"] if v == "tensor" else v)
                                       for k, v in keys.items()}
            self.optimizer.load_state_dict({"state": opt_state, "param_groups": info["optimizer_param_groups"]})
            self.step, self.elapsed = int(info["step"]), float(info["elapsed"])
            self.epoch, self.batch_in_epoch = int(info["epoch"]), int(info["batch_in_epoch"])
            self.history = History.from_dict(info["history"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"state does not fit this trainer (model or optimizer differ, or the "
                             f"file is damaged): {type(e).__name__}: {e}") from None
        self._rng_state = tensors.get("rng.torch")
        self._cuda_rng_state = tensors.get("rng.cuda")
        if "rng.epoch_torch" in tensors:
            self._epoch_rng = (tensors["rng.epoch_torch"], tensors.get("rng.epoch_sampler"))
        else:
            self._epoch_rng = None

"""Chapter 14: devices, and data parallelism over several processes (``torchrun`` + DDP).

Data parallelism: N processes ("ranks") each hold a full copy of the model. Every optimizer
step, each rank computes the loss and the gradients on *its own* batch (its shard of the
data), the gradients are averaged over the ranks (an *all-reduce*), and every rank takes
the same optimizer step with the same averaged gradient, so the copies stay identical. One
step then learns from N batches: the *global batch* is N times the per-process batch::

    torchrun --nproc-per-node=2 -m bertcourse.pretrain --config tiny --seconds 60 --out runs/ddp

``torchrun`` starts the N copies of the program and tells each who it is through
environment variables: ``RANK`` (0..N-1 over all machines), ``LOCAL_RANK`` (on this
machine), ``WORLD_SIZE`` (N), and ``MASTER_ADDR``/``MASTER_PORT`` (where they meet). This
module holds what the course's training loop needs for that:

* :func:`resolve_device` and :func:`move_to` — which device this process uses (``"auto"``:
  a GPU when there is one), and batches moved there;
* :func:`init_distributed`, :func:`world`, :func:`shutdown_distributed` — joining the group
  (:func:`backend_for`: the *gloo* backend on CPUs, *NCCL* on GPUs), who am I, leaving;
* :class:`StepModule` and :func:`data_parallel` — the task's step function as a module,
  wrapped in ``DistributedDataParallel``, which averages the gradients during the backward
  pass (bucket by bucket, while the backward pass is still running);
* :func:`agree` — one decision for all ranks (stop now?), so that no rank waits forever for
  a partner that has already left the loop;
* :func:`global_mean_loss` — a loss averaged over the items of *all* ranks (e.g. the MLM
  predictions, whose number differs from rank to rank), scaled for DDP's averaging;
* :func:`data_parallel_plan` and :func:`allreduce_seconds` — the arithmetic: global batch,
  steps per epoch, and what the all-reduce costs on a given link;
* :func:`launch` and :func:`platform_notes` — starting ``torchrun`` from Python (chapter 14's
  notebook) without leaving files in the temporary directory, and what to try when the
  processes cannot start or find each other on Windows or macOS.

The :class:`~bertcourse.training.Trainer` uses them by itself when it runs under torchrun.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import subprocess
import tempfile

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ._checks import (check_bool, check_finite_number, check_instance, check_int, check_path, check_positive_int,
                      check_str_list, check_tensor)

__all__ = ["resolve_device", "device_of", "move_to", "launched_by_torchrun", "backend_for", "init_distributed",
           "world", "is_main_process", "shutdown_distributed", "StepModule", "data_parallel", "agree", "step_seed",
           "global_mean_loss", "data_parallel_plan", "allreduce_seconds", "platform_notes", "launch"]


# ---------------------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------------------

def resolve_device(device="auto") -> torch.device:
    """The ``torch.device`` to train on.

    ``"auto"``: ``"cuda"`` when ``torch.cuda.is_available()``, else ``"cpu"``. ``"cuda"``
    without an index is this process' GPU: ``cuda:LOCAL_RANK`` under torchrun (one GPU per
    process), ``cuda:0`` otherwise. Asking for a GPU that is not there is a ValueError that
    says so, not a crash later on.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise TypeError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N' (a str or torch.device), "
                        f"got {type(device).__name__}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        d = torch.device(device)
    except (RuntimeError, ValueError):
        d = None
    if d is None or d.type not in ("cpu", "cuda") or (d.type == "cpu" and d.index not in (None, 0)):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if d.type == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for a GPU, but torch.cuda.is_available() is False "
                         "(no GPU, or a CPU-only PyTorch): use 'cpu' or 'auto'")
    index = d.index if d.index is not None else int(os.environ.get("LOCAL_RANK", 0))
    if index >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: there is no GPU {index}, this machine has "
                         f"{torch.cuda.device_count()} (cuda:0..cuda:{torch.cuda.device_count() - 1})")
    return torch.device("cuda", index)


def device_of(module: nn.Module) -> torch.device:
    """Where ``module``'s parameters are (the CPU for a module without any): the device its
    inputs must be on."""
    check_instance("module", module, nn.Module)
    return next(module.parameters(), torch.empty(0)).device


def move_to(obj, device):
    """``obj`` with every tensor in it on ``device``: a tensor, or dicts, lists, tuples
    (named ones too) and dataclasses of them, nested; anything else is returned as it is.
    Tensors already there are not copied."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, dict):
        return type(obj)((k, move_to(v, device)) for k, v in obj.items())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: move_to(getattr(obj, f.name), device)
                                           for f in dataclasses.fields(obj) if f.init})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):              # a namedtuple
        return type(obj)(*(move_to(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move_to(v, device) for v in obj)
    return obj


# ---------------------------------------------------------------------------------------
# The process group
# ---------------------------------------------------------------------------------------

def launched_by_torchrun() -> bool:
    """Whether this process was started by ``torchrun`` (it sets ``RANK`` and ``WORLD_SIZE``)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def world() -> tuple[int, int]:
    """``(rank, world_size)`` of this process: ``(0, 1)`` when it trains alone."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def is_main_process() -> bool:
    """Rank 0 alone prints, evaluates and writes checkpoints (the others would only repeat it,
    or overwrite each other's files)."""
    return world()[0] == 0


def backend_for(device: torch.device) -> str:
    """The process group's backend for a process that computes on ``device``: ``"nccl"`` for
    a GPU (NVIDIA's library sends the gradients from GPU to GPU, over NVLink where there is
    one), ``"gloo"`` for the CPU."""
    check_instance("device", device, torch.device, "see resolve_device")
    return "nccl" if device.type == "cuda" else "gloo"


def init_distributed(device: torch.device, timeout_s: int = 600) -> tuple[int, int]:
    """Join the group that torchrun started, if it did: the NCCL backend for GPUs (fast
    GPU-to-GPU transfers), gloo for CPUs. Returns ``(rank, world_size)``; ``(0, 1)`` without
    torchrun (nothing to join). ``timeout_s``: how long a collective waits for a missing rank
    before failing."""
    if not isinstance(device, torch.device):
        raise TypeError(f"device must be a torch.device (see resolve_device), got {type(device).__name__}")
    check_positive_int("timeout_s", timeout_s)
    if not launched_by_torchrun() or int(os.environ["WORLD_SIZE"]) == 1:
        return world()
    if not torch.distributed.is_available():
        raise RuntimeError("this PyTorch was built without torch.distributed: train with one process")
    if not torch.distributed.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        backend = backend_for(device)
        try:
            torch.distributed.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        except (RuntimeError, ValueError) as e:     # the processes could not meet: say what to try
            raise RuntimeError(f"could not join the {backend} process group: {e}\n{platform_notes()}") from e
    return world()


def shutdown_distributed(barrier: bool = True) -> None:
    """Leave the group, after a last barrier (no rank leaves while another still needs it)
    unless ``barrier=False`` (after an error: the others may never get there); nothing to do
    when training alone."""
    check_bool("barrier", barrier)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        if barrier:
            torch.distributed.barrier()
        torch.distributed.destroy_process_group()


# ---------------------------------------------------------------------------------------
# What the training loop needs
# ---------------------------------------------------------------------------------------

class StepModule(nn.Module):
    """A step function ``step_fn(model, batch) -> {"loss": ...}`` as a module:
    ``StepModule(model, step_fn)(batch)`` calls it.

    Why: ``DistributedDataParallel`` averages the gradients only for computations that go
    through *its* ``forward``. The pretraining step calls the encoder and the heads one by
    one (``model.encoder(...)``, ``model.mlm.features(...)``), which would skip it; as the
    forward of one wrapped module, all of it is seen."""

    def __init__(self, model: nn.Module, step_fn):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(step_fn):
            raise TypeError(f"step_fn must be a function (model, batch) -> dict, got {type(step_fn).__name__}")
        self.model, self.step_fn = model, step_fn

    def forward(self, batch):
        return self.step_fn(self.model, batch)


def data_parallel(model: nn.Module, step_fn, device: torch.device) -> nn.Module:
    """``DistributedDataParallel(StepModule(model, step_fn))``: calling it with a batch runs
    the step, and its backward pass averages the gradients over all ranks. Creating it copies
    rank 0's weights to every rank, so all start from the same model."""
    module = StepModule(model, step_fn)
    return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None)


def agree(flag: int, device: torch.device) -> int:
    """The largest ``flag`` over all ranks (an all-reduce with MAX): every rank calls it at the
    same point and gets the same answer, e.g. "stop" if any rank was interrupted or is out of
    time. Training alone: ``flag`` itself."""
    check_int("flag", flag)
    if world()[1] == 1:
        return flag
    t = torch.tensor([flag], dtype=torch.int64, device=device)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return int(t.item())


def global_mean_loss(loss_sum: torch.Tensor, count) -> torch.Tensor:
    """This rank's share of a loss that is a mean over the items of *all* ranks.

    ``loss_sum`` (0-d, floating): the sum of this rank's per-item losses, e.g. the MLM losses
    of its real predictions; ``count``: how many items this rank has (an int or a 0-d tensor).
    Returns ``loss_sum * N / global_count`` with ``N`` ranks and ``global_count`` the sum of
    all ranks' counts (one all-reduce; training alone: ``loss_sum / count``).

    Why the factor ``N``: DDP *averages* the ranks' gradients, i.e. divides their sum by
    ``N``. The gradient wanted is that of ``(sum over all ranks of loss_sum) / global_count``;
    each rank's ``loss_sum / global_count`` would give N times too little after the average.
    A count of 0 everywhere gives 0 (the count is clamped at 1), not NaN. No gradient flows
    through the count."""
    check_tensor("loss_sum", loss_sum, ndim=0, expected="() (a 0-d tensor, the sum of this rank's losses)",
                 floating=True)
    if isinstance(count, torch.Tensor):
        check_tensor("count", count, ndim=0, expected="() (a 0-d tensor, or an int)")
        if not bool(torch.isfinite(count)) or float(count) < 0:
            raise ValueError(f"count must be >= 0 (the number of items on this rank), got {float(count)}")
    else:
        check_finite_number("count", count, low=0)
    total = torch.as_tensor(count, dtype=torch.float64, device=loss_sum.device).detach().clone()
    n = world()[1]
    if n > 1:
        torch.distributed.all_reduce(total, op=torch.distributed.ReduceOp.SUM)
    return loss_sum * n / total.clamp(min=1).to(loss_sum.dtype)


def step_seed(seed: int, step: int, rank: int) -> int:
    """The random seed of optimizer step ``step`` on rank ``rank``: every rank draws its own
    dropout masks, and a resumed run draws the same ones as an uninterrupted run (no random
    state to save per rank)."""
    for name, value in (("seed", seed), ("step", step), ("rank", rank)):
        check_positive_int(name, value, allow_zero=True)
    return ((seed * 1_000_003 + step) * 65_537 + rank) % 2 ** 63


def data_parallel_plan(num_examples: int, batch_size: int, world_size: int) -> dict:
    """What a data-parallel epoch looks like, for ``world_size`` processes of ``batch_size``
    examples per step over ``num_examples`` examples (as :func:`bertcourse.batching.shard_batches`
    deals them out):

    * ``global_batch``: examples per optimizer step, ``world_size * batch_size``;
    * ``batches``: batches in the epoch, ``ceil(num_examples / batch_size)`` (the last may be short);
    * ``steps_per_epoch``: optimizer steps, the same on every rank: ``batches // world_size``;
    * ``left_out_batches``: ``batches % world_size``, not used this epoch (other ones next epoch).
    """
    check_positive_int("num_examples", num_examples)
    check_positive_int("batch_size", batch_size)
    check_positive_int("world_size", world_size)
    batches = -(-num_examples // batch_size)
    return {"global_batch": world_size * batch_size, "batches": batches,
            "steps_per_epoch": batches // world_size, "left_out_batches": batches % world_size}


def allreduce_seconds(num_params: int, world_size: int, gbytes_per_s: float, bytes_per_value: int = 4,
                      latency_s: float = 0.0) -> float:
    """Seconds one all-reduce of ``num_params`` gradients takes with the *ring* algorithm that
    NCCL and gloo use for large tensors: each of the ``world_size`` processes sends (and
    receives) ``2 * (world_size - 1) / world_size`` times the gradients' bytes over a link of
    ``gbytes_per_s`` GB/s, in ``2 * (world_size - 1)`` steps one after the other, each of which
    also waits ``latency_s`` seconds for its message to start arriving::

        2 (N - 1) * latency_s  +  2 (N - 1) / N * bytes / bandwidth

    The bandwidth term hardly grows with ``world_size`` (the factor stays below 2): that is
    why the ring is used. The latency term grows in proportion to ``world_size``, so on
    thousands of GPUs it can dominate, above all for small messages; large jobs use
    trees (NCCL's double binary trees: about ``log2(N)`` steps) and hierarchies (first within
    each machine, then between machines) instead. Still a lower bound: the time to add the
    numbers, and congestion, are left out."""
    check_positive_int("num_params", num_params)
    check_positive_int("world_size", world_size)
    check_positive_int("bytes_per_value", bytes_per_value)
    check_finite_number("gbytes_per_s", gbytes_per_s, low=0, low_open=True)    # the link's bandwidth in GB/s
    check_finite_number("latency_s", latency_s, low=0)
    steps = 2 * (world_size - 1)
    return steps * latency_s + steps / world_size * num_params * bytes_per_value / (gbytes_per_s * 1e9)


# ---------------------------------------------------------------------------------------
# Starting the processes, on the learner's operating system
# ---------------------------------------------------------------------------------------

_NOTES = {
    "Windows": (
        "Windows (advice untested here: the course is tested on Linux): PyTorch's Windows builds "
        "have no libuv, which recent versions ask for when the processes meet (the error says "
        "'use_libuv was requested but PyTorch was built without libuv support'). Set USE_LIBUV=0 "
        "(PowerShell: $env:USE_LIBUV = \"0\"; cmd: set USE_LIBUV=0) and run again. If torchrun "
        "still fails, run the course in WSL 2 (Linux on Windows)."),
    "Darwin": (
        "macOS (advice untested here: the course is tested on Linux): gloo looks for its network "
        "interface through the machine's host name, which on some Macs does not resolve. Name "
        "the loopback interface: GLOO_SOCKET_IFNAME=lo0 (e.g. export GLOO_SOCKET_IFNAME=lo0 in "
        "the terminal, or os.environ['GLOO_SOCKET_IFNAME'] = 'lo0' before starting torchrun from "
        "Python), and run again."),
    "Linux": (
        "Linux (where the course is tested; this advice is not): the error above says what "
        "failed. If the processes cannot find each other on one machine, name the loopback "
        "interface (GLOO_SOCKET_IFNAME=lo); if a port is taken, use torchrun --standalone, which "
        "picks a free one."),
}


def platform_notes(system: str | None = None) -> str:
    """What to try when torchrun's processes cannot start or find each other, for the
    operating system ``system``: ``platform.system()``'s name (``"Windows"``, ``"Darwin"``,
    ``"Linux"``) or ``sys.platform``'s (``"win32"``, ``"darwin"``, ``"linux"``), any case;
    default: this machine's. The advice itself is not tested here (the course is tested on
    Linux, where torchrun works as it is), and each note says so."""
    if system is None:
        system = platform.system()
    if not isinstance(system, str):
        raise TypeError(f"system must be an operating system's name such as 'Windows', 'Darwin' or "
                        f"'Linux' (a str), got {type(system).__name__} ({system!r})")
    if not system.strip():
        raise ValueError("system must be an operating system's name such as 'Windows', 'Darwin' or "
                         "'Linux', got an empty string")
    key = system.strip().lower()
    if key.startswith(("win", "cygwin", "msys")):
        return _NOTES["Windows"]
    if key in ("darwin", "macos", "mac"):
        return _NOTES["Darwin"]
    if key.startswith("linux"):
        return _NOTES["Linux"]
    return (f"{system} (advice untested here: the course is tested on Linux): the error above says "
            f"what failed; torchrun's gloo backend needs the processes to reach each other over TCP "
            f"(try GLOO_SOCKET_IFNAME set to the loopback interface's name).")


def launch(command, cwd, *, env: dict | None = None, timeout_s: int = 600) -> str:
    """Run ``command`` (a list of str, e.g. ``[sys.executable, "-m", "torch.distributed.run",
    ...]``) in the folder ``cwd`` and return what it printed (stdout).

    Why not ``subprocess.run`` alone: torchrun writes its logs to a ``torchelastic_*`` folder in
    the temporary directory and never removes it, so the command gets a private temporary
    directory (``TMPDIR``, ``TEMP``, ``TMP``) that is deleted when it ends. When the command
    fails (or runs past ``timeout_s`` seconds), a RuntimeError gives the end of its error output
    and :func:`platform_notes` (what to try on this operating system) instead of a stack trace
    from the processes."""
    check_str_list("command", command, what="strings (the program and its arguments)", allow_empty=False)
    if not command[0].strip():
        raise ValueError(f"command[0] must be the program to run (e.g. sys.executable), got {command[0]!r}")
    check_path("cwd", cwd)
    if not os.path.isdir(cwd):
        raise FileNotFoundError(f"cwd must be an existing folder to run the command in, got {os.fspath(cwd)!r}")
    if env is not None and not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                              for k, v in env.items())):
        raise TypeError(f"env must be None or a dict of str to str (environment variables), got {env!r:.80}")
    check_positive_int("timeout_s", timeout_s)
    shown = " ".join(command[:4]) + (" ..." if len(command) > 4 else "")
    with tempfile.TemporaryDirectory(prefix="bertcourse-launch-") as tmp:
        child_env = {**(os.environ if env is None else env), "TMPDIR": tmp, "TEMP": tmp, "TMP": tmp}
        try:
            result = subprocess.run(command, cwd=cwd, env=child_env, capture_output=True, text=True,
                                    timeout=timeout_s)
        except (FileNotFoundError, PermissionError) as e:         # a missing program, not an error it printed
            raise FileNotFoundError(f"command[0] {command[0]!r} could not be run in the folder cwd "
                                    f"{os.fspath(cwd)!r} ({e.strerror}): give the program's path, e.g. "
                                    f"sys.executable") from None
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{shown} did not finish within {timeout_s} s (timeout_s); its processes "
                               f"may be waiting for each other.\n{platform_notes()}") from None
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"{shown} failed (exit code {result.returncode}). The end of its error "
                           f"output:\n{tail}\n\n{platform_notes()}")
    return result.stdout

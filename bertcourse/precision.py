"""bfloat16 or float32: whether bf16 autocast pays on this CPU, and the one autocast helper.

bf16 autocast runs the matrix products in bfloat16, which makes training faster only where the
CPU computes bfloat16 products faster than float32 ones (the AMD EPYC of benchmarks/README.md,
with AVX-512 BF16, did; an Intel Xeon with AVX-512 BF16 but no AMX computed them at half
float32's speed). Native support is not the same as speed, so :func:`cpu_has_fast_bf16`
measures it (benchmarks/README.md, "bf16 or float32").
:mod:`bertcourse.training` re-exports these names.
"""
from __future__ import annotations

import contextlib
import functools
import time

import torch
from torch import nn

from ._checks import check_bool, check_instance

__all__ = ["FAST_BF16_SPEEDUP", "bf16_speedup", "cpu_supports_bf16", "cpu_has_fast_bf16", "autocast"]


# bf16 autocast must pay for its casts: it is used where a bf16 matrix product is at least this
# many times faster than a float32 one. benchmarks/README.md ("bf16 or float32"): on the AMD EPYC
# (AVX512-BF16) bf16 products ran at 320-420 GFLOP/s per core against float32's 55-90; on an Intel
# Xeon with AVX512-BF16, bf16_speedup() gives 0.50-0.58. The threshold sits far from both.
FAST_BF16_SPEEDUP = 1.25


def bf16_speedup() -> float:
    """How many times faster a bfloat16 matrix product is than a float32 one on this CPU, with
    the current number of threads: the best of five timings of a ``(512, 384) x (384, 1536)``
    product (a BERT-small feed-forward layer's, about 0.6 GFLOP) in each dtype. Takes about
    0.2 s, and leaves torch's global random state as it was (its inputs come from a generator
    of its own)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(512, 384, generator=gen)
    w = torch.randn(1536, 384, generator=gen)
    best = {}
    for dtype in (torch.float32, torch.bfloat16):
        xd, wd = x.to(dtype), w.to(dtype)
        nn.functional.linear(xd, wd)                  # the first call sets the kernel up
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(3):
                nn.functional.linear(xd, wd)
            times.append(time.perf_counter() - start)
        best[dtype] = min(times)
    return best[torch.float32] / best[torch.bfloat16]


def cpu_supports_bf16() -> bool:
    """Whether oneDNN computes bfloat16 products natively on this CPU (AVX-512 BF16 or AMX),
    fast or not (see :func:`cpu_has_fast_bf16`)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:         # an older or unusual build: say no
        return False


@functools.lru_cache(maxsize=None)
def cpu_has_fast_bf16() -> bool:
    """Whether bf16 autocast speeds this CPU up: oneDNN computes bfloat16 products natively here
    (AVX-512 BF16 or AMX) *and* they are at least :data:`FAST_BF16_SPEEDUP` times faster than
    float32 (:func:`bf16_speedup`, measured once per process). Native support alone is not
    enough: some CPUs support bfloat16 and compute it more slowly than float32."""
    return cpu_supports_bf16() and bf16_speedup() >= FAST_BF16_SPEEDUP


def autocast(amp: bool | None, device_type: str = "cpu"):
    """The one autocast helper: bf16 autocast on ``device_type`` (``"cpu"`` or ``"cuda"``) when
    ``amp`` is true; nothing when it is false or None (None: keep whatever the caller set)."""
    check_bool("amp", amp, allow_none=True)
    check_instance("device_type", device_type, str, "'cpu' or 'cuda'")
    return torch.autocast(device_type, dtype=torch.bfloat16) if amp else contextlib.nullcontext()

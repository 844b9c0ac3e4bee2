"""bertcourse.memory: the formula of what a training step keeps (activation_formula, exact for
any batch), unmap_large_blocks: a freed large tensor goes back to the system at once, and
cap_onednn_kernels: bf16 products of many shapes keep fewer compiled kernels.

Each unmap_large_blocks case runs in a fresh Python (the setting is for the whole process, and
the test process should keep glibc's default). The default is shown first: after a large block has been
freed, glibc serves the next blocks below that size from its heap and keeps them when they are
freed, which is what made chapter 8's peak vary from run to run."""
import platform
import subprocess
import sys

import pytest
import torch

from bertcourse.memory import (activation_bytes, activation_formula, cap_onednn_kernels, saved_for_backward,
                               unmap_large_blocks)

MIB = 2**20
PROGRAM = """
import re, sys, torch
from bertcourse.memory import unmap_large_blocks
def rss():
    return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
if sys.argv[1] == "unmap":
    assert unmap_large_blocks() is True
first = torch.ones(24 * 2**20, dtype=torch.uint8)    # one large block, freed: glibc raises its limit
del first
block = torch.ones(6 * 2**20, dtype=torch.uint8)     # 6 MiB, touched
held = rss()
del block
print(held - rss())                                   # bytes handed back to the system by the free
"""

glibc_linux = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                 reason="glibc's malloc settings: Linux with glibc only")


def _returned(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@glibc_linux
def test_a_freed_large_tensor_goes_back_to_the_system_only_with_unmap_large_blocks():
    assert _returned("default") < 1 * MIB        # glibc's default keeps the 6 MiB
    assert _returned("unmap") > 5 * MIB          # unmapped at once


@pytest.mark.parametrize("value, error", [(0, ValueError), (33 * MIB, ValueError), (1.5, TypeError),
                                          (True, TypeError), ("1MB", TypeError)])
def test_unmap_large_blocks_names_a_wrong_size(value, error):
    with pytest.raises(error, match="min_bytes"):
        unmap_large_blocks(value)


# ---------------------------------------------------------------------- activation_formula

def _tiny_classifier():
    from bertcourse.bert import BERTConfig
    from bertcourse.finetune import BERTClassifier, ClassifierConfig
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=50, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=2, max_len=128)
    return BERTClassifier(ClassifierConfig(cfg, pooling="mean"))


def _batch(b, s):
    # padding in half the rows: the bytes kept depend on the shape only, not on the mask's values
    mask = torch.ones(b, s, dtype=torch.bool)
    mask[::2, s // 2:] = False
    return {"tokens": torch.randint(1, 50, (b, s)), "mask": mask, "labels": torch.zeros(b, dtype=torch.long)}


@pytest.mark.parametrize("checkpointing", [False, True])
def test_activation_formula_gives_the_measured_bytes_of_any_batch(checkpointing):
    from bertcourse.finetune import classification_step
    clf = _tiny_classifier()
    clf.encoder.checkpointing = checkpointing
    f = activation_formula(clf, classification_step, _batch)
    for b, s in [(16, 64), (3, 17), (1, 100), (5, 9)]:          # none of them was measured to make f
        assert activation_bytes(f, b, s) == saved_for_backward(clf, classification_step, _batch(b, s)), (b, s)
    # the attention weights (an entry per pair of tokens) are kept only without checkpointing
    assert (f["per_pair"] > 0) == (not checkpointing) and f["per_token"] > 0 and f["per_sequence"] > 0
    assert clf.encoder.checkpointing == checkpointing


def test_activation_formula_refuses_a_step_that_is_not_quadratic():
    model = torch.nn.Linear(1, 1)

    def cubic(m, batch):             # exp keeps its result: s**3 numbers per sequence
        b, s = batch
        return {"loss": (m.weight.sum() * torch.ones(b, s, s, s)).exp().sum()}

    with pytest.raises(ValueError, match=r"do not grow as b \* \(a s \+ p s\^2 \+ c\) \+ d"):
        activation_formula(model, cubic, lambda b, s: (b, s))
    with pytest.raises(TypeError, match="make_batch must be a function"):
        activation_formula(model, cubic, None)


def test_activation_bytes_names_its_wrong_arguments():
    f = {"per_token": 10, "per_pair": 2, "per_sequence": 5, "fixed": 4}
    assert activation_bytes(f, 3, 7) == 3 * (10 * 7 + 2 * 49 + 5) + 4
    with pytest.raises(ValueError, match="batch_size must be an int with 1 <= batch_size, got 0"):
        activation_bytes(f, 0, 7)
    with pytest.raises(ValueError, match=r"formula must have the keys .* missing \['fixed'\]"):
        activation_bytes({"per_token": 1, "per_pair": 1, "per_sequence": 1}, 1, 1)


# --- cap_onednn_kernels: each case in a fresh Python (oneDNN reads its setting once per process) ---------

KERNELS = """
import os, re, sys, torch
from bertcourse.memory import cap_onednn_kernels
os.environ.pop("ONEDNN_PRIMITIVE_CACHE_CAPACITY", None)
if sys.argv[1] == "cap":
    assert cap_onednn_kernels() is True and os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "16"
def rss():
    return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
w = torch.randn(256, 128)
with torch.autocast("cpu", dtype=torch.bfloat16):
    torch.nn.functional.linear(torch.randn(8, 128), w)
    before = rss()
    for n in range(2, 152):             # 150 new product shapes, as batches padded to ever other lengths
        torch.nn.functional.linear(torch.randn(8 * n, 128), w)
print(rss() - before)
"""

onednn_bf16 = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or platform.system() != "Linux"
    or not torch.backends.mkldnn.is_available() or not torch.ops.mkldnn._is_mkldnn_bf16_supported(),
    reason="oneDNN computes bf16 products only on x86 CPUs that support them; the memory is read from Linux's /proc")


@onednn_bf16
def test_cap_onednn_kernels_keeps_fewer_kernels_of_bf16_products():
    """Measured on the 2-core Zen 4 (three runs each): the memory grew 103-105 MB over 150 shapes with
    oneDNN's default and 72-73 MB with 16 kernels kept; the test asks for half that difference."""
    grown = {}
    for mode in ("default", "cap"):
        out = subprocess.run([sys.executable, "-c", KERNELS, mode], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        grown[mode] = int(out.stdout)
    assert grown["default"] - grown["cap"] > 15 * MIB, grown


def test_cap_onednn_kernels_keeps_a_setting_already_made():
    program = ("import os\nfrom bertcourse.memory import cap_onednn_kernels\n"
               "os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'] = '100'\n"
               "assert cap_onednn_kernels(8) is False and os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'] == '100'\n"
               "del os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY']\n"
               "assert cap_onednn_kernels(8) is True and os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'] == '8'\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("value, error", [(True, TypeError), (16.0, TypeError), ("16", TypeError),
                                          (-1, ValueError), (1025, ValueError)])
def test_cap_onednn_kernels_names_a_wrong_capacity(value, error):
    with pytest.raises(error, match="capacity must be an int"):
        cap_onednn_kernels(value)

"""bertcourse.memory.unmap_large_blocks: a freed large tensor goes back to the system at once.

Each case runs in a fresh Python (the setting is for the whole process, and the test process
should keep glibc's default). The default is shown first: after a large block has been
freed, glibc serves the next blocks below that size from its heap and keeps them when they are
freed, which is what made chapter 8's peak vary from run to run."""
import platform
import subprocess
import sys

import pytest

from bertcourse.memory import unmap_large_blocks

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

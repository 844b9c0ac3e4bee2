"""What every command line shares: a bad option or a bad input is one line on stderr and exit
code 2, Ctrl-C is exit code 130, and no command ever prints a traceback. Each task owns its
command, in its package's ``__main__.py``, built from these pieces:

    python -m bertcourse.pretrain --config tiny --seconds 90 --out runs/tiny    # pretrain/__main__.py
    python -m bertcourse.finetune --model minilm --epochs 1 --out runs/sentiment  # finetune/__main__.py
    python -m bertcourse.ddp_example ...                                         # ddp_example.py

Shared by every command: :class:`Parser`, :func:`run_cli`, the argparse types
(:func:`positive_int`, ...), :func:`add_device_option` (``--device auto|cpu|cuda``) and
:func:`say` (prints on rank 0 only, under torchrun).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import Callable

from ._checks import check_path
from .i18n import get_language, gettext as _, set_language

__all__ = ["UsageError", "Parser", "positive_int", "positive_float", "nonnegative_float", "nonnegative_int",
           "check_writable", "add_device_option", "say", "run_cli"]


class UsageError(Exception):
    """A wrong option or input: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr and exit code 2 (no usage dump), and
    every number is read as a value, negative ones included."""

    # argparse takes an argument that starts with "-" for an option unless it matches
    # `_negative_number_matcher`, which (before Python 3.13) knows only "-5" and "-.5": so
    # `--lr -1e-3` gave "expected one argument" instead of the range check's "--lr must be
    # > 0". Widened to every float spelling; valid because no option of ours looks like a number.
    _NUMBER = re.compile(r"^-(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$",
                         re.IGNORECASE)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = self._NUMBER

    def error(self, message):
        # "argument --seconds: --seconds must be > 0" -> "--seconds must be > 0"
        raise UsageError(re.sub(r"^argument (--[\w-]+): \1 ", r"\1 ", message))


def _number(name: str, convert, text: str, low: float, inclusive: bool):
    try:
        value = convert(text)
    except ValueError:
        kind = "a whole number" if convert is int else "a number"
        raise argparse.ArgumentTypeError(f"{name} must be {kind}, got {text!r}") from None
    if not math.isfinite(value) or value < low or (value == low and not inclusive):
        raise argparse.ArgumentTypeError(f"{name} must be {'>=' if inclusive else '>'} {low}, got {text}")
    return value


def positive_int(name: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers > 0 (the message names the option)."""
    return lambda text: _number(name, int, text, 0, False)


def positive_float(name: str) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers > 0 (NaN and infinity are refused)."""
    return lambda text: _number(name, float, text, 0, False)


def nonnegative_float(name: str) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers >= 0."""
    return lambda text: _number(name, float, text, 0, True)


def nonnegative_int(name: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers >= 0."""
    return lambda text: _number(name, int, text, 0, True)


def check_writable(folder: str, option: str = "--out") -> None:
    """Create ``folder`` if needed and make sure a file can be written into it."""
    try:
        check_path(option, folder, kind="folder", what="output folder")   # "" or an existing file
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".write-test-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"{option} {folder!r} is not a writable folder ({e.strerror or e})") from None


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device auto|cpu|cuda|cuda:N`` (default ``auto``: a GPU when there is one). The
    value is checked by :func:`bertcourse.distributed.resolve_device` when the command runs,
    and passed on as ``TrainConfig(device=args.device)``."""
    parser.add_argument("--device", default="auto", type=_device_name,
                        help="where to train: auto (a GPU when there is one; default), cpu, cuda or cuda:N; "
                             "under torchrun, cuda means one GPU per process (cuda:LOCAL_RANK)")


def _device_name(text: str) -> str:
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"--device must be auto, cpu, cuda or cuda:N, got {text!r}")
    return text


def _rank() -> int:
    """This process' rank under torchrun (from the environment: valid before the group is joined)."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def say(*args, **kwargs) -> None:
    """``print`` (flushed) on rank 0 only: under torchrun, N processes would say everything N times."""
    if _rank() == 0:
        print(*args, **kwargs, flush=True)


def run_cli(parse: Callable, run: Callable, argv=None) -> int:
    """``run(parse(argv))`` with the course's rules: ``UsageError`` and errors in the input
    (``ValueError``, ``TypeError``, ``FileNotFoundError``) are one line on stderr and exit
    code 2; Ctrl-C while loading is exit code 130 (training itself stops cleanly and saves);
    anything else is one line and exit code 1. Under torchrun, every process has the same
    input errors and only rank 0 reports them; other errors are reported by the rank that
    had them, named ``[rank N]``."""
    argv = sys.argv[1:] if argv is None else argv
    if get_language() != "en":      # BERTCOURSE_LANG chose it: the whole switch (the figures' font too)
        set_language(get_language())
    rank = _rank()
    where = f"[rank {rank}] " if rank else ""
    try:
        return run(parse(argv))
    except (UsageError, ValueError, TypeError, FileNotFoundError) as e:
        if rank == 0:
            print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if rank == 0:
            print(_("interrupted before training started; nothing was saved"), file=sys.stderr)
        return 130
    except Exception as e:          # a bug: still no traceback, but say what it was
        print(f"{where}error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1

"""Small helpers every notebook uses: seeding, the number of threads, and showing the package's own source."""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import math
import os
import random
import textwrap

import numpy as np
import torch
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from ._checks import check_bool, check_instance, check_int

__all__ = ["set_seed", "stable_order_key", "hash_sample", "set_threads", "available_cores", "THREADS_VARIABLE", "evaluation_mode", "show_source", "hide_input_checks", "hide_fast_paths", "HIDDEN_CHECKS", "FAST_PATH", "SourceCode",
           "cached"]


def set_seed(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's generators, so a notebook repeats exactly."""
    check_int("seed", seed, low=0, high=2**32 - 1)      # NumPy's range
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


THREADS_VARIABLE = "BERTCOURSE_THREADS"
"""The environment variable that caps :func:`set_threads`: CI sets it to 1, because it runs two
notebooks side by side on two cores, and threads that wait for a busy core slow a step down many
times over (``benchmarks/README.md``, "Every core")."""


def stable_order_key(seed: int, *parts: str) -> str:
    """A sort key that shuffles by ``seed``: the SHA-256 of the seed and ``parts``. Unlike a random
    generator, the order is the same on every machine and in every Python and torch version,
    and an item's place does not depend on the other items (the data splits use it)."""
    check_int("seed", seed, low=0)
    for i, part in enumerate(parts):
        check_instance(f"parts[{i}]", part, str)
    return hashlib.sha256("\x00".join([str(seed), *parts]).encode("utf-8")).hexdigest()


def hash_sample(items, n: int | None, seed: int, key) -> list:
    """``n`` of ``items`` (all for ``None``): the first ``n`` in the order of
    :func:`stable_order_key` of ``seed`` and ``key(item)``, returned in the order of ``items``. So
    the choice depends on the seed and the keys only, and the same key is chosen for every ``n``
    that reaches it (chapter 12's questions, the command line's subsets)."""
    if not callable(key):
        raise TypeError(f"key must be a function item -> str, got {type(key).__name__}")
    check_int("seed", seed, low=0)
    items = list(items)
    if n is not None:
        check_int("n", n, low=1, high=len(items))
    chosen = set(sorted(range(len(items)), key=lambda i: stable_order_key(seed, key(items[i])))[:n])
    return [x for i, x in enumerate(items) if i in chosen]


def _cgroup_cpus() -> float | None:
    """The CPU time this container may use, in cores (cgroup v2 ``cpu.max``, or v1's CFS quota),
    or None when unlimited or unknown. Binder limits a session this way while its machine shows
    many more cores."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = int(f.read())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


def available_cores() -> int:
    """The cores this process may run on: the CPUs it is allowed on, fewer where the container's
    CPU quota is smaller (Binder), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:              # macOS, Windows
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    if quota is not None:
        cores = min(cores, math.floor(quota))
    return max(1, cores)


def set_threads(n: int | None = None) -> int:
    """Let PyTorch compute on ``n`` threads (default: :func:`available_cores`), at most the
    positive integer in the environment variable ``BERTCOURSE_THREADS`` when it is set; returns
    the number set.

    The chapters that train call it first, so a learner's laptop uses all its cores. The numbers
    they assert hold on one thread and on several: their bounds were measured on 1, 2 and more
    (``benchmarks/README.md``, "Every core")."""
    if n is not None:
        check_int("n", n, low=1)
    cap = os.environ.get(THREADS_VARIABLE, "").strip()
    if cap:
        try:
            cap_value = int(cap)
        except ValueError:
            cap_value = 0
        if cap_value < 1:
            raise ValueError(f"the environment variable {THREADS_VARIABLE} must be a positive integer "
                             f"(the most threads to use), got {cap!r}")
    threads = available_cores() if n is None else n
    if cap:
        threads = min(threads, cap_value)
    torch.set_num_threads(threads)
    return threads


@contextlib.contextmanager
def evaluation_mode(model):
    """``with evaluation_mode(model):`` the model in ``eval()`` mode (dropout off) inside the
    block, and back in the mode it had afterwards, also when the block raises. The one way the
    package evaluates, decodes or inspects a model that may be training."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


class SourceCode:
    """Source text that renders with syntax highlighting in Jupyter and as plain text
    elsewhere (on GitHub, in a terminal, in nbval's comparison)."""

    def __init__(self, source: str, name: str = ""):
        check_instance("source", source, str, "Python source text")
        check_instance("name", name, str)
        self.source, self.name = source, name

    def __repr__(self) -> str:
        return self.source.rstrip("\n")

    def _repr_html_(self) -> str:
        formatter = HtmlFormatter(noclasses=True, style="default")
        return highlight(self.source, PythonLexer(), formatter)


HIDDEN_CHECKS = "# (input checks hidden: see the source)"
FAST_PATH = "# fast path (same numbers, faster):"


def show_source(obj, checks: bool = True) -> SourceCode:
    """Show the source of a bertcourse function, class or method, highlighted.

    The notebooks call this instead of pasting a second copy of the code, so what the
    reader sees is exactly what runs (and what the tests check).

    ``checks=False`` leaves out the input checks at the top of every function body (calls
    of ``check_*`` / ``_check*`` helpers and ``if ...: raise ...`` blocks), so that the
    algorithm is not buried under them; each run of hidden lines becomes one comment line,
    ``# (input checks hidden: see the source)``. Nothing else changes.

    A class is shown with its plain methods; each method marked ``@fast_path`` (the same
    numbers, computed faster: :mod:`bertcourse.fast_paths`) becomes one comment line naming it,
    so a chapter that shows a layer shows the forward it teaches. Show such a method
    directly (``show_source(MultiHeadAttention.cached)``) to read it.
    """
    check_bool("checks", checks)
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(f"show_source needs a function, class or method defined in Python, "
                        f"got obj of type {type(obj).__name__}: {e}") from None
    source = textwrap.dedent(source)
    if inspect.isclass(obj):
        source = hide_fast_paths(source)
    if not checks:
        source = hide_input_checks(source)
    return SourceCode(source, getattr(obj, "__qualname__", ""))


def _is_check_call(stmt: ast.stmt) -> bool:
    """``check_x(...)`` or ``_check_x(...)`` (also as ``module.check_x(...)``) on a line of its own."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name.startswith(("check_", "_check"))


def _is_check(stmt: ast.stmt) -> bool:
    """A check call, or ``if <condition>: raise ...`` (no ``else``) whose body only raises or checks."""
    if _is_check_call(stmt):
        return True
    return (isinstance(stmt, ast.If) and not stmt.orelse
            and all(isinstance(s, ast.Raise) or _is_check_call(s) for s in stmt.body))


def _is_super_init(stmt: ast.stmt) -> bool:
    """``super().__init__(...)``: kept, and it does not end the run of checks before or after it."""
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "__init__"
            and isinstance(stmt.value.func.value, ast.Call)
            and isinstance(stmt.value.func.value.func, ast.Name) and stmt.value.func.value.func.id == "super")


def hide_input_checks(source: str) -> str:
    """``source`` (dedented Python) without the input checks at the top of each function body;
    each run of hidden statements is replaced by the line :data:`HIDDEN_CHECKS`."""
    check_instance("source", source, str, "Python source text")
    tree = ast.parse(source)
    runs = []                                   # (first line, last line, indent), 1-based
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        start = 1 if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                      and isinstance(body[0].value.value, str)) else 0     # skip the docstring
        run = []
        for stmt in body[start:]:
            if _is_check(stmt):
                run.append(stmt)
            elif _is_super_init(stmt):
                if run:
                    runs.append(run)
                run = []
            else:
                break
        if run:
            runs.append(run)
    lines = source.splitlines(keepends=True)
    for run in sorted(runs, key=lambda r: r[0].lineno, reverse=True):
        first, last = run[0].lineno, run[-1].end_lineno
        indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        lines[first - 1: last] = [indent + HIDDEN_CHECKS + "\n"]
    return "".join(lines)


def _is_fast_path(node: ast.AST) -> bool:
    """A method decorated with ``@fast_path`` (also as ``@kernels.fast_path``)."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        (d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else "") == "fast_path"
        for d in node.decorator_list)


def hide_fast_paths(source: str) -> str:
    """``source`` (a dedented class) with every ``@fast_path`` method, decorator and body,
    replaced by one comment line, :data:`FAST_PATH` and where to read it."""
    check_instance("source", source, str, "Python source text")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    methods = [(cls.name, n) for cls in tree.body if isinstance(cls, ast.ClassDef)
               for n in cls.body if _is_fast_path(n)]
    for cls, node in sorted(methods, key=lambda m: m[1].lineno, reverse=True):
        first = min(d.lineno for d in node.decorator_list)
        line = lines[first - 1]
        indent = line[: len(line) - len(line.lstrip())]
        lines[first - 1: node.end_lineno] = [f"{indent}{FAST_PATH} show_source({cls}.{node.name})\n"]
    # consecutive fast paths: one comment line each, without blank lines between them
    lines = [x for i, x in enumerate(lines) if not (x.strip() == "" and 0 < i < len(lines) - 1 and
             lines[i - 1].lstrip().startswith(FAST_PATH) and lines[i + 1].lstrip().startswith(FAST_PATH))]
    return "".join(lines)


def cached(fn):
    """``functools.lru_cache`` that treats ``f(0)``, ``f(seed=0)`` and ``f(0, size=<default>)``
    as one call (plain lru_cache would compute and keep three copies). ``f.__wrapped__`` is
    the uncached function."""
    if not callable(fn):
        raise TypeError(f"cached decorates a function: fn must be callable, got {type(fn).__name__}")
    signature = inspect.signature(fn)
    cached = functools.lru_cache(maxsize=8, typed=True)(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        try:
            hash((bound.args, tuple(bound.kwargs.items())))
        except TypeError:       # e.g. a list for a seed: the function's own checks say what is wrong
            return fn(*bound.args, **bound.kwargs)
        return cached(*bound.args, **bound.kwargs)

    wrapper.cache_clear = cached.cache_clear
    wrapper.cache_info = cached.cache_info
    return wrapper

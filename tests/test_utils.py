"""Tests for bertcourse.utils: seeding and show_source."""
import inspect
import random
import textwrap

import numpy as np
import pytest
import torch

from bertcourse.attention import MultiHeadAttention, masked_softmax
from bertcourse.utils import SourceCode, set_seed, show_source


def draw_all():
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


def test_set_seed_repeats_python_numpy_and_torch():
    set_seed(0)
    first = draw_all()
    set_seed(0)
    assert draw_all() == first
    set_seed(1)
    assert draw_all() != first


def test_show_source_of_a_function():
    src = show_source(masked_softmax)
    assert isinstance(src, SourceCode)
    assert src.source == inspect.getsource(masked_softmax)
    assert repr(src) == inspect.getsource(masked_softmax).rstrip("\n")
    assert src.name == "masked_softmax"


def test_show_source_of_a_method_is_dedented():
    src = show_source(MultiHeadAttention.forward)
    assert src.source == textwrap.dedent(inspect.getsource(MultiHeadAttention.forward))
    assert src.source.startswith("def forward(")
    assert src.name == "MultiHeadAttention.forward"


def test_show_source_html_is_highlighted():
    html = show_source(masked_softmax)._repr_html_()
    assert html.lstrip().startswith("<div")
    assert "<span" in html and "style=" in html          # inline colours, no CSS classes needed
    assert "masked_softmax" in html and "def" in html


@pytest.mark.parametrize("obj", [len, 3, torch.nn.functional.softmax.__call__])
def test_show_source_rejects_builtins(obj):
    with pytest.raises(TypeError, match="show_source needs a function, class or method defined in Python"):
        show_source(obj)


# --- show_source(..., checks=False) --------------------------------------------------------------

def _module_fn():
    pass


SAMPLE = '''\
def f(x, n, scale=1.0):
    """Docstring stays."""
    check_tensor("x", x, ndim=2)
    _check_scale(scale)
    if n < 0:
        raise ValueError("n must be >= 0")
    y = x * scale
    if y.sum() > 0:             # not at the top: algorithm, kept
        raise RuntimeError("kept")
    check_tensor("y", y)        # not at the top: kept
    return y


class Block:
    def __init__(self, d):
        super().__init__()
        check_positive_int("d", d)
        self.d = d

    def forward(self, X):
        if X.dim() != 3:
            raise ValueError("X must be 3-D")
        else:
            X = X + 1           # an if with an else is not a check
        return X
'''


def test_hide_input_checks_hides_only_the_checks_at_the_top():
    from bertcourse.utils import HIDDEN_CHECKS, hide_input_checks
    out = hide_input_checks(SAMPLE)
    compile(out, "<shown>", "exec")                                    # still valid Python
    assert out.count(HIDDEN_CHECKS) == 2
    assert '    """Docstring stays."""\n    ' + HIDDEN_CHECKS + "\n    y = x * scale\n" in out
    assert "super().__init__()\n        " + HIDDEN_CHECKS + "\n        self.d = d\n" in out
    for gone in ['check_tensor("x"', "_check_scale", "n must be >= 0", 'check_positive_int("d"']:
        assert gone not in out
    for kept in ['raise RuntimeError("kept")', 'check_tensor("y", y)', "X must be 3-D", "return X"]:
        assert kept in out
    assert hide_input_checks(out) == out                               # nothing left to hide


def test_show_source_can_hide_the_checks_of_package_code():
    from bertcourse.bert import mean_pool
    from bertcourse.transformer import EncoderBlock, PositionWiseFFN
    from bertcourse.utils import HIDDEN_CHECKS
    full, short = show_source(mean_pool), show_source(mean_pool, checks=False)
    assert "check_tensor" in full.source and "raise ValueError" in full.source
    assert "check_tensor" not in short.source and "raise" not in short.source
    assert HIDDEN_CHECKS in short.source and short.name == full.name == "mean_pool"
    assert "return (hidden * m).sum(1)" in short.source
    src = show_source(PositionWiseFFN, checks=False).source
    assert src.count(HIDDEN_CHECKS) == 2 and "check_" not in src       # __init__ and forward
    assert "self.dense2(self._act(self.dense1(X)))" in src
    assert "check_" not in show_source(EncoderBlock, checks=False).source
    # a function without checks is shown unchanged
    assert show_source(_module_fn, checks=False).source == show_source(_module_fn).source


@pytest.mark.parametrize("bad", ["no", 0, None])
def test_show_source_checks_must_be_a_bool(bad):
    with pytest.raises(TypeError, match=r"checks must be True or False"):
        show_source(masked_softmax, checks=bad)


# ----------------------------------------------------------------------------------------
# set_threads: every core, capped by BERTCOURSE_THREADS
# ----------------------------------------------------------------------------------------

@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_set_threads_uses_every_core_up_to_the_cap(monkeypatch, restore_threads):
    from bertcourse.utils import THREADS_VARIABLE, available_cores, set_threads
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    monkeypatch.setattr("bertcourse.utils.available_cores", lambda: 3)
    assert set_threads() == 3 == torch.get_num_threads()
    monkeypatch.setenv(THREADS_VARIABLE, "2")
    assert set_threads() == 2 == torch.get_num_threads()          # capped
    assert set_threads(1) == 1 == torch.get_num_threads()         # asked for fewer
    assert set_threads(5) == 2                                    # the cap holds for an explicit number too
    monkeypatch.setenv(THREADS_VARIABLE, " 8 ")
    assert set_threads() == 3                                     # a cap above the cores changes nothing
    monkeypatch.undo()
    assert available_cores() >= 1


@pytest.mark.parametrize("cap", ["0", "-1", "two", "1.5"])
def test_set_threads_names_a_bad_cap(monkeypatch, restore_threads, cap):
    from bertcourse.utils import set_threads
    monkeypatch.setenv("BERTCOURSE_THREADS", cap)
    with pytest.raises(ValueError, match=f"BERTCOURSE_THREADS must be a positive integer .*got {cap!r}"):
        set_threads()


@pytest.mark.parametrize("n, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError),
                                      ("2", TypeError)])
def test_set_threads_names_a_bad_count(n, error, restore_threads):
    from bertcourse.utils import set_threads
    with pytest.raises(error, match="n must be an int"):
        set_threads(n)


def test_available_cores_follows_the_containers_cpu_quota(monkeypatch):
    import bertcourse.utils as utils
    monkeypatch.setattr(utils.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(utils, "_cgroup_cpus", lambda: None)
    assert utils.available_cores() == 16
    monkeypatch.setattr(utils, "_cgroup_cpus", lambda: 2.0)      # Binder: a quota of 2 CPUs on a 16-core machine
    assert utils.available_cores() == 2
    monkeypatch.setattr(utils, "_cgroup_cpus", lambda: 0.5)      # half a CPU: still one thread
    assert utils.available_cores() == 1


def test_hash_sample_takes_the_first_in_the_hash_order_and_keeps_the_items_order():
    from bertcourse.utils import hash_sample, stable_order_key
    items = [f"item {i}" for i in range(20)]
    by_hash = sorted(items, key=lambda x: stable_order_key(3, x))           # the oracle: the order spelled out
    picked = hash_sample(items, 5, 3, key=str)
    assert set(picked) == set(by_hash[:5]) and picked == [x for x in items if x in picked]
    assert set(picked) < set(hash_sample(items, 8, 3, key=str))              # a larger n keeps what a smaller one chose
    assert hash_sample(items, None, 3, key=str) == items
    assert hash_sample(items, 5, 4, key=str) != picked                       # another seed, another choice
    with pytest.raises(ValueError, match="n must be"):
        hash_sample(items, 21, 3, key=str)
    with pytest.raises(TypeError, match="key must be a function"):
        hash_sample(items, 5, 3, key="id")


def test_stable_order_key_is_a_fixed_hash_of_the_seed_and_the_parts():
    import hashlib
    from bertcourse.utils import stable_order_key
    # an independent spelling of the key: the split of every data set depends on it staying the same
    assert stable_order_key(0, "a b") == hashlib.sha256(b"0\x00a b").hexdigest()
    assert stable_order_key(3, "x", "y") == hashlib.sha256(b"3\x00x\x00y").hexdigest()
    assert stable_order_key(1, "x") != stable_order_key(2, "x")
    with pytest.raises(TypeError, match=r"parts\[1\]"):
        stable_order_key(0, "x", 5)
    with pytest.raises(ValueError, match="seed"):
        stable_order_key(-1, "x")

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

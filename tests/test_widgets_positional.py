"""Headless tests of the positional-encoding explorer (bertcourse.widgets.positional)."""
import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from bertcourse.widgets.positional import (WIDTHS, PositionalEncodingExplorer, binary_table,  # noqa: E402
                                           draw_binary_analogy, draw_heatmap,
                                           draw_similarity, draw_sinusoids, encoding_view)


def closed_form(i, col, d):
    angle = i / 10000 ** ((col - col % 2) / d)
    return math.sin(angle) if col % 2 == 0 else math.cos(angle)


def bar_heights(fig):
    return np.array([p.get_height() for p in fig.axes[0].patches])


# --- pure functions ----------------------------------------------------------------------------

def test_encoding_view_against_closed_form():
    v = encoding_view(16, position=7, dims=(3, 9), max_len=40)
    assert v["columns"] == list(range(3, 10))
    expected = [closed_form(7, c, 16) for c in range(3, 10)]
    np.testing.assert_allclose(v["vector"].numpy(), expected, atol=1e-6)
    # similarity: dot products with every position over the same columns
    sim = [sum(closed_form(i, c, 16) * closed_form(7, c, 16) for c in range(3, 10)) for i in range(40)]
    np.testing.assert_allclose(v["similarity"].numpy(), sim, atol=1e-5)


def test_similarity_peaks_at_the_position_and_depends_only_on_distance():
    v = encoding_view(64, position=30, dims=(0, 63), max_len=100)
    sim = v["similarity"]
    assert int(sim.argmax()) == 30 and sim[30].item() == pytest.approx(32.0, abs=1e-4)   # |P_i|^2 = d/2
    for k in (1, 5, 20):
        assert sim[30 + k].item() == pytest.approx(sim[30 - k].item(), abs=1e-4)
    other = encoding_view(64, position=60, dims=(0, 63), max_len=100)["similarity"]
    assert other[60 + 7].item() == pytest.approx(sim[30 + 7].item(), abs=1e-4)


def test_encoding_view_errors():
    with pytest.raises(ValueError, match=r"position must be in \[0, max_len - 1 = 9\], got 10"):
        encoding_view(8, 10, (0, 7), max_len=10)
    with pytest.raises(ValueError, match=r"dims must be \(first, last\).*num_hiddens=8, got \(2, 8\)"):
        encoding_view(8, 0, (2, 8))
    with pytest.raises(ValueError, match=r"dims must be"):
        encoding_view(8, 0, (5, 2))


def test_binary_table():
    bits = binary_table(8, 3)
    assert bits.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0],
                             [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]]
    flips = (bits[1:] != bits[:-1]).sum(0)
    assert flips.tolist() == [7, 3, 1]      # lower bits flip more often


def test_static_figures_hold_the_table():
    from bertcourse.positional import sinusoidal_encoding
    P = sinusoidal_encoding(50, 16)
    fig = draw_sinusoids(P, [0, 2, 6])
    assert len(fig.axes[0].lines) == 3
    np.testing.assert_allclose(fig.axes[0].lines[2].get_ydata(), P[:, 6].numpy())
    np.testing.assert_allclose(np.asarray(draw_heatmap(P).axes[0].images[0].get_array()), P.numpy())
    fig = draw_binary_analogy(16, 4, 8)
    np.testing.assert_array_equal(np.asarray(fig.axes[0].images[0].get_array()), binary_table(16, 4).numpy())
    np.testing.assert_allclose(np.asarray(fig.axes[1].images[0].get_array()), sinusoidal_encoding(16, 8).numpy())
    fig = draw_similarity({"a": P, "b": P[:, :4]})
    np.testing.assert_allclose(np.asarray(fig.axes[1].images[0].get_array()), (P[:, :4] @ P[:, :4].T).numpy(),
                               rtol=1e-6)


# --- the widget ---------------------------------------------------------------------------------

def test_widget_initial_state_and_figure():
    w = PositionalEncodingExplorer(num_hiddens=32, position=5, max_len=60)
    s = w.state
    assert s["num_hiddens"] == 32 and s["position"] == 5 and s["dims"] == (0, 31)
    fig = w.figure
    np.testing.assert_allclose(bar_heights(fig), [closed_form(5, c, 32) for c in range(32)], atol=1e-6)
    img = np.asarray(fig.axes[1].images[0].get_array())
    np.testing.assert_allclose(img, s["P"].numpy())
    outline = fig.axes[1].patches[0]
    assert outline.get_y() == pytest.approx(4.5) and outline.get_height() == 1   # row 5
    np.testing.assert_allclose(fig.axes[2].lines[0].get_ydata(), s["similarity"].numpy())


def test_moving_sliders_updates_state_and_figure():
    w = PositionalEncodingExplorer(num_hiddens=64, position=0, max_len=100)
    w.position.value = 42
    w.dims.value = (10, 19)
    s = w.state
    assert s["position"] == 42 and s["dims"] == (10, 19)
    np.testing.assert_allclose(bar_heights(w.figure), [closed_form(42, c, 64) for c in range(10, 20)], atol=1e-6)
    np.testing.assert_allclose(np.asarray(w.figure.axes[1].images[0].get_array()), s["P"][:, 10:20].numpy())
    assert w.figure.axes[1].patches[0].get_y() == pytest.approx(41.5)
    assert int(np.argmax(w.figure.axes[2].lines[0].get_ydata())) == 42


def test_changing_width_keeps_the_range_valid():
    w = PositionalEncodingExplorer(num_hiddens=64)
    assert w.dims.max == 63
    w.width.value = 16                          # full range stays the full range
    assert w.dims.max == 15 and w.dims.value == (0, 15) and w.state["dims"] == (0, 15)
    assert w.state["P"].shape == (100, 16)
    w.width.value = 128
    assert w.dims.max == 127 and w.dims.value == (0, 127)
    w.dims.value = (100, 120)
    w.width.value = 8                            # a range outside the new width is clamped
    assert w.dims.value == (7, 7) and w.state["dims"] == (7, 7)
    assert len(bar_heights(w.figure)) == 1
    assert w.state["vector"].item() == pytest.approx(closed_form(w.position.value, 7, 8), abs=1e-6)


def test_widget_rejects_unknown_width():
    with pytest.raises(ValueError, match=r"num_hiddens must be one of"):
        PositionalEncodingExplorer(num_hiddens=48)
    assert 64 in WIDTHS

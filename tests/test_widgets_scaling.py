"""Headless tests of the data-parallel planner (bertcourse.widgets.scaling)."""
import matplotlib
import pytest

matplotlib.use("Agg")

from bertcourse.widgets.scaling import LEFT_OUT, DataParallelPlanner, draw_epoch, epoch_layout  # noqa: E402


def test_epoch_layout_deals_the_batches_out_evenly():
    layout = epoch_layout(1000, 32, 3)
    assert layout["batches"] == 32 and layout["steps_per_epoch"] == 10 and layout["global_batch"] == 96
    assert [len(row) for row in layout["grid"]] == [10, 10, 10]
    assert layout["grid"][1][:3] == [1, 4, 7] and layout["left_out"] == [30, 31]
    used = [b for row in layout["grid"] for b in row] + layout["left_out"]
    assert sorted(used) == list(range(32))
    assert epoch_layout(1000, 32, 1)["left_out"] == [] and epoch_layout(1000, 32, 2, base_lr=1e-3)["lr_sgd"] == 2e-3
    assert epoch_layout(1000, 32, 4, base_lr=1e-3)["lr"] == pytest.approx(2e-3)        # sqrt(4) for AdamW
    with pytest.raises(ValueError, match="world_size must be > 0, got 0"):
        epoch_layout(1000, 32, 0)


def test_draw_epoch_has_one_cell_per_batch_used_then_the_left_out_ones():
    layout = epoch_layout(1000, 32, 3)
    fig = draw_epoch(layout)
    cells = fig.axes[0].patches
    assert len(cells) == 32
    assert [tuple(round(c, 3) for c in p.get_facecolor()) for p in cells[-2:]] == \
        [tuple(round(c, 3) for c in matplotlib.colors.to_rgba(LEFT_OUT))] * 2
    assert "global batch 96" in fig.axes[0].get_title(loc="left")
    assert len(draw_epoch(epoch_layout(28606, 16, 2), max_steps=40).axes[0].patches) == 2 * 40


def test_widget_follows_its_controls():
    w = DataParallelPlanner(num_pairs=28606, world_size=2, batch_size=128)
    assert w.state["global_batch"] == 256 and w.state["steps_per_epoch"] == 112
    w.world_size.value = 4
    assert w.state["global_batch"] == 512 and w.state["steps_per_epoch"] == 56
    assert "global batch 512" in w.info.value and len(w.figure.axes[0].patches) == 4 * 40
    w.batch_size.value = 512
    assert w.state["steps_per_epoch"] == 14 and w.state["lr"] == pytest.approx(2 * 5e-3)
    assert w.state["lr_sgd"] == pytest.approx(4 * 5e-3) and "0.01 for AdamW (square-root rule" in w.info.value


def test_the_picture_of_one_step_has_a_row_per_rank():
    from bertcourse.widgets.scaling import draw_data_parallelism
    fig = draw_data_parallelism(3)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert [t for t in texts if t.startswith("rank ")] == ["rank 0", "rank 1", "rank 2"]
    assert any("g = (g0 + g1 + g2) / 3" in t for t in texts)
    with pytest.raises(ValueError, match="world_size must be at most 4"):
        draw_data_parallelism(5)

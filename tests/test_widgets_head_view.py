"""Headless tests of the chapter 8 head view: set the controls' values, check the state and
the figure's data against Hugging Face's attention maps for the same text."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformers import BertModel

from bertcourse.inspection import attention_maps
from bertcourse.inspection import PATTERNS, head_statistics
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.widgets.head_view import (ALL_TOKENS, PAIR_FILTERS, HeadView, draw_head_survey,
                                          draw_head_view, head_view_data, pair_mask)

A, B = "The cat sat on the mat.", "It was very comfortable."


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained("minilm")


@pytest.fixture(scope="module")
def hf_attentions(minilm):
    """HF's (layers, heads, seq, seq) attention for A, B: the independent oracle."""
    hf = BertModel.from_pretrained(str(minilm.folder), attn_implementation="eager").eval()
    enc = minilm.encode(A, B)
    with torch.no_grad():
        out = hf(**enc.hf(), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions])


def test_pair_mask():
    seg = [0, 0, 0, 1, 1]
    ab = pair_mask(seg, "A→B")
    assert ab.shape == (5, 5) and ab.dtype == torch.bool
    assert ab[:3, 3:].all() and ab.sum() == 6
    assert pair_mask(seg, "B→A")[3:, :3].all() and pair_mask(seg, "B→A").sum() == 6
    assert pair_mask(seg, "A→A").sum() == 9 and pair_mask(seg, "B→B").sum() == 4
    assert pair_mask(seg, "all").all()
    # the four filters split the matrix
    total = sum(pair_mask(seg, f).long() for f in PAIR_FILTERS[1:])
    assert (total == 1).all()
    with pytest.raises(ValueError, match="which must be one of"):
        pair_mask(seg, "A->B")
    with pytest.raises(ValueError, match="segments must be a 1-D"):
        pair_mask([[0, 1]], "all")


def test_head_view_data_filters_and_lines():
    g = torch.Generator().manual_seed(0)
    w = torch.softmax(torch.randn(2, 3, 4, 4, generator=g), -1)
    seg = [0, 0, 1, 1]
    d = head_view_data(w, seg, layer=2, head=3, token=1, which="A→B")
    expected = w[1, 2].clone()
    expected[~pair_mask(seg, "A→B")] = 0
    assert torch.equal(d["matrix"], expected)
    assert torch.equal(d["row"], expected[1])
    assert d["row"][:2].eq(0).all() and d["row"][2:].gt(0).all()
    assert [(i, j) for i, j, _ in d["lines"]] == [(1, 2), (1, 3)]
    assert [x for _, _, x in d["lines"]] == pytest.approx(w[1, 2, 1, 2:].tolist())
    every = head_view_data(w, seg, 1, 1)
    assert every["row"] is None and len(every["lines"]) == 16
    for bad, match in [(dict(layer=0), r"layer must be in 1..2"), (dict(layer=3), r"layer must be in 1..2"),
                       (dict(head=4), r"head must be in 1..3"), (dict(token=4), r"token must be in 0..3"),
                       (dict(which="AB"), "which must be one of")]:
        args = {"layer": 1, "head": 1, "token": 0, "which": "all", **bad}
        with pytest.raises(ValueError, match=match):
            head_view_data(w, seg, **args)
    with pytest.raises(ValueError, match=r"weights must have shape \(layers, heads, seq, seq\)"):
        head_view_data(w[0], seg, 1, 1)
    with pytest.raises(ValueError, match="segments has 3 entries"):
        head_view_data(w, seg[:3], 1, 1)


def test_widget_shows_the_models_attention(minilm, hf_attentions):
    v = HeadView(minilm, A, B)
    pieces = v.state["pieces"]
    assert pieces == minilm.encode(A, B).pieces[0]
    assert v.token.options[0] == ("(all tokens)", ALL_TOKENS)
    assert [o[1] for o in v.token.options[1:]] == list(range(len(pieces)))
    v.layer.value, v.head.value = 1, 3
    v.token.value = pieces.index("mat")
    s = v.state
    assert (s["layer"], s["head"], s["token"], s["pair"]) == (1, 3, pieces.index("mat"), "all")
    ref = hf_attentions[0, 2, pieces.index("mat")]
    assert torch.allclose(s["row"], ref, atol=1e-5)
    # L1.H3 is the previous-token head: "mat" attends to "the"
    assert int(s["row"].argmax()) == pieces.index("mat") - 1
    assert "'mat'" in s["message"] and "'the'" in s["message"]
    # the figure: one line per key of the chosen token, alpha = weight; the heatmap = the head
    ax_lines, ax_map = v.figure.axes[:2]
    coll = ax_lines.collections[0]
    assert len(coll.get_segments()) == len(s["lines"]) == int((ref > 0).sum())
    np.testing.assert_allclose(coll.get_colors()[:, 3], [w for _, _, w in s["lines"]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ax_map.images[0].get_array()), hf_attentions[0, 2].numpy(), atol=1e-5)


def test_widget_pair_filter_zeroes_and_hides_other_pairs(minilm, hf_attentions):
    v = HeadView(minilm, A, B, layer=4, head=5)
    seg = torch.tensor(v.state["segments"])
    v.pair.value = "A→B"
    s = v.state
    kept = (seg == 0)[:, None] & (seg == 1)[None, :]
    assert torch.equal(s["kept"], kept)
    assert torch.allclose(s["matrix"], hf_attentions[3, 4] * kept, atol=1e-5)
    assert (s["matrix"][~kept] == 0).all()
    image = v.figure.axes[1].images[0].get_array()
    assert np.array_equal(np.ma.getmaskarray(image), ~kept.numpy())       # hidden, not just zero
    assert all(kept[i, j] for i, j, _ in s["lines"])
    # a token of sentence B has no query under A→B
    b_token = v.state["pieces"].index("comfortable")
    v.token.value = b_token
    assert v.state["row"].eq(0).all() and v.state["lines"] == []
    assert "is in sentence B" in v.state["message"]
    v.pair.value = "B→A"
    assert v.state["row"].sum() > 0
    assert torch.allclose(v.state["row"], hf_attentions[3, 4, b_token] * (seg == 0), atol=1e-5)


def test_widget_new_text_reruns_the_model(minilm):
    v = HeadView(minilm, A, B, token=3)
    v.text_b.value = ""
    assert 1 not in v.state["segments"] and v.state["token"] == 3
    v.pair.value = "A→B"
    assert not v.state["kept"].any() and "type a sentence B" in v.state["message"]
    v.pair.value = "all"
    v.text_a.value = "Dogs bark."
    pieces, segments, w = attention_maps(minilm.model, minilm.tokenizer, "Dogs bark.")
    assert v.state["pieces"] == pieces == ["[CLS]", "dogs", "bark", ".", "[SEP]"]
    assert torch.equal(v.state["weights"], w)
    assert v.state["token"] == 3 and len(v.token.options) == 1 + 5
    v.text_a.value = "Hi"                          # the chosen token no longer exists
    assert v.state["token"] == ALL_TOKENS


def test_widget_rejects_a_non_pretrained():
    with pytest.raises(TypeError, match="pretrained must be the result of load_pretrained"):
        HeadView("minilm")


def test_draw_head_survey_shows_the_statistics(minilm):
    stats = head_statistics([attention_maps(minilm.model, minilm.tokenizer, A, B), attention_maps(minilm.model, minilm.tokenizer, "Dogs bark.")])
    fig = draw_head_survey(stats)
    for ax, pattern in zip(fig.axes, PATTERNS):
        np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()), stats[pattern].numpy())


def test_draw_head_view_checks_shapes():
    with pytest.raises(ValueError, match=r"must have shape \(3, 3\) for 3 pieces"):
        draw_head_view(["a", "b", "c"], {"matrix": torch.zeros(2, 2), "kept": torch.ones(2, 2, dtype=torch.bool),
                                         "lines": []})

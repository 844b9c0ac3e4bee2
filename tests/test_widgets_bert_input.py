"""Headless tests of the BERT input explorer (bertcourse.widgets.bert_input)."""
import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

matplotlib.use("Agg")

from matplotlib.colors import to_rgba  # noqa: E402

from bertcourse.bert import BERTEncoder, get_config, get_tokens_and_segments  # noqa: E402
from bertcourse.data import get_tokenizer  # noqa: E402
from bertcourse.widgets.bert_input import (COLUMNS, EXAMPLE_A, EXAMPLE_B, SEGMENT_COLORS,  # noqa: E402
                                           InputExplorer, describe_input, draw_embedding_sum,
                                           draw_input_table, embedding_parts, embedding_shapes)


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer()


def cells(fig, kind):
    """{gid: artist} of the table's rectangles (kind='patch') or texts (kind='text')."""
    ax = fig.axes[0]
    artists = ax.patches if kind == "patch" else ax.texts
    return {a.get_gid(): a for a in artists if a.get_gid()}


def assert_table_shows(fig, desc):
    patches, texts = cells(fig, "patch"), cells(fig, "text")
    n = len(desc["tokens"])
    assert sum(1 for g in patches if g.startswith("token:")) == n
    for i in range(n):
        assert texts[f"token:{i}"].get_text() == desc["tokens"][i]
        assert texts[f"id:{i}"].get_text() == str(desc["ids"][i])
        assert texts[f"segment:{i}"].get_text() == str(desc["segments"][i])
        assert texts[f"position:{i}"].get_text() == str(i)
        want = to_rgba(SEGMENT_COLORS[desc["segments"][i]])
        for row in ("position", "token", "id", "segment"):
            assert patches[f"{row}:{i}"].get_facecolor() == pytest.approx(want)


# --- describe_input ----------------------------------------------------------------------

def test_single_text(tok):
    d = describe_input(tok, EXAMPLE_A)
    words = tok.tokenize(EXAMPLE_A)
    assert d["tokens"] == ["[CLS]", *words, "[SEP]"]
    assert d["segments"] == [0] * (len(words) + 2)
    assert d["positions"] == list(range(len(words) + 2))
    assert d["ids"] == [tok.vocab.cls_id, *tok.encode(EXAMPLE_A), tok.vocab.sep_id]
    assert d["tokens_b"] is None and d["num_truncated"] == 0


def test_pair_matches_get_tokens_and_segments(tok):
    d = describe_input(tok, EXAMPLE_A, EXAMPLE_B)
    a, b = tok.tokenize(EXAMPLE_A), tok.tokenize(EXAMPLE_B)
    assert (d["tokens"], d["segments"]) == get_tokens_and_segments(a, b)
    # written out: 0 for [CLS], A and the first [SEP]; 1 for B and the last [SEP]
    assert d["segments"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert d["tokens"][len(a) + 1] == "[SEP]" and d["segments"][len(a) + 1] == 0
    assert d["tokens"][-1] == "[SEP]" and d["segments"][-1] == 1
    assert d["ids"] == tok.vocab.to_ids(d["tokens"])


@pytest.mark.parametrize("text_a, text_b", [
    (EXAMPLE_A, EXAMPLE_B),
    ("The Capital of Velora is Tarnum, by the river.", "Zorblaxiquent photography 2024!"),
    ("unbelievably gristfouka", None),
])
def test_agrees_with_hugging_face_bert_tokenizer(tok, text_a, text_b):
    """An independent oracle: Hugging Face's BertTokenizer given the course's vocabulary
    makes the same tokens, ids and token_type_ids (= our segment ids)."""
    from transformers import BertTokenizer
    hf = BertTokenizer(vocab={t: i for i, t in enumerate(tok.vocab.tokens)}, do_lower_case=True)
    enc = hf(text_a, text_b)
    d = describe_input(tok, text_a, text_b)
    assert d["ids"] == enc["input_ids"]
    assert d["segments"] == enc["token_type_ids"]
    assert d["tokens"] == hf.convert_ids_to_tokens(enc["input_ids"])


def test_rare_words_split_into_pieces(tok):
    d = describe_input(tok, "zorblaxiquent")
    pieces = d["tokens"][1:-1]
    assert len(pieces) >= 2 and all(p.startswith("##") for p in pieces[1:])
    assert pieces[0] + "".join(p[2:] for p in pieces[1:]) == "zorblaxiquent"


@pytest.mark.parametrize("text_b", ["", "   ", None])
def test_empty_b_means_single_text(tok, text_b):
    assert describe_input(tok, EXAMPLE_A, text_b) == describe_input(tok, EXAMPLE_A)


def test_truncation(tok):
    long_a, long_b = " ".join(["the river"] * 40), " ".join(["a town"] * 10)
    d = describe_input(tok, long_a, long_b, max_len=20)
    assert len(d["tokens"]) == 20
    assert d["num_truncated"] == 80 + 20 - 17
    assert d["segments"].count(1) == len(d["tokens_b"]) + 1
    # the longer sentence is cut first: B keeps its length while A is longer
    assert len(d["tokens_a"]) >= len(d["tokens_b"])
    single = describe_input(tok, long_a, max_len=10)
    assert single["tokens"] == ["[CLS]"] + tok.tokenize(long_a)[:8] + ["[SEP]"]
    assert single["num_truncated"] == 72
    assert describe_input(tok, EXAMPLE_A, max_len=64)["num_truncated"] == 0


@pytest.mark.parametrize("args, error, pattern", [
    (("not a tokenizer", "a"), TypeError, "tokenizer must be a WordPieceTokenizer"),
    ((None, ["the", "cat"]), TypeError, "text_a must be a str, got list"),
    ((None, "the cat", ["a"]), TypeError, "text_b must be a str or None, got list"),
    ((None, ""), ValueError, "text_a must contain at least one token, got ''"),
    ((None, "  "), ValueError, "text_a must contain at least one token"),
])
def test_describe_input_errors(tok, args, error, pattern):
    args = (tok if args[0] is None else args[0],) + args[1:]
    with pytest.raises(error, match=pattern):
        describe_input(*args)


def test_describe_input_max_len_errors(tok):
    with pytest.raises(ValueError, match=r"max_len must be >= 3 .*got 2"):
        describe_input(tok, "a", max_len=2)
    with pytest.raises(TypeError, match="max_len must be an int"):
        describe_input(tok, "a", max_len=3.0)


# --- shapes and embedding parts -----------------------------------------------------------

@pytest.fixture(scope="module")
def encoder(tok):
    torch.manual_seed(0)
    enc = BERTEncoder(get_config("tiny", vocab_size=len(tok))).eval()
    with torch.no_grad():       # a non-trivial layer-norm scale and shift
        enc.embedding_norm.weight.uniform_(0.5, 1.5)
        enc.embedding_norm.bias.uniform_(-0.5, 0.5)
    return enc


def test_embedding_shapes_are_those_of_a_real_encoder(tok, encoder):
    d = describe_input(tok, EXAMPLE_A, EXAMPLE_B)
    ids, segs = torch.tensor([d["ids"]] * 3), torch.tensor([d["segments"]] * 3)
    n = len(d["tokens"])
    shapes = embedding_shapes(encoder.config, n, batch=3)
    assert shapes["token"] == (tuple(encoder.token_embedding.weight.shape),
                               tuple(encoder.token_embedding(ids).shape))
    assert shapes["segment"] == (tuple(encoder.segment_embedding.weight.shape),
                                 tuple(encoder.segment_embedding(segs).shape))
    assert shapes["position"] == (tuple(encoder.pos_embedding.weight.shape),
                                  tuple(encoder.pos_embedding.weight[:n].shape))
    assert shapes["sum"] == (None, tuple(encoder.embed(ids, segs).shape))
    assert shapes["token"] == ((len(tok), 64), (3, n, 64))


def test_embedding_shapes_errors(encoder):
    with pytest.raises(ValueError, match=r"seq_len must be <= max_len=64 .*got 65"):
        embedding_shapes(encoder.config, 65)
    with pytest.raises(TypeError, match="config must be a BERTConfig"):
        embedding_shapes({"num_hiddens": 64}, 3)
    with pytest.raises(ValueError, match="seq_len must be > 0"):
        embedding_shapes(encoder.config, 0)


def test_embedding_parts_sum_and_norm_equal_embed(tok, encoder):
    d = describe_input(tok, EXAMPLE_A, EXAMPLE_B)
    ids, segs = torch.tensor(d["ids"]), torch.tensor(d["segments"])
    parts = embedding_parts(encoder, ids, segs)
    n = len(ids)
    torch.testing.assert_close(parts["token"], encoder.token_embedding.weight[ids].detach())
    torch.testing.assert_close(parts["segment"], encoder.segment_embedding.weight[segs].detach())
    torch.testing.assert_close(parts["position"], encoder.pos_embedding.weight[:n].detach())
    torch.testing.assert_close(parts["sum"], parts["token"] + parts["segment"] + parts["position"])
    ln = nn.functional.layer_norm(parts["sum"], (64,), encoder.embedding_norm.weight,
                                  encoder.embedding_norm.bias, encoder.config.norm_eps)
    torch.testing.assert_close(parts["normed"], ln.detach())
    with torch.no_grad():
        torch.testing.assert_close(parts["normed"], encoder.embed(ids[None], segs[None])[0])
    # the segment rows take only two values; repeated tokens repeat their token row
    assert torch.equal(parts["segment"][0], parts["segment"][len(tok.tokenize(EXAMPLE_A)) + 1])
    assert not torch.equal(parts["segment"][0], parts["segment"][-1])
    bank = [i for i, t in enumerate(d["tokens"]) if t == "bank"]
    assert len(bank) == 2 and torch.equal(parts["token"][bank[0]], parts["token"][bank[1]])
    assert not torch.equal(parts["sum"][bank[0]], parts["sum"][bank[1]])     # other segment, position
    assert all(not v.requires_grad for v in parts.values())


def test_embedding_parts_errors(encoder):
    with pytest.raises(TypeError, match="encoder must be a BERTEncoder"):
        embedding_parts(nn.Linear(2, 2), torch.tensor([1]), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"tokens must have shape \(seq,\)"):
        embedding_parts(encoder, torch.tensor([[1, 2]]), torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match=r"segments must have the shape of tokens \(2,\), got shape \(3,\)"):
        embedding_parts(encoder, torch.tensor([1, 2]), torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="segments must be 0 .* or 1"):
        embedding_parts(encoder, torch.tensor([1, 2]), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="tokens has 65 positions but max_len=64"):
        embedding_parts(encoder, torch.ones(65, dtype=torch.long), torch.zeros(65, dtype=torch.long))


# --- drawing -------------------------------------------------------------------------------

def test_draw_input_table(tok, encoder):
    d = describe_input(tok, EXAMPLE_A, EXAMPLE_B)
    n = len(d["tokens"])
    fig = draw_input_table(d, embedding_shapes(encoder.config, n))
    assert_table_shows(fig, d)
    shape_lines = {t.get_gid(): t.get_text() for t in fig.texts}
    assert "(3000, 64)" in shape_lines["shape:token"] and f"(1, {n}, 64)" in shape_lines["shape:token"]
    assert "(2, 64)" in shape_lines["shape:segment"]
    assert "(64, 64)" in shape_lines["shape:position"] and f"({n}, 64)" in shape_lines["shape:position"]
    assert f"(1, {n}, 64)" in shape_lines["shape:sum"]
    # tokens wrap after COLUMNS per line: token COLUMNS starts the second line
    texts = cells(fig, "text")
    assert texts[f"token:{COLUMNS}"].get_position()[0] == texts["token:0"].get_position()[0]
    assert texts[f"token:{COLUMNS}"].get_position()[1] > texts["token:0"].get_position()[1]
    # special tokens bold, ## pieces italic
    assert texts["token:0"].get_fontweight() == "bold"
    d2 = describe_input(tok, "zorblaxiquent")
    texts2 = cells(draw_input_table(d2), "text")
    assert texts2["token:2"].get_text().startswith("##") and texts2["token:2"].get_fontstyle() == "italic"
    assert texts2["token:1"].get_fontstyle() == "normal"


def test_draw_input_table_errors():
    with pytest.raises(TypeError, match="desc must be the dict returned by describe_input"):
        draw_input_table({"tokens": ["a"]})
    with pytest.raises(ValueError, match="at least one token"):
        draw_input_table({"tokens": [], "segments": [], "positions": [], "ids": []})
    with pytest.raises(ValueError, match="must all have 2 entries"):
        draw_input_table({"tokens": ["a", "b"], "segments": [0], "positions": [0, 1], "ids": [5, 6]})


def test_draw_embedding_sum(tok, encoder):
    d = describe_input(tok, EXAMPLE_A, "the river is long.")
    parts = embedding_parts(encoder, torch.tensor(d["ids"]), torch.tensor(d["segments"]))
    fig = draw_embedding_sum(d["tokens"], parts)
    assert len(fig.axes) == 5 + 5                  # five panels and their colour bars
    for ax, key in zip(fig.axes, ["token", "segment", "position", "sum", "normed"]):
        np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), parts[key].numpy())
        assert [t.get_text() for t in ax.get_yticklabels()] == d["tokens"]
    without = {k: v for k, v in parts.items() if k != "normed"}
    assert len(draw_embedding_sum(d["tokens"], without).axes) == 8
    with pytest.raises(ValueError, match=r"missing \['position'\]"):
        draw_embedding_sum(d["tokens"], {k: v for k, v in parts.items() if k != "position"})
    with pytest.raises(ValueError, match=r"parts\['sum'\] must have shape \(seq=\d+, num_hiddens=64\)"):
        draw_embedding_sum(d["tokens"], {**parts, "sum": parts["sum"][:3]})
    with pytest.raises(TypeError, match="tokens must be a list of str"):
        draw_embedding_sum("the river", parts)


# --- the widget ----------------------------------------------------------------------------

@pytest.fixture
def explorer(tok):
    w = InputExplorer(tokenizer=tok)
    yield w
    import matplotlib.pyplot as plt
    plt.close("all")


def test_initial_state_is_a_single_text(explorer, tok):
    s = explorer.state
    assert s["tokens"] == get_tokens_and_segments(tok.tokenize(EXAMPLE_A))[0]
    assert set(s["segments"]) == {0} and s["tokens_b"] is None
    assert s["positions"] == list(range(len(s["tokens"])))
    assert "single text" in s["message"] and explorer.info.value == f"<b>{s['message']}</b>"
    assert_table_shows(explorer.figure, s)
    assert explorer.output.value.startswith('<img src="data:image/png;base64,')


def test_typing_sentence_b_makes_a_pair(explorer, tok):
    explorer.text_b.value = EXAMPLE_B
    s = explorer.state
    a, b = tok.tokenize(EXAMPLE_A), tok.tokenize(EXAMPLE_B)
    assert (s["tokens"], s["segments"]) == get_tokens_and_segments(a, b)
    assert s["ids"] == tok.vocab.to_ids(s["tokens"])
    assert s["positions"] == list(range(len(a) + len(b) + 3))
    assert f"segment 0 for positions 0..{len(a) + 1}, segment 1 for {len(a) + 2}.." in s["message"]
    assert s["shapes"] == embedding_shapes(explorer.config, len(s["tokens"]))
    assert_table_shows(explorer.figure, s)
    colours = {p.get_facecolor() for p in explorer.figure.axes[0].patches if p.get_gid()}
    assert colours == {to_rgba(SEGMENT_COLORS[0]), to_rgba(SEGMENT_COLORS[1])}
    # emptying sentence B gives the single text back
    explorer.text_b.value = "   "
    assert explorer.state["tokens_b"] is None and set(explorer.state["segments"]) == {0}


def test_typed_text_is_word_pieced(explorer, tok):
    explorer.text_a.value = "Gristfouka plays photography"
    s = explorer.state
    assert s["tokens"] == ["[CLS]", *tok.tokenize("gristfouka plays photography"), "[SEP]"]
    assert any(t.startswith("##") for t in s["tokens"])
    pieces = sum(t.startswith("##") for t in s["tokens"])
    assert f"{pieces} WordPiece continuation piece" in s["message"]
    assert_table_shows(explorer.figure, s)


def test_empty_a_shows_a_message_and_recovers(explorer, tok):
    explorer.text_b.value = "the river"
    explorer.text_a.value = "   "
    s = explorer.state
    assert s["tokens"] == [] and s["shapes"] is None
    assert "Type sentence A" in s["message"]
    assert "Type sentence A" in explorer.figure.axes[0].texts[0].get_text()
    explorer.text_b.value = "another b"                      # no crash either
    assert explorer.state["tokens"] == []
    explorer.text_a.value = "the bank"
    want = get_tokens_and_segments(tok.tokenize("the bank"), tok.tokenize("another b"))
    assert (explorer.state["tokens"], explorer.state["segments"]) == want
    assert_table_shows(explorer.figure, explorer.state)


def test_too_long_input_is_truncated_to_max_len(explorer):
    explorer.text_a.value = " ".join(["the capital of velora is tarnum."] * 12)
    s = explorer.state
    assert len(s["tokens"]) == explorer.config.max_len == 64
    assert s["num_truncated"] > 0 and "were cut" in s["message"]
    assert_table_shows(explorer.figure, s)


def test_custom_config_changes_the_shapes(tok):
    cfg = get_config("tiny", vocab_size=len(tok), num_hiddens=32, max_len=16)
    w = InputExplorer("the river", "the bank", tokenizer=tok, config=cfg)
    assert w.state["shapes"]["token"] == ((len(tok), 32), (1, 7, 32))
    assert w.state["shapes"]["position"] == ((16, 32), (7, 32))
    with pytest.raises(ValueError, match="config.vocab_size must be >= the tokenizer's"):
        InputExplorer(tokenizer=tok, config=get_config("tiny", vocab_size=100))

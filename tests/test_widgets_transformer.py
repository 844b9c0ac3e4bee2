"""Headless tests of the Transformer attention explorer (bertcourse.widgets.transformer),
on a small model trained for a moment on the date task."""
import math

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

from bertcourse.attention import masked_softmax, store_attention_weights  # noqa: E402
from bertcourse.seq2seq import make_date_dataset, train_seq2seq, translate  # noqa: E402
from bertcourse.transformer import EncoderDecoder, TransformerDecoder, TransformerEncoder  # noqa: E402
from bertcourse.utils import set_seed  # noqa: E402
from bertcourse.widgets.transformer import (KINDS, TransformerAttentionExplorer,  # noqa: E402
                                            draw_attention_map, example_attention)


@pytest.fixture(scope="module")
def setup():
    ds = make_date_dataset(num_train=3000, num_valid=20)
    set_seed(0)
    model = EncoderDecoder(TransformerEncoder(len(ds.src_vocab), 32, 64, 4, 2, max_len=16),
                           TransformerDecoder(len(ds.tgt_vocab), 32, 64, 4, 2, max_len=16))
    store_attention_weights(model, False)
    train_seq2seq(model, ds.train, ds.src_vocab, ds.tgt_vocab, num_steps=40, batch_size=64,
                  warmup=10, progress=False)
    return ds, model, [s for s, _ in ds.valid[:4]]


def manual_first_layer_weights(model, src, dec_in):
    """Layer-0 attention weights computed by hand from the projection matrices."""
    def heads(x, lin, h):
        b, n, d = x.shape
        return lin(x).view(b, n, h, d // h).transpose(1, 2)
    enc, dec = model.encoder, model.decoder
    X = enc.embedding(src)
    att = enc.blks[0].attention
    h = att.num_heads
    q, k = heads(X, att.W_q, h), heads(X, att.W_k, h)
    enc_w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)
    Y = dec.embedding(dec_in)
    att = dec.blks[0].attention1
    q, k = heads(Y, att.W_q, h), heads(Y, att.W_k, h)
    dec_w = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), causal=True)
    return enc_w[0], dec_w[0]


def test_example_attention_shapes_and_values(setup):
    ds, model, sources = setup
    m = example_attention(model, sources[0], ds.src_vocab, ds.tgt_vocab)
    S, T = len(sources[0]), len(m["prediction"]) + 1
    assert m["prediction"] == translate(model, [sources[0]], ds.src_vocab, ds.tgt_vocab)[0]
    assert m["dec_inputs"][0] == "<bos>" and m["dec_outputs"][-1] == "<eos>"
    assert m["encoder self"].shape == (2, 4, S, S)
    assert m["decoder self"].shape == (2, 4, T, T)
    assert m["cross"].shape == (2, 4, T, S)
    for kind in KINDS:
        torch.testing.assert_close(m[kind].sum(-1), torch.ones(m[kind].shape[:-1]))
    src = torch.tensor([ds.src_vocab.encode(sources[0])])
    dec_in = torch.tensor([ds.tgt_vocab.encode(m["dec_inputs"][1:])])
    dec_in = torch.cat([torch.tensor([[ds.tgt_vocab.bos_id]]), dec_in], 1)
    with torch.no_grad():
        enc_w, dec_w = manual_first_layer_weights(model, src, dec_in)
    torch.testing.assert_close(m["encoder self"][0], enc_w, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(m["decoder self"][0], dec_w, atol=1e-5, rtol=1e-4)
    # the model's fast path is restored afterwards
    assert all(not blk.attention.attention.store_weights for blk in model.encoder.blks)


def test_decoder_self_attention_is_causal_in_every_layer_and_head(setup):
    ds, model, sources = setup
    m = example_attention(model, sources[1], ds.src_vocab, ds.tgt_vocab)
    w = m["decoder self"]
    T = w.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert (w[..., future] == 0).all()
    assert (w[..., ~future] > 0).all()


def test_widget_controls_drive_the_heatmap(setup):
    ds, model, sources = setup
    w = TransformerAttentionExplorer(model, sources, ds.src_vocab, ds.tgt_vocab)
    assert w.state["kind"] == "cross" and w.state["example"] == 0
    w.example.value = 2
    w.kind.value = "decoder self"
    w.layer.value = 1
    w.head.value = 3
    s = w.state
    m = example_attention(model, sources[2], ds.src_vocab, ds.tgt_vocab)
    torch.testing.assert_close(s["weights"], m["decoder self"][1, 3])
    img = np.asarray(w.figure.axes[0].images[0].get_array())
    np.testing.assert_allclose(img, m["decoder self"][1, 3].numpy())
    assert np.triu(img, k=1).max() == 0                             # causal structure visible
    labels = [t.get_text() for t in w.figure.axes[0].get_xticklabels()]
    assert labels == m["dec_inputs"]
    rows = [t.get_text() for t in w.figure.axes[0].get_yticklabels()]
    assert rows[0] == f"<bos> → {m['dec_outputs'][0]}" and rows[-1].endswith("→ <eos>")
    w.kind.value = "cross"
    assert [t.get_text() for t in w.figure.axes[0].get_xticklabels()] == sources[2]
    np.testing.assert_allclose(np.asarray(w.figure.axes[0].images[0].get_array()), m["cross"][1, 3].numpy())
    w.kind.value = "encoder self"
    assert w.state["weights"].shape == (len(sources[2]), len(sources[2]))
    assert "prediction" in w.info.value and "".join(m["prediction"]) in w.info.value


def test_draw_attention_map_checks_labels():
    with pytest.raises(ValueError, match=r"need 2 row labels and 3 column labels"):
        draw_attention_map(torch.zeros(2, 3), ["a"], ["x", "y", "z"])
    fig = draw_attention_map(torch.eye(2), ["a", "b"], ["x", "y"], "t")
    assert fig.axes[0].get_title() == "t"

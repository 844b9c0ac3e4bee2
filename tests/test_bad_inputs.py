"""Every wrong input gets a named error.

A table of learner-style mistakes across the public API: wrong types, wrong shapes and
widths, empty inputs, float or out-of-range token ids, negative / zero / NaN / infinite
numbers, a bool for an int, a str for a list, missing and damaged files. Each row says
which exception must come (``ValueError`` / ``TypeError``; ``FileNotFoundError`` for
paths) and which words its message must contain: at least the name of the argument (or
file) that is wrong. A raw error from inside torch or Python (``mat1 and mat2 shapes
cannot be multiplied``, ``IndexError``, ``ZeroDivisionError``, ``JSONDecodeError`` …)
or no error at all fails the row.
"""
from __future__ import annotations

import datetime
import functools
import json
import random
from pathlib import Path

import pytest
import torch
from tiny_bert import command_in_this_process

from bertcourse import inspection as A
from bertcourse import attention as att
from bertcourse import bert as B
from bertcourse import corpus as C
from bertcourse import data as D
from bertcourse import pretrained_bert as H
from bertcourse import positional as P
from bertcourse import pretrain as PT
from bertcourse import seq2seq as S
from bertcourse import training as TR
from bertcourse import transformer as T
from bertcourse import utils as U
from bertcourse.widgets import attention as w_att
from bertcourse.widgets import bert_input as w_in
from bertcourse.widgets import drawing as w_draw
from bertcourse.pretrain.__main__ import main as pretrain_main
from bertcourse.distributed import device_of
from bertcourse.exercises.core import message_of
from bertcourse.widgets import fill_mask as w_fill
from bertcourse.widgets import head_view as w_head
from bertcourse.widgets import masking as w_mask
from bertcourse.widgets import nsp as w_nsp
from bertcourse.widgets import positional as w_pos
from bertcourse.widgets import transformer as w_tr

NAN, INF = float("nan"), float("inf")
DateVocab = S.DateVocab


# ----------------------------------------------------------------------------------------
# What the rows work on: small models, a toy vocabulary, a tiny checkpoint
# ----------------------------------------------------------------------------------------

SENTENCES = ["the cat sat on the mat.", "the dog ate the bone.", "a bird sang in the tree.",
             "the capital of wehothary is tarnum.", "she plays the drum every day."] * 3


class Env:
    """Lazily built objects shared by the rows (one instance per test module)."""

    tmp: Path   # set per row: a fresh folder
    module_tmp: Path   # set once per module (_module_tmp)

    @functools.cached_property
    def cfg(self):
        return B.BERTConfig(vocab_size=50, num_hiddens=16, ffn_num_hiddens=32, num_heads=2,
                            num_blks=1, max_len=12, dropout=0.0)

    @functools.cached_property
    def bert(self):
        torch.manual_seed(0)
        return B.BERTModel(self.cfg).eval()

    @property
    def enc(self):
        return self.bert.encoder

    @functools.cached_property
    def tokens(self):
        return torch.randint(5, 50, (2, 5), generator=torch.Generator().manual_seed(0))

    @functools.cached_property
    def X(self):
        return torch.randn(2, 5, 16)

    @functools.cached_property
    def vocab(self):     # ids 0..19
        return D.Vocab(list(D.SPECIAL_TOKENS) + [f"w{i}" for i in range(5, 20)])

    @functools.cached_property
    def tok(self):
        return D.train_wordpiece(SENTENCES, vocab_size=80, min_frequency=1)

    @functools.cached_property
    def corpus(self):
        return C.generate_corpus(0, paragraphs_per_country=2, paragraphs_per_town=0,
                                 paragraphs_per_animal=0, paragraphs_per_person=0,
                                 held_out_fraction=0.2)

    @functools.cached_property
    def paragraphs(self):
        return [list(p) for p in self.corpus.train[:6]]

    @functools.cached_property
    def src_vocab(self):
        return S.src_vocab_for_dates()

    @functools.cached_property
    def tgt_vocab(self):
        return S.tgt_vocab_for_dates()

    @functools.cached_property
    def seq2seq(self):
        torch.manual_seed(0)
        enc = T.TransformerEncoder(len(self.src_vocab), 16, 32, 2, 1)
        dec = T.TransformerDecoder(len(self.tgt_vocab), 16, 32, 2, 1)
        return T.EncoderDecoder(enc, dec).eval()

    @property
    def pair(self):
        return (S.spell_date(datetime.date(1999, 3, 21)), S.iso_date(datetime.date(1999, 3, 21)))

    @functools.cached_property
    def ckpt(self) -> Path:
        """A tiny Hugging Face-format BertForPreTraining checkpoint, written from a course
        model through the inverse of NAME_MAP (no transformers needed). In a folder of this
        module's tmp_path_factory (see _module_tmp): pytest removes it, a mkdtemp would stay."""
        from safetensors.torch import save_file
        folder = self.module_tmp / "ckpt"
        folder.mkdir()
        torch.manual_seed(1)
        model = B.BERTModel(self.cfg)
        tensors = {"bert." + H._expected_hf_name(n, "") if not n.startswith(("mlm.", "nsp.")) else
                   H._expected_hf_name(n, ""): p.detach().clone().contiguous()
                   for n, p in model.named_parameters()}
        save_file(tensors, str(folder / "model.safetensors"))
        hf = dict(model_type="bert", vocab_size=50, hidden_size=16, intermediate_size=32,
                  num_attention_heads=2, num_hidden_layers=1, max_position_embeddings=12,
                  hidden_act="gelu", layer_norm_eps=1e-12, type_vocab_size=2)
        (folder / "config.json").write_text(json.dumps(hf))
        words = list(D.SPECIAL_TOKENS) + [f"w{i}" for i in range(5, 50)]
        (folder / "vocab.txt").write_text("\n".join(words) + "\n")
        return folder

    @functools.cached_property
    def pretrained(self):
        return H.load_pretrained(self.ckpt)

    @functools.cached_property
    def cfg_tok(self):
        """A tiny BERT whose vocabulary fits the toy tokenizer ``tok``."""
        return B.BERTConfig(vocab_size=len(self.tok), num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1,
                            max_len=64, dropout=0.0)

    @functools.cached_property
    def bert_tok(self):
        torch.manual_seed(0)
        return B.BERTModel(self.cfg_tok).eval()

    @functools.cached_property
    def clf(self):
        from bertcourse.finetune import BERTClassifier, ClassifierConfig
        torch.manual_seed(0)
        model = BERTClassifier(ClassifierConfig(self.cfg_tok, dropout=0.0)).eval()
        model.trained_steps.fill_(1)    # predict_proba refuses an untrained head unless told
        return model

    @functools.cached_property
    def reviews(self):
        from bertcourse.reviews import load_sentiment
        return load_sentiment().train[:8]

    def review_batch(self, labels, n: int | None = None) -> dict:
        """A collate_reviews batch of ``n`` (default ``len(labels)``) short sentences for ``clf``,
        whose labels are then replaced by ``labels`` (a list, or a tensor taken as it is)."""
        from bertcourse.reviews import collate_reviews, encode_texts
        n = len(labels) if n is None else n
        ids, _ = encode_texts(self.tok, ["the cat sat", "a dog"] * n)
        batch = collate_reviews([(torch.tensor(i), 0) for i in ids[:n]])
        batch["labels"] = labels if isinstance(labels, torch.Tensor) else torch.tensor(labels)
        return batch

    def copy_ckpt(self, **files) -> Path:
        """A copy of the tiny checkpoint in a fresh folder; ``files`` replace (bytes/str) or,
        with None, delete files of it."""
        import shutil
        folder = self.tmp / "ckpt"
        shutil.copytree(self.ckpt, folder)
        for name, content in files.items():
            name = name.replace("__", ".")
            if content is None:
                (folder / name).unlink()
            elif isinstance(content, bytes):
                (folder / name).write_bytes(content)
            else:
                (folder / name).write_text(content)
        return folder

    def file(self, name: str, content: str) -> Path:
        """A file ``name`` with ``content`` in the row's folder."""
        (self.tmp / name).write_text(content)
        return self.tmp / name

    def hf_config(self, **changes) -> dict:
        cfg = json.loads((self.ckpt / "config.json").read_text())
        cfg.update(changes)
        return cfg

    def weights(self, seq=5):
        return torch.full((2, 3, seq, seq), 1.0 / seq)


ENV = Env()


@pytest.fixture(scope="module", autouse=True)
def _module_tmp(tmp_path_factory):
    """A folder for what ENV builds once per module (the tiny checkpoint)."""
    ENV.module_tmp = tmp_path_factory.mktemp("bad_inputs")


# ----------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------

def row(id, exc, names, fn, *marks):
    names = (names,) if isinstance(names, str) else tuple(names)
    return pytest.param(fn, exc, names, id=id, marks=list(marks))


VE, TE, FE = ValueError, TypeError, FileNotFoundError
X3 = lambda *shape, dtype=torch.float32: torch.zeros(*shape, dtype=dtype)
L = torch.long

ATTENTION = [
    row("causal_mask-zero", VE, "num_queries", lambda e: att.causal_mask(0)),
    row("causal_mask-float", TE, "num_queries", lambda e: att.causal_mask(2.5)),
    row("causal_mask-bool", TE, "num_queries", lambda e: att.causal_mask(True)),
    row("causal_mask-fewer-keys", VE, "num_keys", lambda e: att.causal_mask(3, 2)),
    row("masked_softmax-list", TE, "scores", lambda e: att.masked_softmax([[1.0, 2.0]])),
    row("masked_softmax-2d", VE, "scores", lambda e: att.masked_softmax(X3(2, 3))),
    row("masked_softmax-int", TE, "scores", lambda e: att.masked_softmax(X3(2, 3, 4, dtype=L))),
    row("masked_softmax-float-lens", TE, "valid_lens",
        lambda e: att.masked_softmax(X3(2, 3, 4), torch.tensor([1.5, 2.0]))),
    row("masked_softmax-lens-too-long", VE, "valid_lens",
        lambda e: att.masked_softmax(X3(2, 3, 4), torch.tensor([5, 1]))),
    row("masked_softmax-negative-lens", VE, "valid_lens",
        lambda e: att.masked_softmax(X3(2, 3, 4), torch.tensor([-1, 2]))),
    row("masked_softmax-lens-batch", VE, "valid_lens",
        lambda e: att.masked_softmax(X3(2, 3, 4), torch.tensor([1, 2, 3]))),
    row("masked_softmax-lens-list", TE, "valid_lens", lambda e: att.masked_softmax(X3(2, 3, 4), [1, 2])),
    row("masked_softmax-bool-mask-shape", VE, "valid_lens",
        lambda e: att.masked_softmax(X3(2, 3, 4), torch.ones(2, 5, dtype=torch.bool))),
    row("masked_softmax-causal-str", TE, "causal", lambda e: att.masked_softmax(X3(2, 3, 3), causal="yes")),
    row("dpa-scale-str", TE, "scale",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), scale="2")),
    row("dpa-scale-nan", VE, "scale",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), scale=NAN)),
    row("dpa-scale-inf", VE, "scale",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), scale=INF)),
    row("dpa-scale-negative", VE, "scale",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), scale=-1.0)),
    row("dpa-dropout-negative", VE, "dropout_p",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), dropout_p=-0.5)),
    row("dpa-dropout-one", VE, "dropout_p",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), dropout_p=1.0)),
    row("dpa-dropout-nan", VE, "dropout_p",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), dropout_p=NAN)),
    row("dpa-dropout-str", TE, "dropout_p",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), dropout_p="0.1")),
    row("dpa-need-weights-str", TE, "need_weights",
        lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 3, 4), need_weights="no")),
    row("dpa-queries-list", TE, "queries", lambda e: att.dot_product_attention([[1.0]], X3(2, 3, 4), X3(2, 3, 4))),
    row("dpa-queries-int", TE, "queries",
        lambda e: att.dot_product_attention(X3(2, 3, 4, dtype=L), X3(2, 3, 4), X3(2, 3, 4))),
    row("dpa-keys-width", VE, "keys", lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 5), X3(2, 3, 4))),
    row("dpa-keys-rank", VE, "keys", lambda e: att.dot_product_attention(X3(2, 3, 4), X3(3, 4), X3(2, 3, 4))),
    row("dpa-values-length", VE, "values", lambda e: att.dot_product_attention(X3(2, 3, 4), X3(2, 3, 4), X3(2, 2, 4))),
    row("dpa-empty-queries", VE, "queries", lambda e: att.dot_product_attention(X3(2, 0, 4), X3(2, 3, 4), X3(2, 3, 4))),
    row("DotProductAttention-dropout", VE, "dropout", lambda e: att.DotProductAttention(1.5)),
    row("DotProductAttention-dropout-nan", VE, "dropout", lambda e: att.DotProductAttention(NAN)),
    row("DotProductAttention-dropout-str", TE, "dropout", lambda e: att.DotProductAttention("0.1")),
    row("MHA-heads-divide", VE, "num_heads", lambda e: att.MultiHeadAttention(16, 3)),
    row("MHA-heads-zero", VE, "num_heads", lambda e: att.MultiHeadAttention(16, 0)),
    row("MHA-hiddens-float", TE, "num_hiddens", lambda e: att.MultiHeadAttention(16.0, 2)),
    row("MHA-heads-bool", TE, "num_heads", lambda e: att.MultiHeadAttention(16, True)),
    row("MHA-dropout-negative", VE, "dropout", lambda e: att.MultiHeadAttention(16, 2, dropout=-0.1)),
    row("MHA-bias-str", TE, "bias", lambda e: att.MultiHeadAttention(16, 2, bias="yes")),
    row("MHA-width", VE, "queries", lambda e: att.MultiHeadAttention(16, 2)(X3(2, 5, 8), X3(2, 5, 8), X3(2, 5, 8))),
    row("MHA-batch", VE, "batch", lambda e: att.MultiHeadAttention(16, 2)(X3(2, 5, 16), X3(3, 5, 16), X3(3, 5, 16))),
    row("MHA-empty-seq", VE, "queries",
        lambda e: att.MultiHeadAttention(16, 2)(X3(2, 0, 16), X3(2, 0, 16), X3(2, 0, 16))),
    row("MHA-empty-keys", VE, "keys",
        lambda e: att.MultiHeadAttention(16, 2)(X3(2, 3, 16), X3(2, 0, 16), X3(2, 0, 16))),
    row("MHA-float-lens", TE, "valid_lens",
        lambda e: att.MultiHeadAttention(16, 2)(e.X, e.X, e.X, torch.tensor([2.0, 3.0]))),
    row("store_attention_weights-str", TE, "model", lambda e: att.store_attention_weights("model")),
    row("store_attention_weights-on-str", TE, "on", lambda e: att.store_attention_weights(e.bert, on="off")),
    row("inspect_attention-str", TE, "model", lambda e: att.inspect_attention("model").__enter__()),
    row("inspect_attention-keep-str", TE, "keep_weights",
        lambda e: att.inspect_attention(e.bert, keep_weights="no").__enter__()),
    row("inspect_attention-eval-int", TE, "eval_mode",
        lambda e: att.inspect_attention(e.bert, eval_mode=0).__enter__()),
    row("entropy-list", TE, "weights", lambda e: att.entropy([0.5, 0.5])),
    row("entropy-int", TE, "weights", lambda e: att.entropy(torch.tensor([1, 0]))),
    row("entropy-scalar", VE, "weights", lambda e: att.entropy(torch.tensor(0.5))),
]

POSITIONAL = [
    row("sinusoidal-max_len-zero", VE, "max_len", lambda e: P.sinusoidal_encoding(0, 16)),
    row("sinusoidal-hiddens-float", TE, "num_hiddens", lambda e: P.sinusoidal_encoding(10, 16.0)),
    row("sinusoidal-dtype-long", TE, "dtype", lambda e: P.sinusoidal_encoding(10, 16, dtype=torch.long)),
    row("sinusoidal-dtype-str", TE, "dtype", lambda e: P.sinusoidal_encoding(10, 16, dtype="float32")),
    row("frequencies-zero", VE, "num_hiddens", lambda e: P.frequencies(0)),
    row("frequencies-dtype-int", TE, "dtype", lambda e: P.frequencies(8, dtype=torch.int32)),
    row("relative_rotation-offset-float", TE, "offset", lambda e: P.relative_rotation(1.5, 8)),
    row("relative_rotation-odd", VE, "num_hiddens", lambda e: P.relative_rotation(1, 7)),
    row("relative_rotation-dtype", TE, "dtype", lambda e: P.relative_rotation(1, 8, dtype=torch.long)),
    row("PositionalEncoding-dropout", VE, "dropout", lambda e: P.PositionalEncoding(16, dropout=1.0)),
    row("PositionalEncoding-dropout-inf", VE, "dropout", lambda e: P.PositionalEncoding(16, dropout=INF)),
    row("PositionalEncoding-hiddens-zero", VE, "num_hiddens", lambda e: P.PositionalEncoding(0)),
    row("PositionalEncoding-hiddens-str", TE, "num_hiddens", lambda e: P.PositionalEncoding("16")),
    row("PositionalEncoding-max_len-zero", VE, "max_len", lambda e: P.PositionalEncoding(16, max_len=0)),
    row("PositionalEncoding-width", VE, "X", lambda e: P.PositionalEncoding(16)(X3(2, 5, 8))),
    row("PositionalEncoding-too-long", VE, "max_len", lambda e: P.PositionalEncoding(16, max_len=10)(X3(2, 11, 16))),
    row("PositionalEncoding-offset-negative", VE, "offset", lambda e: P.PositionalEncoding(16)(e.X, offset=-1)),
    row("PositionalEncoding-offset-float", TE, "offset", lambda e: P.PositionalEncoding(16)(e.X, offset=1.0)),
    row("PositionalEncoding-long", TE, "X", lambda e: P.PositionalEncoding(16)(X3(2, 5, 16, dtype=L))),
    row("Learned-max_len-zero", VE, "max_len", lambda e: P.LearnedPositionalEmbedding(0, 16)),
    row("Learned-too-long", VE, "max_len", lambda e: P.LearnedPositionalEmbedding(10, 16)(X3(2, 11, 16))),
    row("Learned-list", TE, "X", lambda e: P.LearnedPositionalEmbedding(10, 16)([[0.0]])),
    row("Learned-width", VE, "X", lambda e: P.LearnedPositionalEmbedding(10, 16)(X3(2, 5, 4))),
]

TRANSFORMER = [
    row("get_activation-unknown", VE, "activation", lambda e: T.get_activation("swish")),
    row("get_activation-list", TE, "activation", lambda e: T.get_activation(["relu"])),
    row("FFN-width", VE, "X", lambda e: T.PositionWiseFFN(8, 16)(X3(2, 3, 5))),
    row("FFN-list", TE, "X", lambda e: T.PositionWiseFFN(8, 16)([[1.0] * 8])),
    row("FFN-ffn-zero", VE, "ffn_num_hiddens", lambda e: T.PositionWiseFFN(8, 0)),
    row("FFN-activation", VE, "activation", lambda e: T.PositionWiseFFN(8, 16, activation="tanh")),
    row("AddNorm-Y-width", VE, "Y", lambda e: T.AddNorm(8)(X3(2, 3, 8), X3(2, 3, 4))),
    row("AddNorm-X-width", VE, "X", lambda e: T.AddNorm(8)(X3(2, 3, 4), X3(2, 3, 4))),
    row("AddNorm-list", TE, "X", lambda e: T.AddNorm(8)([[0.0] * 8], X3(1, 8))),
    row("AddNorm-hiddens-zero", VE, "num_hiddens", lambda e: T.AddNorm(0)),
    row("AddNorm-eps-negative", VE, "eps", lambda e: T.AddNorm(8, eps=-1.0)),
    row("AddNorm-eps-nan", VE, "eps", lambda e: T.AddNorm(8, eps=NAN)),
    row("AddNorm-eps-str", TE, "eps", lambda e: T.AddNorm(8, eps="1e-5")),
    row("AddNorm-dropout-nan", VE, "dropout", lambda e: T.AddNorm(8, dropout=NAN)),
    row("EncoderBlock-heads", VE, "num_heads", lambda e: T.EncoderBlock(16, 32, 3)),
    row("EncoderBlock-norm_eps", VE, "norm_eps", lambda e: T.EncoderBlock(16, 32, 2, norm_eps=-1.0)),
    row("EncoderBlock-activation", VE, "activation", lambda e: T.EncoderBlock(16, 32, 2, activation="gelu2")),
    row("EncoderBlock-width", VE, "X", lambda e: T.EncoderBlock(16, 32, 2)(X3(2, 5, 8))),
    row("EncoderBlock-lens", VE, "valid_lens", lambda e: T.EncoderBlock(16, 32, 2)(e.X, torch.tensor([9, 9]))),
    row("EncoderBlock-empty", VE, "X", lambda e: T.EncoderBlock(16, 32, 2)(X3(2, 0, 16))),
    row("DecoderBlock-memory-width", VE, "enc_outputs", lambda e: T.DecoderBlock(16, 32, 2)(e.X, X3(2, 4, 8))),
    row("DecoderBlock-memory-batch", VE, "enc_outputs", lambda e: T.DecoderBlock(16, 32, 2)(e.X, X3(3, 4, 16))),
    row("DecoderBlock-cache-list", TE, "cache", lambda e: T.DecoderBlock(16, 32, 2)(e.X, X3(2, 4, 16), cache=[])),
    row("DecoderBlock-causal-str", TE, "causal", lambda e: T.DecoderBlock(16, 32, 2, causal="no")),
    row("TransformerEmbedding-float-ids", TE, "tokens",
        lambda e: T.TransformerEmbedding(100, 16)(torch.tensor([[1.0, 2.0]]))),
    row("TransformerEmbedding-id-too-big", VE, "tokens",
        lambda e: T.TransformerEmbedding(100, 16)(torch.tensor([[1, 100]]))),
    row("TransformerEmbedding-negative-id", VE, "tokens",
        lambda e: T.TransformerEmbedding(100, 16)(torch.tensor([[-1, 2]]))),
    row("TransformerEmbedding-vocab-zero", VE, "vocab_size", lambda e: T.TransformerEmbedding(0, 16)),
    row("TransformerEmbedding-dropout", VE, "dropout", lambda e: T.TransformerEmbedding(100, 16, dropout=2)),
    row("TransformerEncoder-empty", VE, "tokens", lambda e: e.seq2seq.encoder(torch.zeros(2, 0, dtype=L))),
    row("TransformerEncoder-1d", VE, "tokens", lambda e: e.seq2seq.encoder(torch.tensor([3, 4]))),
    row("TransformerEncoder-float", TE, "tokens", lambda e: e.seq2seq.encoder(torch.tensor([[3.0, 4.0]]))),
    row("TransformerEncoder-id-too-big", VE, "tokens", lambda e: e.seq2seq.encoder(torch.tensor([[3, 999]]))),
    row("TransformerEncoder-blks-zero", VE, "num_blks", lambda e: T.TransformerEncoder(10, 16, 32, 2, 0)),
    row("TransformerEncoder-too-long", VE, "max_len",
        lambda e: T.TransformerEncoder(10, 16, 32, 2, 1, max_len=8)(torch.ones(1, 9, dtype=L))),
    row("TransformerEncoder-lens-float", TE, "valid_lens",
        lambda e: e.seq2seq.encoder(torch.ones(2, 3, dtype=L), torch.tensor([1.0, 2.0]))),
    row("TransformerDecoder-memory", VE, "enc_outputs",
        lambda e: e.seq2seq.decoder(torch.ones(2, 3, dtype=L), X3(2, 4, 8))),
    row("TransformerDecoder-cache-dict", TE, "cache",
        lambda e: e.seq2seq.decoder(torch.ones(2, 3, dtype=L), X3(2, 4, 16), cache={})),
    row("TransformerDecoder-id-too-big", VE, "tokens",
        lambda e: e.seq2seq.decoder(torch.tensor([[1, 99]]), X3(1, 4, 16))),
    row("EncoderDecoder-decoder-str", TE, "decoder", lambda e: T.EncoderDecoder(e.seq2seq.encoder, "decoder")),
    row("EncoderDecoder-widths", VE, "num_hiddens",
        lambda e: T.EncoderDecoder(e.seq2seq.encoder, T.TransformerDecoder(10, 32, 64, 2, 1))),
    row("greedy_decode-max_len", VE, "max_len",
        lambda e: T.greedy_decode(e.seq2seq, torch.ones(1, 3, dtype=L), bos_id=1, eos_id=2, max_len=0)),
    row("greedy_decode-src-float", TE, "src",
        lambda e: T.greedy_decode(e.seq2seq, torch.ones(1, 3), bos_id=1, eos_id=2, max_len=3)),
    row("greedy_decode-src-list", TE, "src",
        lambda e: T.greedy_decode(e.seq2seq, [[3, 4]], bos_id=1, eos_id=2, max_len=3)),
    row("greedy_decode-bos-range", VE, "bos_id",
        lambda e: T.greedy_decode(e.seq2seq, torch.ones(1, 3, dtype=L), bos_id=99, eos_id=2, max_len=3)),
    row("greedy_decode-eos-float", TE, "eos_id",
        lambda e: T.greedy_decode(e.seq2seq, torch.ones(1, 3, dtype=L), bos_id=1, eos_id=2.0, max_len=3)),
    row("greedy_decode-pad-negative", VE, "pad_id",
        lambda e: T.greedy_decode(e.seq2seq, torch.ones(1, 3, dtype=L), bos_id=1, eos_id=2, max_len=3, pad_id=-1)),
    row("greedy_decode-model-str", TE, "model",
        lambda e: T.greedy_decode("model", torch.ones(1, 3, dtype=L), bos_id=1, eos_id=2, max_len=3)),
]

cfg = lambda **kw: B.BERTConfig(**{**dict(vocab_size=50, num_hiddens=16, ffn_num_hiddens=32, num_heads=2,
                                           num_blks=1, max_len=12), **kw})
BERT = [
    row("tokens_and_segments-ints", TE, "tokens_a", lambda e: B.get_tokens_and_segments([7, 8, 9])),
    row("tokens_and_segments-str", TE, "tokens_a", lambda e: B.get_tokens_and_segments("hello world")),
    row("tokens_and_segments-b-str", TE, "tokens_b", lambda e: B.get_tokens_and_segments(["a"], "b c")),
    row("tokens_and_segments-b-ints", TE, "tokens_b", lambda e: B.get_tokens_and_segments(["a"], [1])),
    row("BERTConfig-dropout", VE, "dropout", lambda e: cfg(dropout=1.5)),
    row("BERTConfig-dropout-nan", VE, "dropout", lambda e: cfg(dropout=NAN)),
    row("BERTConfig-dropout-str", TE, "dropout", lambda e: cfg(dropout="0.1")),
    row("BERTConfig-norm_eps-negative", VE, "norm_eps", lambda e: cfg(norm_eps=-1.0)),
    row("BERTConfig-norm_eps-inf", VE, "norm_eps", lambda e: cfg(norm_eps=INF)),
    row("BERTConfig-norm_eps-zero", VE, "norm_eps", lambda e: cfg(norm_eps=0.0)),
    row("BERTConfig-segments-zero", VE, "num_segments", lambda e: cfg(num_segments=0)),
    row("BERTConfig-heads", VE, "num_heads", lambda e: cfg(num_heads=3)),
    row("BERTConfig-activation", VE, "activation", lambda e: cfg(activation="swish")),
    row("BERTConfig-vocab-zero", VE, "vocab_size", lambda e: cfg(vocab_size=0)),
    row("BERTConfig-max_len-zero", VE, "max_len", lambda e: cfg(max_len=0)),
    row("BERTConfig-blks-float", TE, "num_blks", lambda e: cfg(num_blks=1.5)),
    row("BERTConfig-vocab-bool", TE, "vocab_size", lambda e: cfg(vocab_size=True)),
    row("BERTConfig-hiddens-str", TE, "num_hiddens", lambda e: cfg(num_hiddens="16")),
    row("BERTConfig-ffn-negative", VE, "ffn_num_hiddens", lambda e: cfg(ffn_num_hiddens=-1)),
    row("get_config-unknown", VE, "config", lambda e: B.get_config("huge")),
    row("get_config-list", TE, "config", lambda e: B.get_config(["tiny"])),
    row("get_config-unknown-field", TE, "hidden", lambda e: B.get_config("tiny", hidden=3)),
    row("get_config-dropout", VE, "dropout", lambda e: B.get_config("tiny", dropout=-0.1)),
    row("BERTEncoder-config-str", TE, "config", lambda e: B.BERTEncoder("tiny")),
    row("BERTEncoder-float-ids", TE, "tokens", lambda e: e.enc(e.tokens.float())),
    row("BERTEncoder-id-too-big", VE, "tokens", lambda e: e.enc(torch.tensor([[2, 50]]))),
    row("BERTEncoder-empty", VE, "tokens", lambda e: e.enc(torch.zeros(2, 0, dtype=L))),
    row("BERTEncoder-empty-batch", VE, "tokens", lambda e: e.enc(torch.zeros(0, 5, dtype=L))),
    row("BERTEncoder-too-long", VE, "max_len", lambda e: e.enc(torch.ones(1, 13, dtype=L))),
    row("BERTEncoder-lists", TE, "tokens", lambda e: e.enc([[2, 7, 3]])),
    row("BERTEncoder.embed-float-ids", TE, "tokens", lambda e: e.enc.embed(e.tokens.float())),
    row("BERTEncoder.embed-id-too-big", VE, "tokens", lambda e: e.enc.embed(torch.tensor([[2, 50]]))),
    row("BERTEncoder.embed-segments", VE, "segments", lambda e: e.enc.embed(e.tokens, torch.full((2, 5), 3))),
    row("BERTEncoder-segment-2", VE, "segments", lambda e: e.enc(e.tokens, torch.full((2, 5), 2))),
    row("BERTEncoder-segment-float", TE, "segments", lambda e: e.enc(e.tokens, torch.zeros(2, 5))),
    row("BERTEncoder-segment-shape", VE, "segments", lambda e: e.enc(e.tokens, torch.zeros(2, 4, dtype=L))),
    row("BERTEncoder-lens-too-big", VE, "valid_lens", lambda e: e.enc(e.tokens, None, torch.tensor([9, 9]))),
    row("BERTEncoder-lens-float", TE, "valid_lens", lambda e: e.enc(e.tokens, None, torch.tensor([5.0, 5.0]))),
    row("BERTEncoder-lens-list", TE, "valid_lens", lambda e: e.enc(e.tokens, None, [5, 5])),
    row("BERTEncoder-lens-batch", VE, "valid_lens", lambda e: e.enc(e.tokens, None, torch.tensor([5, 5, 5]))),
    row("BERTEncoder-hidden-states-str", TE, "return_hidden_states",
        lambda e: e.enc(e.tokens, return_hidden_states="yes")),
    row("MaskLM-width", VE, "X", lambda e: B.MaskLM(50, 16)(X3(2, 5, 8), torch.zeros(2, 1, dtype=L))),
    row("MaskLM-float-positions", TE, "pred_positions", lambda e: B.MaskLM(50, 16)(e.X, torch.zeros(2, 1))),
    row("MaskLM-positions-range", VE, "pred_positions", lambda e: B.MaskLM(50, 16)(e.X, torch.full((2, 1), 5))),
    row("MaskLM-positions-1d", VE, "pred_positions", lambda e: B.MaskLM(50, 16)(e.X, torch.zeros(2, dtype=L))),
    row("MaskLM-vocab-zero", VE, "vocab_size", lambda e: B.MaskLM(0, 16)),
    row("MaskLM-norm_eps", VE, "norm_eps", lambda e: B.MaskLM(50, 16, norm_eps=-1.0)),
    row("MaskLM-activation", VE, "activation", lambda e: B.MaskLM(50, 16, activation="swish")),
    row("Pooler-width", VE, "X", lambda e: B.Pooler(16)(X3(2, 5, 8))),
    row("Pooler-empty", VE, "X", lambda e: B.Pooler(16)(X3(2, 0, 16))),
    row("Pooler-hiddens-zero", VE, "num_hiddens", lambda e: B.Pooler(0)),
    row("NSP-width", VE, "pooled", lambda e: B.NextSentencePred(16)(X3(2, 8))),
    row("NSP-3d", VE, "pooled", lambda e: B.NextSentencePred(16)(e.X)),
    row("NSP-hiddens-zero", VE, "num_hiddens", lambda e: B.NextSentencePred(0)),
    row("BERTModel-with_heads-str", TE, "with_heads", lambda e: B.BERTModel(e.cfg, with_heads="yes")),
    row("BERTModel-config-dict", TE, "config", lambda e: B.BERTModel(dict(vocab_size=50))),
    row("BERTModel-float-positions", TE, "pred_positions",
        lambda e: e.bert(e.tokens, pred_positions=torch.zeros(2, 1))),
    row("BERTModel-ids", VE, "tokens", lambda e: e.bert(torch.tensor([[2, 60]]))),
    row("num_parameters-str", TE, "model", lambda e: B.num_parameters("model")),
]

CORPUS = [
    row("generate_world-seed-negative", VE, "seed", lambda e: C.generate_world(seed=-1)),
    row("generate_world-seed-float", TE, "seed", lambda e: C.generate_world(seed=1.5)),
    row("generate_world-animals", VE, "num_animals", lambda e: C.generate_world(0, num_countries=5, num_animals=2)),
    row("generate_world-people-bool", TE, "num_people", lambda e: C.generate_world(0, num_people=True)),
    row("generate_corpus-fraction", VE, "held_out_fraction", lambda e: C.generate_corpus(0, held_out_fraction=0.9)),
    row("generate_corpus-fraction-nan", VE, "held_out_fraction", lambda e: C.generate_corpus(0, held_out_fraction=NAN)),
    row("generate_corpus-seed-str", TE, "seed", lambda e: C.generate_corpus("0")),
    row("generate_corpus-per-country", VE, "paragraphs_per_country",
        lambda e: C.generate_corpus(0, paragraphs_per_country=-1)),
    row("Corpus.split", VE, "split", lambda e: e.corpus.split("test")),
    row("Corpus.split-None", VE, "split", lambda e: e.corpus.split(None)),
    row("Corpus.sentences", VE, "split", lambda e: e.corpus.sentences("valid")),
    row("cloze_items-corpus", TE, "corpus", lambda e: C.cloze_items("corpus")),
    row("cloze_items-split", VE, "split", lambda e: C.cloze_items(e.corpus, "dev")),
    row("cloze_items-relations-str", TE, "relations", lambda e: C.cloze_items(e.corpus, relations="capital")),
    row("cloze_items-exclude-str", TE, "exclude_seen", lambda e: C.cloze_items(e.corpus, exclude_seen="no")),
]

DATA = [
    row("Vocab-str", TE, "tokens", lambda e: D.Vocab("abc")),
    row("Vocab-no-specials", VE, "tokens", lambda e: D.Vocab(["a", "b"])),
    row("Vocab-duplicates", VE, "tokens", lambda e: D.Vocab(list(D.SPECIAL_TOKENS) + ["x", "x"])),
    row("Vocab-int-tokens", TE, "tokens", lambda e: D.Vocab(list(D.SPECIAL_TOKENS) + [7])),
    row("Vocab-getitem-int", TE, "vocab[", lambda e: e.vocab[3]),
    row("Vocab.to_ids-str", TE, "tokens", lambda e: e.vocab.to_ids("the cat")),
    row("Vocab.to_tokens-range", VE, "ids", lambda e: e.vocab.to_tokens(999)),
    row("Vocab.to_tokens-negative", VE, "ids", lambda e: e.vocab.to_tokens([-1])),
    row("Vocab.to_tokens-float", TE, "ids", lambda e: e.vocab.to_tokens(1.5)),
    row("Vocab.to_tokens-float-tensor", TE, "ids", lambda e: e.vocab.to_tokens(torch.tensor([1.0]))),
    row("Vocab.to_tokens-2d", VE, "ids", lambda e: e.vocab.to_tokens(torch.zeros(2, 2, dtype=L))),
    row("WordPieceTokenizer-str", TE, "tokenizer", lambda e: D.WordPieceTokenizer("x")),
    row("tokenize-int", TE, "text", lambda e: e.tok.tokenize(5)),
    row("encode-None", TE, "text", lambda e: e.tok.encode(None)),
    row("encode_batch-str", TE, "texts", lambda e: e.tok.encode_batch("abc")),
    row("encode_batch-int", TE, "texts", lambda e: e.tok.encode_batch(["a", 3])),
    row("tokenize_batch-str", TE, "texts", lambda e: e.tok.tokenize_batch("abc")),
    row("decode-range", VE, "ids", lambda e: e.tok.decode([999999])),
    row("decode-str", TE, "ids", lambda e: e.tok.decode("abc")),
    row("decode-2d", VE, "ids", lambda e: e.tok.decode(torch.tensor([[1]]))),
    row("decode-skip-str", TE, "skip_special_tokens", lambda e: e.tok.decode([5], skip_special_tokens="yes")),
    row("tokenizer-load-missing", FE, "no_such.json", lambda e: D.WordPieceTokenizer.load(e.tmp / "no_such.json")),
    row("tokenizer-load-garbage", VE, "garbage.json",
        lambda e: D.WordPieceTokenizer.load(e.file("garbage.json", "{not json"))),
    row("tokenizer-load-int", TE, "path", lambda e: D.WordPieceTokenizer.load(3)),
    row("train_wordpiece-str", TE, "sentences", lambda e: D.train_wordpiece("abc")),
    row("train_wordpiece-empty", VE, "sentences", lambda e: D.train_wordpiece([])),
    row("train_wordpiece-vocab-small", VE, "vocab_size", lambda e: D.train_wordpiece(["a b"], vocab_size=3)),
    row("train_wordpiece-vocab-float", TE, "vocab_size", lambda e: D.train_wordpiece(["a b"], vocab_size=100.0)),
    row("train_wordpiece-ints", TE, "sentences", lambda e: D.train_wordpiece(["a", 1])),
    row("get_tokenizer-seed", VE, "seed", lambda e: D.get_tokenizer(seed=-1)),
    row("get_tokenizer-vocab", VE, "vocab_size", lambda e: D.get_tokenizer(vocab_size=0)),
    row("num_mlm_preds-zero", VE, "num_candidates", lambda e: D.num_mlm_preds(0)),
    row("num_mlm_preds-prob", VE, "mask_prob", lambda e: D.num_mlm_preds(10, mask_prob=1.5)),
    row("num_mlm_preds-prob-nan", VE, "mask_prob", lambda e: D.num_mlm_preds(10, mask_prob=NAN)),
    row("num_mlm_preds-prob-str", TE, "mask_prob", lambda e: D.num_mlm_preds(10, mask_prob="0.15")),
    row("num_mlm_preds-max_preds", VE, "max_preds", lambda e: D.num_mlm_preds(10, max_preds=0)),
    row("mask_tokens-special-range", VE, "special_ids",
        lambda e: D.mask_tokens([5, 6, 7], e.vocab, special_ids=[10**6])),
    row("mask_tokens-special-negative", VE, "special_ids",
        lambda e: D.mask_tokens([5, 6, 7], e.vocab, special_ids=[-1])),
    row("mask_tokens-special-str", TE, "special_ids", lambda e: D.mask_tokens([5, 6, 7], e.vocab, special_ids="5")),
    row("mask_tokens-special-float", TE, "special_ids", lambda e: D.mask_tokens([5, 6, 7], e.vocab, special_ids=[5.0])),
    row("mask_tokens-id-range", VE, "token_ids", lambda e: D.mask_tokens([5, 999], e.vocab)),
    row("mask_tokens-float-list", TE, "token_ids", lambda e: D.mask_tokens([5.0, 6.0], e.vocab)),
    row("mask_tokens-2d", VE, "token_ids", lambda e: D.mask_tokens(torch.tensor([[5, 6]]), e.vocab)),
    row("mask_tokens-float-tensor", TE, "token_ids", lambda e: D.mask_tokens(torch.tensor([5.0, 6.0]), e.vocab)),
    row("mask_tokens-str", TE, "token_ids", lambda e: D.mask_tokens("5 6", e.vocab)),
    row("mask_tokens-vocab-str", TE, "vocab", lambda e: D.mask_tokens([5, 6], "vocab")),
    row("mask_tokens-generator-int", TE, "generator", lambda e: D.mask_tokens([5, 6], e.vocab, generator=0)),
    row("mask_tokens-only-specials", VE, "token_ids", lambda e: D.mask_tokens([0, 2, 3], e.vocab)),
    row("mask_tokens-empty", VE, "token_ids", lambda e: D.mask_tokens([], e.vocab)),
    row("mask_tokens-prob-zero", VE, "mask_prob", lambda e: D.mask_tokens([5, 6], e.vocab, mask_prob=0)),
    row("draw_generator-seed", VE, "seed", lambda e: D.draw_generator(-1, 0)),
    row("draw_rng-draw-float", TE, "draw", lambda e: D.draw_rng(0, 1.5)),
    row("make_nsp_pair-rng-int", TE, "rng", lambda e: D.make_nsp_pair(e.paragraphs[0], 0, e.paragraphs, 0)),
    row("make_nsp_pair-index", VE, "index",
        lambda e: D.make_nsp_pair(e.paragraphs[0], 99, e.paragraphs, random.Random(0))),
    row("make_nsp_pair-paragraph-str", TE, "paragraph",
        lambda e: D.make_nsp_pair("abc", 0, e.paragraphs, random.Random(0))),
    row("make_nsp_pair-no-other", VE, "paragraphs",
        lambda e: D.make_nsp_pair(e.paragraphs[0], 0, [e.paragraphs[0]], random.Random(1))),
    row("make_nsp_pair-paragraphs-str", TE, "paragraphs",
        lambda e: D.make_nsp_pair(e.paragraphs[0], 0, "abc", random.Random(0))),
    row("sample_pair-str", TE, "paragraphs", lambda e: D.sample_pair("abc", 0, 0)),
    row("sample_pair-one", VE, "paragraphs", lambda e: D.sample_pair([["a.", "b."]], 0, 0)),
    row("sample_pair-seed", VE, "seed", lambda e: D.sample_pair(e.paragraphs, -1, 0)),
    row("truncate_pair-str", TE, "tokens_a", lambda e: D.truncate_pair("ab", ["c"], 5)),
    row("truncate_pair-max_len", VE, "max_len", lambda e: D.truncate_pair(["a"], ["b"], 2)),
    row("truncate_pair-max_len-float", TE, "max_len", lambda e: D.truncate_pair(["a"], ["b"], 5.0)),
    row("PretrainDataset-str", TE, "paragraphs", lambda e: D.PretrainDataset("text", e.tok)),
    row("PretrainDataset-tokenizer", TE, "tokenizer", lambda e: D.PretrainDataset(e.paragraphs, "tok")),
    row("PretrainDataset-max_len", VE, "max_len", lambda e: D.PretrainDataset(e.paragraphs, e.tok, max_len=4)),
    row("PretrainDataset-mask_prob", VE, "mask_prob", lambda e: D.PretrainDataset(e.paragraphs, e.tok, mask_prob=1)),
    row("PretrainDataset-max_preds", VE, "max_preds", lambda e: D.PretrainDataset(e.paragraphs, e.tok, max_preds=0)),
    row("PretrainDataset-one-paragraph", VE, "paragraphs", lambda e: D.PretrainDataset([["a b.", "c d."]], e.tok)),
    row("PretrainDataset-dynamic-str", TE, "dynamic_masking",
        lambda e: D.PretrainDataset(e.paragraphs, e.tok, dynamic_masking="yes")),
    row("PretrainDataset-index-range", IndexError, "index", lambda e: D.PretrainDataset(e.paragraphs, e.tok)[10**6]),
    row("PretrainDataset-index-str", TE, "index", lambda e: D.PretrainDataset(e.paragraphs, e.tok)["0"]),
    row("PretrainDataset-set_epoch", VE, "epoch", lambda e: D.PretrainDataset(e.paragraphs, e.tok).set_epoch(-1)),
    row("load_pretrain_data-batch", VE, "batch_size", lambda e: D.load_pretrain_data(batch_size=0)),
    row("load_pretrain_data-split", VE, "split", lambda e: D.load_pretrain_data(split="test")),
    row("load_pretrain_data-kinds", VE, "kinds", lambda e: D.load_pretrain_data(kinds={"planet"})),
    row("load_pretrain_data-kinds-mixed", TE, "kinds", lambda e: D.load_pretrain_data(kinds=["country", 3])),
    row("load_pretrain_data-num_paragraphs-zero", VE, "num_paragraphs",
        lambda e: D.load_pretrain_data(num_paragraphs=0)),
    row("load_pretrain_data-num_paragraphs-one", VE, "num_paragraphs",
        lambda e: D.load_pretrain_data(num_paragraphs=1)),
    row("load_pretrain_data-shuffle-str", TE, "shuffle", lambda e: D.load_pretrain_data(shuffle="yes")),
    row("load_pretrain_data-max_len", VE, "max_len", lambda e: D.load_pretrain_data(max_len=4)),
    row("parse_wikitext_lines-str", TE, "lines", lambda e: D.parse_wikitext_lines("text")),
    row("parse_wikitext_lines-ints", TE, "lines", lambda e: D.parse_wikitext_lines([1])),
    row("read_wikitext-missing", FE, "no_such.tokens", lambda e: D.read_wikitext(e.tmp / "no_such.tokens")),
    row("load_wikitext2-split", VE, "split", lambda e: D.load_wikitext2("dev")),
]

UTILS = [
    row("set_seed-str", TE, "seed", lambda e: U.set_seed("0")),
    row("set_seed-negative", VE, "seed", lambda e: U.set_seed(-1)),
    row("set_seed-float", TE, "seed", lambda e: U.set_seed(1.5)),
    row("set_seed-huge", VE, "seed", lambda e: U.set_seed(2**40)),
    row("show_source-int", TE, "obj", lambda e: U.show_source(3)),
    row("cached-not-callable", TE, "fn", lambda e: U.cached(3)),
]

SEQ2SEQ = [
    row("DateVocab-str", TE, "tokens", lambda e: DateVocab("abc")),
    row("DateVocab-ints", TE, "tokens", lambda e: DateVocab([1, 2])),
    row("DateVocab.encode-str", TE, "tokens", lambda e: e.src_vocab.encode("one two")),
    row("DateVocab.encode-unknown", VE, "tokens", lambda e: e.src_vocab.encode(["zzz"])),
    row("DateVocab.decode-range", VE, "ids", lambda e: e.tgt_vocab.decode([999])),
    row("DateVocab.decode-negative", VE, "ids", lambda e: e.tgt_vocab.decode([-1])),
    row("DateVocab.decode-float", TE, "ids", lambda e: e.tgt_vocab.decode([3.5])),
    row("DateVocab.decode-str", TE, "ids", lambda e: e.tgt_vocab.decode("abc")),
    row("DateVocab.decode-2d", VE, "ids", lambda e: e.tgt_vocab.decode(torch.tensor([[3, 4]]))),
    row("DateVocab.decode-float-tensor", TE, "ids", lambda e: e.tgt_vocab.decode(torch.tensor([3.0]))),
    row("spell_number-range", VE, "n", lambda e: S.spell_number(100)),
    row("spell_number-float", TE, "n", lambda e: S.spell_number(1.5)),
    row("spell_day-zero", VE, "day", lambda e: S.spell_day(0)),
    row("spell_day-str", TE, "day", lambda e: S.spell_day("3")),
    row("spell_year-range", VE, "year", lambda e: S.spell_year(1800)),
    row("spell_year-bool", TE, "year", lambda e: S.spell_year(True)),
    row("spell_date-str", TE, "date", lambda e: S.spell_date("2020-01-01")),
    row("spell_date-style", VE, "style", lambda e: S.spell_date(datetime.date(2000, 1, 1), style=2)),
    row("spell_date-year-range", VE, "date", lambda e: S.spell_date(datetime.date(1850, 1, 1))),
    row("iso_date-str", TE, "date", lambda e: S.iso_date("1999-03-21")),
    row("make_date_dataset-train-zero", VE, "num_train", lambda e: S.make_date_dataset(num_train=0)),
    row("make_date_dataset-too-many", VE, "num_train", lambda e: S.make_date_dataset(num_train=10**6)),
    row("make_date_dataset-first_year", VE, "first_year", lambda e: S.make_date_dataset(10, 10, first_year=2100)),
    row("make_date_dataset-order", VE, "last_year",
        lambda e: S.make_date_dataset(10, 10, first_year=2000, last_year=1999)),
    row("make_date_dataset-seed", VE, "seed", lambda e: S.make_date_dataset(10, 10, seed=-1)),
    row("make_batch-empty", VE, "pairs", lambda e: S.make_batch([], e.src_vocab, e.tgt_vocab)),
    row("make_batch-str", TE, "pairs", lambda e: S.make_batch("abc", e.src_vocab, e.tgt_vocab)),
    row("make_batch-not-pairs", TE, "pairs", lambda e: S.make_batch([["one", "two"]], e.src_vocab, e.tgt_vocab)),
    row("make_batch-vocab-str", TE, "tgt_vocab", lambda e: S.make_batch([e.pair], e.src_vocab, "tgt")),
    row("sequence_loss-zero-lens", VE, "valid_lens",
        lambda e: S.sequence_loss(X3(2, 3, 5), torch.zeros(2, 3, dtype=L), torch.tensor([0, 0]))),
    row("sequence_loss-float-lens", TE, "valid_lens",
        lambda e: S.sequence_loss(X3(2, 3, 5), torch.zeros(2, 3, dtype=L), torch.tensor([1.0, 2.0]))),
    row("sequence_loss-lens-shape", VE, "valid_lens",
        lambda e: S.sequence_loss(X3(2, 3, 5), torch.zeros(2, 3, dtype=L), torch.tensor([1, 2, 3]))),
    row("sequence_loss-lens-too-long", VE, "valid_lens",
        lambda e: S.sequence_loss(X3(2, 3, 5), torch.zeros(2, 3, dtype=L), torch.tensor([4, 2]))),
    row("sequence_loss-lens-list", TE, "valid_lens",
        lambda e: S.sequence_loss(X3(2, 3, 5), torch.zeros(2, 3, dtype=L), [1, 2])),
    row("sequence_loss-labels-range", VE, "labels",
        lambda e: S.sequence_loss(X3(2, 3, 5), torch.full((2, 3), 7), torch.tensor([1, 2]))),
    row("sequence_loss-logits-2d", VE, "logits",
        lambda e: S.sequence_loss(X3(2, 3), torch.zeros(2, 3, dtype=L), torch.tensor([1, 2]))),
    row("translate-str", TE, "sources", lambda e: S.translate(e.seq2seq, "one two", e.src_vocab, e.tgt_vocab)),
    row("translate-model-str", TE, "model", lambda e: S.translate("model", [e.pair[0]], e.src_vocab, e.tgt_vocab)),
    row("translate-max_len", VE, "max_len",
        lambda e: S.translate(e.seq2seq, [e.pair[0]], e.src_vocab, e.tgt_vocab, max_len=0)),
    row("exact_match-empty", VE, "pairs", lambda e: S.exact_match(e.seq2seq, [], e.src_vocab, e.tgt_vocab)),
    row("exact_match-batch-zero", VE, "batch_size",
        lambda e: S.exact_match(e.seq2seq, [e.pair], e.src_vocab, e.tgt_vocab, batch_size=0)),
]

HF = [
    row("course_name-int", TE, "hf_name", lambda e: H.course_name(3)),
    row("config_from_hf-str", TE, "hf_config", lambda e: H.config_from_hf("config.json")),
    row("config_from_hf-missing", VE, "hidden_size",
        lambda e: H.config_from_hf({k: v for k, v in e.hf_config().items() if k != "hidden_size"})),
    row("config_from_hf-hidden-str", TE, "hidden_size", lambda e: H.config_from_hf(e.hf_config(hidden_size="16"))),
    row("config_from_hf-dropout", VE, "hidden_dropout_prob",
        lambda e: H.config_from_hf(e.hf_config(hidden_dropout_prob=1.5))),
    row("config_from_hf-eps", VE, "layer_norm_eps", lambda e: H.config_from_hf(e.hf_config(layer_norm_eps=-1))),
    row("config_from_hf-segments", VE, "type_vocab_size", lambda e: H.config_from_hf(e.hf_config(type_vocab_size=0))),
    row("config_from_hf-act", VE, "hidden_act", lambda e: H.config_from_hf(e.hf_config(hidden_act="swish"))),
    row("config_from_hf-override", TE, "hidden", lambda e: H.config_from_hf(e.hf_config(), hidden=3)),
    row("read_checkpoint-missing", FE, "no_such_folder", lambda e: H.read_checkpoint(e.tmp / "no_such_folder")),
    row("read_checkpoint-int", TE, "folder", lambda e: H.read_checkpoint(3)),
    row("read_checkpoint-empty-folder", FE, "holds no weights", lambda e: H.read_checkpoint(e.tmp)),
    row("read_checkpoint-garbage-safetensors", VE, "model.safetensors",
        lambda e: H.read_checkpoint(e.copy_ckpt(model__safetensors=b"garbage" * 10))),
    row("read_checkpoint-garbage-bin", VE, "pytorch_model.bin",
        lambda e: H.read_checkpoint(e.copy_ckpt(model__safetensors=None, pytorch_model__bin=b"garbage" * 10))),
    row("read_checkpoint-garbage-index", VE, "model.safetensors.index.json",
        lambda e: H.read_checkpoint(e.copy_ckpt(model__safetensors=None, model__safetensors__index__json="{oops"))),
    row("read_checkpoint-index-no-map", VE, "weight_map",
        lambda e: H.read_checkpoint(e.copy_ckpt(model__safetensors=None, model__safetensors__index__json="{}"))),
    row("read_checkpoint-index-missing-shard", FE, "shard-1.safetensors",
        lambda e: H.read_checkpoint(e.copy_ckpt(model__safetensors=None, model__safetensors__index__json=json.dumps(
            {"weight_map": {"pooler.dense.weight": "shard-1.safetensors"}})))),
    row("load_pretrained-typo-folder", FE, ("my_checkpoint", "does not exist"),
        lambda e: H.load_pretrained("my_checkpoint")),
    row("load_pretrained-hub-name-without-download", FE, ("bert-base-uncased", "download=True"),
        lambda e: H.load_pretrained("bert-base-uncased")),
    row("load_pretrained-int", TE, "source", lambda e: H.load_pretrained(3)),
    row("load_pretrained-download-str", TE, "download",
        lambda e: H.load_pretrained("bert-base-uncased", download="yes")),
    row("load_pretrained-download-folder", VE, "download", lambda e: H.load_pretrained(e.ckpt, download=True)),
    row("load_pretrained-garbage-config", VE, "config.json",
        lambda e: H.load_pretrained(e.copy_ckpt(config__json="{oops"))),
    row("load_pretrained-config-list", VE, "config.json",
        lambda e: H.load_pretrained(e.copy_ckpt(config__json="[1, 2]"))),
    row("load_pretrained-config-bad-field", TE, ("config.json", "hidden_size"),
        lambda e: H.load_pretrained(e.copy_ckpt(config__json=json.dumps(e.hf_config(hidden_size="16"))))),
    row("load_pretrained-config-vs-weights", VE, "config.json",
        lambda e: H.load_pretrained(e.copy_ckpt(config__json=json.dumps(e.hf_config(hidden_size=32))))),
    row("load_pretrained-garbage-safetensors", VE, "model.safetensors",
        lambda e: H.load_pretrained(e.copy_ckpt(model__safetensors=b"\x00" * 64))),
    row("load_pretrained-garbage-tokenizer", VE, "tokenizer.json",
        lambda e: H.load_pretrained(e.copy_ckpt(tokenizer__json="{oops"))),
    row("load_pretrained-garbage-tokenizer-config", VE, "tokenizer_config.json",
        lambda e: H.load_pretrained(e.copy_ckpt(tokenizer_config__json="{oops"))),
    row("load_pretrained-override-unknown", TE, "hidden", lambda e: H.load_pretrained(e.ckpt, hidden=3)),
    row("load_pretrained-override-eps", VE, "norm_eps", lambda e: H.load_pretrained(e.ckpt, norm_eps=-1.0)),
    row("mean_pool-list", TE, "hidden", lambda e: B.mean_pool([[0.0]], torch.ones(1, 1))),
    row("mean_pool-mask-shape", VE, "mask", lambda e: B.mean_pool(e.X, torch.ones(2, 4))),
    row("encode-empty", TE, "texts_a", lambda e: e.pretrained.encode([])),
    row("encode-texts_b-length", VE, "texts_b", lambda e: e.pretrained.encode(["w5"], ["w6", "w7"])),
    row("head_statistics-empty", VE, "maps", lambda e: A.head_statistics([])),
    row("head_statistics-str", TE, "maps", lambda e: A.head_statistics("abc")),
    row("head_statistics-weights", VE, "weights",
        lambda e: A.head_statistics([(["a", "b"], [0, 0], torch.ones(1, 1, 3, 3))])),
    row("typical_heads-empty", VE, "stats", lambda e: A.typical_heads({})),
    row("typical_heads-str", TE, "stats", lambda e: A.typical_heads("stats")),
]

WIDGETS = [
    row("w_att.tokenize-int", TE, "text", lambda e: w_att.tokenize(3)),
    row("w_att.word_vectors-str", TE, "tokens", lambda e: w_att.word_vectors("the cat")),
    row("w_att.attention-empty", VE, "tokens", lambda e: w_att.attention_for_sentence([])),
    row("w_att.attention-head", VE, "head", lambda e: w_att.attention_for_sentence(["a"], head=4)),
    row("w_att.attention-temperature-zero", VE, "temperature",
        lambda e: w_att.attention_for_sentence(["a"], temperature=0)),
    row("w_att.attention-temperature-nan", VE, "temperature",
        lambda e: w_att.attention_for_sentence(["a"], temperature=NAN)),
    row("w_att.attention-temperature-str", TE, "temperature",
        lambda e: w_att.attention_for_sentence(["a"], temperature="1")),
    row("w_att.draw-weights-shape", VE, "weights", lambda e: w_att.draw_attention(["a", "b"], X3(3, 3), 0)),
    row("w_att.draw-weights-list", TE, "weights",
        lambda e: w_att.draw_attention(["a", "b"], [[1.0, 0.0], [0.0, 1.0]], 0)),
    row("w_att.draw-query-range", VE, "query_index", lambda e: w_att.draw_attention(["a", "b"], X3(2, 2), 5)),
    row("w_att.draw-query-float", TE, "query_index", lambda e: w_att.draw_attention(["a", "b"], X3(2, 2), 1.5)),
    row("w_in.describe-tokenizer", TE, "tokenizer", lambda e: w_in.describe_input("tok", "a")),
    row("w_in.describe-text_a-int", TE, "text_a", lambda e: w_in.describe_input(e.tok, 3)),
    row("w_in.describe-text_b-int", TE, "text_b", lambda e: w_in.describe_input(e.tok, "the cat", 3)),
    row("w_in.describe-max_len", VE, "max_len", lambda e: w_in.describe_input(e.tok, "the cat", max_len=2)),
    row("w_in.describe-empty", VE, "text_a", lambda e: w_in.describe_input(e.tok, "")),
    row("w_in.shapes-config", TE, "config", lambda e: w_in.embedding_shapes("cfg", 3)),
    row("w_in.shapes-seq-zero", VE, "seq_len", lambda e: w_in.embedding_shapes(e.cfg, 0)),
    row("w_in.shapes-seq-long", VE, "seq_len", lambda e: w_in.embedding_shapes(e.cfg, 10**6)),
    row("w_in.parts-encoder", TE, "encoder", lambda e: w_in.embedding_parts("enc", e.tokens[0], e.tokens[0])),
    row("w_in.parts-2d", VE, "tokens", lambda e: w_in.embedding_parts(e.enc, e.tokens, e.tokens)),
    row("w_in.parts-float", TE, "tokens", lambda e: w_in.embedding_parts(e.enc, e.tokens[0].float(), e.tokens[0])),
    row("w_in.parts-segments-shape", VE, "segments",
        lambda e: w_in.embedding_parts(e.enc, e.tokens[0], torch.zeros(3, dtype=L))),
    row("w_in.parts-empty", VE, "tokens",
        lambda e: w_in.embedding_parts(e.enc, torch.zeros(0, dtype=L), torch.zeros(0, dtype=L))),
    row("w_in.table-desc", TE, "desc", lambda e: w_in.draw_input_table({})),
    row("w_in.sum-tokens-str", TE, "tokens", lambda e: w_in.draw_embedding_sum("abc", {})),
    row("w_in.sum-parts-keys", VE, "parts", lambda e: w_in.draw_embedding_sum(["a"], {"token": X3(1, 4)})),
    row("w_fill.grid-3d", VE, "weights", lambda e: w_fill.draw_attention_grid(["a", "b"], X3(1, 2, 2))),
    row("w_fill.grid-list", TE, "weights", lambda e: w_fill.draw_attention_grid(["a"], [[[[1.0]]]])),
    row("w_head.pair_mask-which", VE, "which", lambda e: w_head.pair_mask([0, 1], "A->B")),
    row("w_head.pair_mask-2d", VE, "segments", lambda e: w_head.pair_mask([[0, 1]], "all")),
    row("w_head.pair_mask-str", TE, "segments", lambda e: w_head.pair_mask("01", "all")),
    row("w_head.data-3d", VE, "weights", lambda e: w_head.head_view_data(X3(3, 5, 5), [0] * 5, 1, 1)),
    row("w_head.data-list", TE, "weights", lambda e: w_head.head_view_data([[0.0]], [0], 1, 1)),
    row("w_head.data-layer-zero", VE, "layer", lambda e: w_head.head_view_data(e.weights(), [0] * 5, 0, 1)),
    row("w_head.data-layer-float", TE, "layer", lambda e: w_head.head_view_data(e.weights(), [0] * 5, 1.5, 1)),
    row("w_head.data-head-range", VE, "head", lambda e: w_head.head_view_data(e.weights(), [0] * 5, 1, 9)),
    row("w_head.data-token", VE, "token", lambda e: w_head.head_view_data(e.weights(), [0] * 5, 1, 1, token=99)),
    row("w_head.data-segments-length", VE, "segments", lambda e: w_head.head_view_data(e.weights(), [0] * 4, 1, 1)),
    row("w_mask.encode_text-int", TE, "text", lambda e: w_mask.encode_text(3, e.tok)),
    row("w_mask.encode_text-tokenizer", TE, "tokenizer", lambda e: w_mask.encode_text("a", "tok")),
    row("w_mask.encode_text-max_tokens", VE, "max_tokens", lambda e: w_mask.encode_text("a", e.tok, max_tokens=2)),
    row("w_mask.classify-vocab", TE, "vocab", lambda e: w_mask.classify_masking([5], [5], [0], "vocab")),
    row("w_mask.classify-lengths", VE, "masked_ids", lambda e: w_mask.classify_masking([5, 6], [5], [0], e.vocab)),
    row("w_mask.classify-positions", VE, "pred_positions",
        lambda e: w_mask.classify_masking([5, 6], [5, 6], [9], e.vocab)),
    row("w_mask.classify-str", TE, "original_ids", lambda e: w_mask.classify_masking("abc", [5], [0], e.vocab)),
    row("w_mask.count-unknown", VE, "outcome", lambda e: w_mask.count_outcomes(["foo"])),
    row("w_mask.mask_once-seed", VE, "seed", lambda e: w_mask.mask_once([5, 6, 7], e.vocab, 0.15, -1, 0)),
    row("w_mask.running-negative", VE, "num_draws", lambda e: w_mask.running_counts([5, 6, 7], e.vocab, 0.15, 0, -1)),
    row("w_mask.running-float", TE, "num_draws", lambda e: w_mask.running_counts([5, 6, 7], e.vocab, 0.15, 0, 1.5)),
    row("w_mask.shares-empty", VE, "counts", lambda e: w_mask.chosen_shares({})),
    row("w_mask.draw-empty", VE, "tokens", lambda e: w_mask.draw_masking([], [], [])),
    row("w_nsp.pair_tokens-tokenizer", TE, "tokenizer", lambda e: w_nsp.pair_tokens("a", "b", "tok", 10)),
    row("w_nsp.pair_tokens-int", TE, "sentence_a", lambda e: w_nsp.pair_tokens(3, "b", e.tok, 10)),
    row("w_nsp.pair_tokens-max_len", VE, "max_len", lambda e: w_nsp.pair_tokens("the cat", "the dog", e.tok, 2)),
    row("w_nsp.label_name", VE, "label", lambda e: w_nsp.label_name(2)),
    row("w_nsp.tally", VE, "label", lambda e: w_nsp.tally([0, 5])),
    row("w_nsp.draw-empty", VE, "tokens", lambda e: w_nsp.draw_pair([], [], 0)),
    row("w_pos.view-position", VE, "position", lambda e: w_pos.encoding_view(16, 200, (0, 3))),
    row("w_pos.view-position-float", TE, "position", lambda e: w_pos.encoding_view(16, 1.5, (0, 3))),
    row("w_pos.view-dims-order", VE, "dims", lambda e: w_pos.encoding_view(16, 0, (3, 1))),
    row("w_pos.view-dims-int", TE, "dims", lambda e: w_pos.encoding_view(16, 0, 3)),
    row("w_pos.view-dims-float", TE, "dims", lambda e: w_pos.encoding_view(16, 0, (0, 1.5))),
    row("w_pos.binary-zero", VE, "num_positions", lambda e: w_pos.binary_table(0, 3)),
    row("w_tr.example-empty", VE, "source", lambda e: w_tr.example_attention(e.seq2seq, [], e.src_vocab, e.tgt_vocab)),
    row("w_tr.example-str", TE, "source",
        lambda e: w_tr.example_attention(e.seq2seq, "one two", e.src_vocab, e.tgt_vocab)),
    row("w_tr.example-model", TE, "model",
        lambda e: w_tr.example_attention("model", ["one"], e.src_vocab, e.tgt_vocab)),
    row("w_tr.map-3d", VE, "weights", lambda e: w_tr.draw_attention_map(X3(1, 2, 2), ["a", "b"], ["a", "b"])),
    row("w_tr.map-labels", VE, "labels", lambda e: w_tr.draw_attention_map(X3(2, 2), ["a"], ["a", "b"])),
    row("w_draw.layout-negative", VE, "widths", lambda e: w_draw.token_layout([1, -1])),
    row("w_draw.tally-lengths", VE, "shares", lambda e: w_draw.draw_tally(
        None, ["a", "b"], [0.5], [1, 1], [0.5, 0.5], ["red", "blue"], "share", "title")),
    row("device_of-not-a-module", TE, "module", lambda e: device_of("cpu")),
    row("message_of-no-docstring", TE, "mistake", lambda e: message_of(lambda x: x)),
]

# bertcourse.inspection: fill-mask and attention maps for any BERTModel (the lead's module now)
ANALYSIS_ROWS = [
    row("fill_mask-top_k-zero", VE, "top_k",
        lambda e: A.fill_mask(e.pretrained.model, e.pretrained.tokenizer, "w5 [MASK] w7", top_k=0)),
    row("fill_mask-top_k-float", TE, "top_k",
        lambda e: A.fill_mask(e.pretrained.model, e.pretrained.tokenizer, "w5 [MASK] w7", top_k=1.5)),
    row("fill_mask-top_k-bool", TE, "top_k",
        lambda e: A.fill_mask(e.pretrained.model, e.pretrained.tokenizer, "w5 [MASK] w7", top_k=True)),
    row("fill_mask-model-str", TE, "model", lambda e: A.fill_mask("model", e.tok, "the [MASK]")),
    row("fill_mask-no-mask", VE, "text", lambda e: A.fill_mask(e.bert, e.tok, "the cat")),
    row("fill_mask_tokens-str", TE, "tokens", lambda e: A.fill_mask_tokens(e.bert, e.tok, "the [MASK]")),
    row("fill_mask_tokens-top_k", VE, "top_k",
        lambda e: A.fill_mask_tokens(e.bert, e.tok, ["[MASK]"], top_k=0)),
    row("encode_words-int", TE, "text", lambda e: A.encode_words(e.tok, 3)),
    row("encode_words-tokenizer", TE, "tokenizer", lambda e: A.encode_words("tok", "a")),
    row("mask_word-range", VE, "index", lambda e: A.mask_word(["a", "b"], [("a", 0, 0), ("b", 1, 1)], 99)),
    row("mask_word-float", TE, "index", lambda e: A.mask_word(["a", "b"], [("a", 0, 0), ("b", 1, 1)], 1.5)),
    row("attention_maps-model-str", TE, "model", lambda e: A.attention_maps("model", e.tok, "w5")),
    row("attention_maps-text-int", TE, "text_a", lambda e: A.attention_maps(e.bert, e.tok, 3)),
    row("attention_maps-text_b-int", TE, "text_b", lambda e: A.attention_maps(e.bert, e.tok, "the cat", 3)),
]

# Code the lead is rewriting: expected to fail until that lands.
PRETRAIN = [
    row("TrainConfig-clip-nan", VE, "clip", lambda e: TR.TrainConfig(clip=NAN)),
    row("TrainConfig-weight_decay-inf", VE, "weight_decay", lambda e: TR.TrainConfig(weight_decay=INF)),
    row("TrainConfig-lr-zero", VE, "lr", lambda e: TR.TrainConfig(lr=0)),
    row("lr_factor-negative-step", VE, "step", lambda e: TR.lr_factor(-5, 0, 10)),
    row("mlm_loss-negative-weights", VE, "mlm_weights",
        lambda e: PT.mlm_loss(X3(2, 3, 5), torch.zeros(2, 3, dtype=L), torch.full((2, 3), -1.0))),
    row("nsp_loss-empty-batch", VE, "nsp_logits",
        lambda e: PT.nsp_loss(X3(0, 2), torch.zeros(0, dtype=L))),
]

# The classes of issue 23: optimizers and their hyper-parameters, initialisation, paths
# (empty, a file where a folder is wanted), tokenizer/model pairs, fill-mask limits.
def _long_text(n_words: int) -> str:
    return " ".join(f"w{5 + i % 40}" for i in range(n_words))


ISSUE_23 = [
    row("training_step-optimizer-None", TE, "optimizer", lambda e: PT.training_step(e.bert, None, {})),
    row("optimizer_step-optimizer-str", TE, "optimizer",
        lambda e: TR.optimizer_step("adam", e.bert(e.tokens)[0].sum())),
    row("optimizer_step-clip-nan", VE, "clip",
        lambda e: TR.optimizer_step(TR.make_optimizer(e.bert), e.bert(e.tokens)[0].sum(), clip=NAN)),
    row("make_optimizer-lr-negative", VE, "lr", lambda e: TR.make_optimizer(e.bert, lr=-1)),
    row("make_optimizer-lr-nan", VE, "lr", lambda e: TR.make_optimizer(e.bert, lr=NAN)),
    row("make_optimizer-lr-str", TE, "lr", lambda e: TR.make_optimizer(e.bert, lr="1e-3")),
    row("make_optimizer-weight_decay-negative", VE, "weight_decay",
        lambda e: TR.make_optimizer(e.bert, weight_decay=-0.1)),
    row("make_optimizer-betas-one", VE, "betas[1]", lambda e: TR.make_optimizer(e.bert, betas=(0.9, 1.0))),
    row("make_optimizer-betas-negative", VE, "betas[0]", lambda e: TR.make_optimizer(e.bert, betas=(-0.1, 0.9))),
    row("make_optimizer-betas-one-number", TE, "betas", lambda e: TR.make_optimizer(e.bert, betas=0.9)),
    row("make_optimizer-betas-str", TE, "betas", lambda e: TR.make_optimizer(e.bert, betas="ab")),
    row("make_optimizer-eps-zero", VE, "eps", lambda e: TR.make_optimizer(e.bert, eps=0.0)),
    row("make_optimizer-eps-inf", VE, "eps", lambda e: TR.make_optimizer(e.bert, eps=INF)),
    row("init_bert_weights-std-negative", VE, "std", lambda e: PT.init_bert_weights(B.BERTModel(e.cfg), std=-1)),
    row("init_bert_weights-std-nan", VE, "std", lambda e: PT.init_bert_weights(B.BERTModel(e.cfg), std=NAN)),
    row("init_bert_weights-std-str", TE, "std", lambda e: PT.init_bert_weights(B.BERTModel(e.cfg), std="0.02")),
    row("init_bert_weights-model-str", TE, "model", lambda e: PT.init_bert_weights("model")),
    row("LengthBucketSampler-str", TE, "lengths", lambda e: _speedups().LengthBucketSampler(["a", "b"], 1)),
    row("LengthBucketSampler-floats", TE, "lengths", lambda e: _speedups().LengthBucketSampler([1.5, 2.0], 1)),
    row("LengthBucketSampler-negative", VE, "lengths", lambda e: _speedups().LengthBucketSampler([-1, 2], 1)),
    row("save_checkpoint-existing-file", VE, ("path", "is a file", "folder"),
        lambda e: _ckpt().save_checkpoint(e.file("model.pt", "x"), e.bert)),
    row("save_checkpoint-empty", VE, "path", lambda e: _ckpt().save_checkpoint("", e.bert)),
    row("save_checkpoint-swapped", TE, "model", lambda e: _ckpt().save_checkpoint(e.bert, e.tmp)),
    row("load_checkpoint-empty", VE, "path", lambda e: _ckpt().load_checkpoint("")),
    row("load_checkpoint-file", VE, ("path", "is a file"), lambda e: _ckpt().load_checkpoint(e.file("x.json", "{}"))),
    row("load_checkpoint-missing", FE, ("path", "does not exist"), lambda e: _ckpt().load_checkpoint(e.tmp / "no")),
    row("read_config-int", TE, "path", lambda e: _ckpt().read_config(3)),
    row("load_pretrained-empty", VE, ("source", "empty"), lambda e: H.load_pretrained("")),
    row("load_pretrained-cache_dir-file", VE, "cache_dir",
        lambda e: H.load_pretrained("bert-base-uncased", download=True, cache_dir=e.file("c", ""))),
    row("fill_mask-mask-truncated", VE, ("[MASK]", "position", "max_len=12", "truncated"),
        lambda e: A.fill_mask(e.pretrained.model, e.pretrained.tokenizer, _long_text(14) + " [MASK]")),
    row("fill_mask-top_k-huge", VE, ("top_k", "50"),
        lambda e: A.fill_mask(e.pretrained.model, e.pretrained.tokenizer, "w5 [MASK] w7", top_k=10**6)),
    row("fill_mask-tokenizer-model-mismatch", VE, ("tokenizer", "vocab_size=50"),
        lambda e: A.fill_mask(e.bert, e.tok, "the [MASK]")),
    row("attention_maps-tokenizer-model-mismatch", VE, ("tokenizer", "vocab_size=50"),
        lambda e: A.attention_maps(e.bert, e.tok, "the cat")),
    row("predict_proba-tokenizer-model-mismatch", VE, ("tokenizer", "vocab_size=50"),
        lambda e: _finetune().predict_proba(_finetune().BERTClassifier(_finetune().ClassifierConfig(e.cfg)), e.tok,
                                            ["the cat"], allow_untrained=True)),
    row("sentence_vectors-tokenizer-model-mismatch", VE, ("tokenizer", "vocab_size=50"),
        lambda e: A.sentence_vectors(e.bert, e.tok, ["the cat"])),
]


# Chapters 9 and 10: lists of texts and of reviews, labels, features, candidate grids, devices
def _r():
    from bertcourse import reviews
    return reviews


def _spread():
    from bertcourse import measured_bounds as spread
    return spread


def _distributed():
    from bertcourse import distributed
    return distributed


IDS = lambda *ids: torch.tensor(ids, dtype=L)                                   # noqa: E731
XY = lambda n=6: (torch.randn(n, 4, generator=torch.Generator().manual_seed(0)), torch.tensor([0, 1] * (n // 2)))
WITH_NAN = lambda: torch.tensor([[0.0, 1.0, NAN, 2.0]] * 6)                     # noqa: E731
GAP = ("b. frozen MiniLM + probe", "a. bag of words")
QUIET = dict(progress=False, plot=False)

CHAPTERS_9_10 = [
    # reviews: records
    row("Review-label-out-of-range", VE, ("label", "1"), lambda e: _r().Review("great", 2, "amazon")),
    row("Review-label-float", TE, "label", lambda e: _r().Review("great", 1.0, "amazon")),
    row("Review-label-bool", TE, "label", lambda e: _r().Review("great", True, "amazon")),
    row("Review-text-int", TE, "text", lambda e: _r().Review(3, 1, "amazon")),
    row("Review-site-None", TE, "site", lambda e: _r().Review("great", 1, None)),
    row("SentimentSplits-train-str", TE, "train", lambda e: _r().SentimentSplits("abc", [], [])),
    row("SentimentSplits-test-texts", TE, "test", lambda e: _r().SentimentSplits([], [], ["great"])),
    row("SentimentSplits-seed-negative", VE, "seed", lambda e: _r().SentimentSplits([], [], [], -1)),
    # reviews: lists of reviews
    row("split_reviews-empty", VE, "reviews", lambda e: _r().split_reviews([])),
    row("split_reviews-generator", TE, "reviews", lambda e: _r().split_reviews(r for r in e.reviews)),
    row("split_reviews-None-element", TE, "reviews", lambda e: _r().split_reviews([*e.reviews, None])),
    row("stratified_indices-str", TE, "reviews", lambda e: _r().stratified_indices("abcdef", 2)),
    row("stratified_indices-empty", VE, "reviews", lambda e: _r().stratified_indices([], 1)),
    row("stratified_subset-dicts", TE, "reviews", lambda e: _r().stratified_subset([{"text": "a"}], 1)),
    row("SentimentDataset-empty", VE, "reviews", lambda e: _r().SentimentDataset([], e.tok)),
    row("SentimentDataset-texts", TE, "reviews", lambda e: _r().SentimentDataset(["the cat"], e.tok)),
    row("review_loader-empty", VE, "reviews", lambda e: _r().review_loader([], e.tok)),
    # reviews: texts
    row("encode_texts-empty", VE, "texts", lambda e: _r().encode_texts(e.tok, [])),
    row("encode_texts-str", TE, ("texts", "wrap a single text in a list"), lambda e: _r().encode_texts(e.tok, "the cat")),
    row("encode_texts-None-element", TE, ("texts", "index 1"), lambda e: _r().encode_texts(e.tok, ["the cat", None])),
    row("encode_texts-int-element", TE, "texts", lambda e: _r().encode_texts(e.tok, ["the cat", 3])),
    row("encode_texts-dict", TE, "texts", lambda e: _r().encode_texts(e.tok, {"the cat": 1})),
    # reviews: batches of (ids, label)
    row("collate_reviews-empty", VE, "examples", lambda e: _r().collate_reviews([])),
    row("collate_reviews-dicts", TE, "examples", lambda e: _r().collate_reviews([{"ids": IDS(2, 5, 3), "label": 0}])),
    row("collate_reviews-float-label", TE, "examples[0] label", lambda e: _r().collate_reviews([(IDS(2, 5, 3), 0.7)])),
    row("collate_reviews-negative-label", VE, "examples[0] label", lambda e: _r().collate_reviews([(IDS(2, 3), -1)])),
    row("collate_reviews-float-tensor-label", TE, "examples[1] label",
        lambda e: _r().collate_reviews([(IDS(2, 3), 0), (IDS(2, 3), torch.tensor(0.5))])),
    row("collate_reviews-float-ids", TE, "examples[0] ids", lambda e: _r().collate_reviews([(torch.tensor([2.0, 3.0]), 0)])),
    row("collate_reviews-list-ids", TE, "examples[0] ids", lambda e: _r().collate_reviews([([2, 5, 3], 0)])),
    row("collate_reviews-empty-ids", VE, "examples[0] ids", lambda e: _r().collate_reviews([(IDS(), 0)])),
    row("collate_reviews-2d-ids", VE, "examples[0] ids", lambda e: _r().collate_reviews([(torch.zeros(1, 3, dtype=L), 0)])),
    row("collate_reviews-triple", VE, "examples[0]", lambda e: _r().collate_reviews([(IDS(2, 3), 0, "x")])),
    # probing: texts and vocabularies
    row("build_vocabulary-str", TE, ("texts", "wrap a single text in a list"),
        lambda e: _finetuning_baselines().build_vocabulary("the cat sat")),
    row("build_vocabulary-empty", VE, "texts", lambda e: _finetuning_baselines().build_vocabulary([])),
    row("build_vocabulary-int-element", TE, "texts", lambda e: _finetuning_baselines().build_vocabulary(["the cat", 3])),
    row("build_vocabulary-nothing-kept", VE, ("texts", "min_count=5"),
        lambda e: _finetuning_baselines().build_vocabulary(["the cat"], min_count=5)),
    row("bag_of_words-int", TE, "texts", lambda e: _finetuning_baselines().bag_of_words(3, {"cat": 0})),
    row("bag_of_words-empty", VE, "texts", lambda e: _finetuning_baselines().bag_of_words([], {"cat": 0})),
    row("bag_of_words-int-element", TE, "texts", lambda e: _finetuning_baselines().bag_of_words(["the cat", 3], {"cat": 0})),
    row("bag_of_words-vocab-list", TE, "vocab", lambda e: _finetuning_baselines().bag_of_words(["the cat"], ["cat"])),
    row("bag_of_words-vocab-empty", VE, "vocab", lambda e: _finetuning_baselines().bag_of_words(["the cat"], {})),
    row("bag_of_words-vocab-column", VE, "vocab", lambda e: _finetuning_baselines().bag_of_words(["the cat"], {"cat": 5})),
    row("bag_of_words-vocab-inverted", TE, "vocab", lambda e: _finetuning_baselines().bag_of_words(["the cat"], {0: "cat"})),
    row("bag_of_words-vocab-None-column", TE, "vocab", lambda e: _finetuning_baselines().bag_of_words(["the cat"], {"cat": None})),
    # probing: features and labels
    row("LogisticRegression-one-class", VE, "num_classes", lambda e: _finetuning_baselines().LogisticRegression(4, 1)),
    row("LogisticRegression-X-nan", VE, "X", lambda e: _finetuning_baselines().LogisticRegression(4)(WITH_NAN())),
    row("accuracy-y-2d", VE, "y", lambda e: _finetuning_baselines().LogisticRegression(4).accuracy(XY()[0], XY()[1][:, None])),
    row("accuracy-y-rows", VE, "y", lambda e: _finetuning_baselines().LogisticRegression(4).accuracy(XY()[0], XY()[1][:5])),
    row("accuracy-y-range", VE, ("y", "num_classes=2"),
        lambda e: _finetuning_baselines().LogisticRegression(4).accuracy(XY()[0], XY()[1] + 1)),
    row("accuracy-y-float", TE, "y", lambda e: _finetuning_baselines().LogisticRegression(4).accuracy(XY()[0], XY()[1].float())),
    row("fit-y-range", VE, ("y", "0..1", "from 0 to 2"),
        lambda e: _finetuning_baselines().fit_logistic_regression(XY()[0], XY()[1] * 2)),
    row("fit-y-negative", VE, "y", lambda e: _finetuning_baselines().fit_logistic_regression(XY()[0], XY()[1] - 1)),
    row("fit-y-range-three-classes", VE, ("y", "num_classes=3"),
        lambda e: _finetuning_baselines().fit_logistic_regression(XY()[0], XY()[1] * 3, num_classes=3)),
    row("fit-X-nan", VE, "X", lambda e: _finetuning_baselines().fit_logistic_regression(WITH_NAN(), XY()[1])),
    row("fit-X-inf", VE, "X", lambda e: _finetuning_baselines().fit_logistic_regression(WITH_NAN().nan_to_num(nan=INF), XY()[1])),
    row("fit-X-empty", VE, "X", lambda e: _finetuning_baselines().fit_logistic_regression(torch.zeros(0, 4), torch.zeros(0, dtype=L))),
    row("fit-num_classes-one", VE, "num_classes", lambda e: _finetuning_baselines().fit_logistic_regression(*XY(), num_classes=1)),
    row("select-grid-empty", VE, "grid", lambda e: _finetuning_baselines().select_weight_decay(*XY(), *XY(), grid=())),
    row("select-grid-number", TE, "grid", lambda e: _finetuning_baselines().select_weight_decay(*XY(), *XY(), grid=0.1)),
    row("select-grid-str", TE, "grid", lambda e: _finetuning_baselines().select_weight_decay(*XY(), *XY(), grid="0.1")),
    row("select-grid-nan", VE, "grid[1]", lambda e: _finetuning_baselines().select_weight_decay(*XY(), *XY(), grid=(1e-3, NAN))),
    row("select-grid-negative", VE, "grid[0]", lambda e: _finetuning_baselines().select_weight_decay(*XY(), *XY(), grid=(-1.0,))),
    row("select-X_train-nan", VE, "X_train", lambda e: _finetuning_baselines().select_weight_decay(WITH_NAN(), XY()[1], *XY())),
    row("select-y_train-rows", VE, "y_train", lambda e: _finetuning_baselines().select_weight_decay(XY()[0], XY()[1][:4], *XY())),
    row("select-X_val-width", VE, "X_val",
        lambda e: _finetuning_baselines().select_weight_decay(*XY(), torch.zeros(6, 5), XY()[1])),
    row("select-y_val-range", VE, "y_val", lambda e: _finetuning_baselines().select_weight_decay(*XY(), XY()[0], XY()[1] + 5)),
    row("select-num_classes-str", TE, "num_classes",
        lambda e: _finetuning_baselines().select_weight_decay(*XY(), *XY(), num_classes="2")),
    row("sentence_vectors-texts-empty", VE, "texts", lambda e: A.sentence_vectors(e.clf, e.tok, [])),
    row("sentence_vectors-blank-text", VE, ("texts", "index 1"),
        lambda e: A.sentence_vectors(e.clf, e.tok, ["the cat", "  "])),
    row("sentence_vectors-str", TE, "texts", lambda e: A.sentence_vectors(e.clf, e.tok, "the cat")),
    row("sentence_vectors-model-module", TE, ("model", "BERTEncoder"),
        lambda e: A.sentence_vectors(torch.nn.Linear(2, 2), e.tok, ["the cat"])),
    row("sentence_vectors-cls-without-pooler", VE, ("pooling", "pooler"),
        lambda e: A.sentence_vectors(e.clf, e.tok, ["the cat"], pooling="cls")),
    row("classification_loss-labels-range", VE, "labels",
        lambda e: _finetune().classification_loss(torch.zeros(2, 2), torch.tensor([0, 2]))),
    row("fit_probe-train-texts", TE, "train", lambda e: _finetune().fit_probe(e.clf, e.tok, ["the cat"], e.reviews)),
    row("probe_then_finetune-model", TE, "model",
        lambda e: _finetune().probe_then_finetune(e.bert, e.tok, e.reviews, e.reviews)),
    row("FrozenFeatures-seconds-nan", VE, "seconds", lambda e: _finetuning_baselines().FrozenFeatures({}, {}, {}, NAN)),
    row("FrozenFeatures-mean-list", TE, "mean", lambda e: _finetuning_baselines().FrozenFeatures([], {}, {}, 1.0)),
    # finetune
    row("ClassifierConfig-dropout-str", TE, "dropout", lambda e: _finetune().ClassifierConfig(e.cfg, dropout="0.1")),
    row("ClassifierConfig-dropout-inf", VE, "dropout", lambda e: _finetune().ClassifierConfig(e.cfg, dropout=INF)),
    row("BERTClassifier-pooler-str", TE, "pooler",
        lambda e: _finetune().BERTClassifier(_finetune().ClassifierConfig(e.cfg, pooling="cls"), pooler="pooler")),
    row("classification_step-labels-range", VE, ("labels", "num_classes=2"),
        lambda e: _finetune().classification_step(e.clf, e.review_batch([0, 5]))),
    row("classification_step-labels-negative", VE, "labels",
        lambda e: _finetune().classification_step(e.clf, e.review_batch([-1, 0]))),
    row("classification_step-labels-float", TE, "labels",
        lambda e: _finetune().classification_step(e.clf, e.review_batch(torch.tensor([0.0, 1.0])))),
    row("classification_step-labels-length", VE, "labels",
        lambda e: _finetune().classification_step(e.clf, e.review_batch([0, 1, 1], n=2))),
    row("evaluate_classifier-labels-range", VE, ("labels", "num_classes=2"),
        lambda e: _finetune().evaluate_classifier(e.clf, [e.review_batch([0, 2])])),
    row("evaluate_classifier-loader-int", TE, "loader", lambda e: _finetune().evaluate_classifier(e.clf, 3)),
    row("finetune-train-empty", VE, "train", lambda e: _finetune().finetune(e.clf, e.tok, [], **QUIET)),
    row("finetune-train-texts", TE, "train", lambda e: _finetune().finetune(e.clf, e.tok, ["the cat"], **QUIET)),
    row("finetune-validation-str", TE, "validation",
        lambda e: _finetune().finetune(e.clf, e.tok, e.reviews, "the cat", **QUIET)),
    row("finetune-validation-empty", VE, "validation",
        lambda e: _finetune().finetune(e.clf, e.tok, e.reviews, [], **QUIET)),
    row("predict_proba-empty", VE, "texts", lambda e: _finetune().predict_proba(e.clf, e.tok, [])),
    row("predict_proba-blank", VE, "texts", lambda e: _finetune().predict_proba(e.clf, e.tok, ["the cat", ""])),
    row("predict_proba-int-element", TE, "texts", lambda e: _finetune().predict_proba(e.clf, e.tok, [3])),
    row("predict_proba-model-bert", TE, ("model", "BERTClassifier"),
        lambda e: _finetune().predict_proba(e.bert_tok, e.tok, ["the cat"])),
    row("token_contributions-model-bert", TE, ("model", "BERTClassifier"),
        lambda e: _finetune().token_contributions(e.bert_tok, e.tok, "the cat")),
    row("misclassified-empty", VE, "reviews", lambda e: _finetune().misclassified(e.clf, e.tok, [])),
    row("misclassified-texts", TE, "reviews", lambda e: _finetune().misclassified(e.clf, e.tok, ["the cat"])),
    # spread and distributed
    row("gap_holds-nan", VE, "values", lambda e: _spread().gap_holds({GAP[0]: NAN, GAP[1]: 0.8}, *GAP)),
    row("gap_holds-inf", VE, "values", lambda e: _spread().gap_holds({GAP[0]: 0.9, GAP[1]: -INF}, *GAP)),
    row("gap_holds-str-value", TE, "values", lambda e: _spread().gap_holds({GAP[0]: "0.9", GAP[1]: 0.8}, *GAP)),
    row("gap_holds-mixed-keys", VE, "values", lambda e: _spread().gap_holds({1: 0.5, GAP[1]: 0.8}, *GAP)),
    row("launch-blank-program", VE, "command[0]", lambda e: _distributed().launch(["", "-c", "pass"], e.tmp)),
    row("launch-missing-program", FE, ("command[0]", "no-such-program-here"),
        lambda e: _distributed().launch(["no-such-program-here", "--help"], e.tmp)),
    row("launch-folder-as-program", FE, "command[0]", lambda e: _distributed().launch([str(e.tmp)], e.tmp)),
]


def _finetune():
    from bertcourse import finetune
    return finetune


def _finetuning_baselines():
    from bertcourse import finetuning_baselines as probing
    return probing


def _speedups():
    """The module of LengthBucketSampler (speedups, until it moves to batching)."""
    import importlib
    try:
        return importlib.import_module("bertcourse.speedups")
    except ImportError:
        return importlib.import_module("bertcourse.batching")


def _ckpt():
    from bertcourse import checkpoints
    return checkpoints


CASES = (ATTENTION + POSITIONAL + TRANSFORMER + BERT + CORPUS + DATA + UTILS + SEQ2SEQ + HF + WIDGETS
         + ANALYSIS_ROWS + PRETRAIN + ISSUE_23 + CHAPTERS_9_10)


@pytest.mark.parametrize("call, exc, names", CASES)
def test_bad_input_gets_a_named_error(call, exc, names, tmp_path):
    ENV.tmp = tmp_path
    with pytest.raises(exc) as info:
        call(ENV)
    message = str(info.value)
    for name in names:
        assert name in message, f"{type(info.value).__name__}: {message!r} does not name {name!r}"


def test_the_table_is_large_and_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 150


# ----------------------------------------------------------------------------------------
# The command line of bertcourse.pretrain: one line on stderr, exit code 2, no traceback
# ----------------------------------------------------------------------------------------

def _resume_folder_with_state_only(folder: Path) -> Path:
    folder.mkdir()
    (folder / "trainer_state.json").write_text("{}")
    return folder


def _resume_folder_with_corrupt_weights(folder: Path) -> Path:
    folder.mkdir()
    bert = B.get_config("tiny").to_dict()
    (folder / "config.json").write_text(json.dumps({"bert": bert, "with_heads": True}))
    (folder / "model.safetensors").write_bytes(b"this is not a safetensors file")
    (folder / "trainer_state.json").write_text("{}")
    return folder


CLI = [
    pytest.param(["--weight-decay", "nan"], "--weight-decay", None, id="weight-decay-nan"),
    pytest.param(["--num-paragraphs", "1"], "--num-paragraphs", None, id="num-paragraphs-1"),
    pytest.param(["--resume"], "", _resume_folder_with_state_only, id="resume-state-only"),
    pytest.param(["--resume"], "", _resume_folder_with_corrupt_weights, id="resume-corrupt-weights"),
]


@pytest.mark.parametrize("args, name, make_folder", CLI)
def test_command_line_bad_input_is_one_line_and_exit_code_2(args, name, make_folder, tmp_path, capsys):
    # the command's main function, as `python -m bertcourse.pretrain` calls it (tests/test_cli.py
    # runs the real command)
    out = make_folder(tmp_path / "run") if make_folder else tmp_path / "run"
    with command_in_this_process():
        code = pretrain_main(["--out", str(out), "--steps", "1", "--quiet", *args])
    _, stderr = capsys.readouterr()
    assert code == 2, (code, stderr[-2000:])
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert name in lines[0]

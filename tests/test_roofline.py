"""benchmarks/roofline.py's FLOPs, written out from the shapes, against PyTorch's own count
(``torch.utils.flop_counter.FlopCounterMode``, which counts every matrix product the step runs,
forward and backward) on tiny models: the pretraining step with and without the fast path, and
the fine-tuning steps (a class per sentence, a tag per piece, an answer span) with and without
activation checkpointing."""
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import roofline  # noqa: E402

from bertcourse.bert import BERTModel, get_config  # noqa: E402
from bertcourse.finetune import BERTClassifier, ClassifierConfig  # noqa: E402
from bertcourse.pretrain import init_bert_weights, pretraining_losses  # noqa: E402
from bertcourse.task_heads import SpanPredictor, TokenTagger  # noqa: E402

B, L, P = 3, 12, 2
CFG = get_config("tiny", vocab_size=50, num_hiddens=16, ffn_num_hiddens=24, num_heads=2, num_blks=3,
                 max_len=L, dropout=0.1)


@register_flop_formula(torch.ops.aten.addmm_)
def _addmm_inplace_flops(self_shape, a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """PyTorch counts ``addmm`` but not its in-place form, which the fused MLM loss uses for the
    decoder's weight gradient (``grad_W.addmm_(P.T, H)``): the same 2 m k n."""
    (m, k), (_, n) = a_shape, b_shape
    return 2 * m * k * n


def counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def pretraining_batch():
    g = torch.Generator().manual_seed(0)
    return {"tokens": torch.randint(5, CFG.vocab_size, (B, L), generator=g),
            "segments": torch.zeros(B, L, dtype=torch.long),
            "valid_lens": torch.tensor([L, L - 3, 5]),
            "pred_positions": torch.tensor([[1, 4], [2, 3], [1, 2]]),
            "mlm_labels": torch.randint(5, CFG.vocab_size, (B, P), generator=g),
            "mlm_weights": torch.ones(B, P),
            "nsp_labels": torch.tensor([0, 1, 1])}


@pytest.mark.parametrize("fast", [True, False])
def test_pretraining_flops_match_pytorchs_count(fast):
    torch.manual_seed(0)
    model = init_bert_weights(BERTModel(CFG)).train()
    batch = pretraining_batch()
    executed = counted(lambda: pretraining_losses(model, batch, fused=fast)["loss"].backward())
    written = roofline.pretraining_flops(B, L, P, CFG.num_hiddens, CFG.ffn_num_hiddens, CFG.num_blks,
                                         CFG.vocab_size, fast=fast)
    assert written["executed"] == written["model"] == executed
    # the fast path's last block works at 1 + P rows, not L: the count must show the saving
    if fast:
        full = roofline.pretraining_flops(B, L, P, CFG.num_hiddens, CFG.ffn_num_hiddens, CFG.num_blks,
                                          CFG.vocab_size, fast=False)
        assert written["model"] < full["model"]


@pytest.mark.parametrize("checkpointing", [False, True])
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_classification_flops_match_pytorchs_count(checkpointing, pooling):
    torch.manual_seed(0)
    model = BERTClassifier(ClassifierConfig(bert=CFG, num_classes=3, pooling=pooling)).train()
    model.encoder.checkpointing = checkpointing
    tokens = torch.randint(5, CFG.vocab_size, (B, L))
    mask = torch.arange(L)[None, :] < torch.tensor([L, 7, 4])[:, None]
    executed = counted(lambda: model(tokens, valid_lens=mask).sum().backward())
    written = roofline.classification_flops(B, L, CFG.num_hiddens, CFG.ffn_num_hiddens, CFG.num_blks, classes=3,
                                            pooler=pooling == "cls", checkpointing=checkpointing)
    assert written["executed"] == executed
    assert (written["executed"] > written["model"]) == checkpointing


@pytest.mark.parametrize("checkpointing", [False, True])
@pytest.mark.parametrize("head, outputs", [("tagger", 5), ("spans", 2)])
def test_position_head_flops_match_pytorchs_count(head, outputs, checkpointing):
    torch.manual_seed(0)
    model = (TokenTagger(CFG, num_tags=outputs) if head == "tagger" else SpanPredictor(CFG)).train()
    model.encoder.checkpointing = checkpointing
    tokens = torch.randint(5, CFG.vocab_size, (B, L))
    mask = torch.arange(L)[None, :] < torch.tensor([L, 7, 4])[:, None]

    def step():
        out = model(tokens, valid_lens=mask)
        (out.sum() if head == "tagger" else out[0].sum() + out[1].sum()).backward()
    executed = counted(step)
    written = roofline.position_head_flops(B, L, CFG.num_hiddens, CFG.ffn_num_hiddens, CFG.num_blks, outputs,
                                           checkpointing=checkpointing)
    assert written["executed"] == executed
    assert (written["executed"] > written["model"]) == checkpointing


def test_profile_categories():
    assert roofline.categorise("aten::mm") == "matrix products"
    assert roofline.categorise("mkldnn::_linear_pointwise") == "matrix products"
    assert roofline.categorise("aten::_softmax") == "softmax / cross-entropy"
    assert roofline.categorise("aten::native_layer_norm_backward") == "layer norm"
    assert roofline.categorise("aten::_foreach_addcdiv_") == "optimizer (AdamW), clipping"
    assert roofline.categorise("aten::something_new") == "other"


def test_peak_products_stay_below_glibcs_mapping_size():
    """glibc gives every block of more than 32 MiB a new mapping, so a product with such an output pays for
    fresh pages on every call (that way the peak read 6-16 % low, benchmarks/README.md): the peak's
    products write outputs of at most 16 MiB (their operands are made once), and measure a rate on both
    libraries."""
    for m, k, n in roofline.PEAK_SHAPES:
        assert m * n * 4 <= 16 * 2**20
    peak = roofline.gemm_peak(torch.float32, rounds=1, shapes=((64, 32, 48),))
    assert set(peak) == {"mm", "onednn"} and peak["mm"] > 0
    assert peak["onednn"] is None or peak["onednn"] > 0

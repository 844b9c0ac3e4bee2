"""bertcourse.bert: input representation, encoder, heads, configs, errors."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bertcourse.bert import (BERTEncoder, BERTModel, CONFIGS, MaskLM, NextSentencePred, Pooler, get_config,
                             get_tokens_and_segments, mlm_accuracy, mlm_loss, nsp_loss, num_parameters, accuracy,
                             confusion_matrix)


def tiny(**kw):
    base = dict(vocab_size=50, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=2,
                max_len=12, dropout=0.0)
    return get_config("tiny", **{**base, **kw})


def batch(cfg, b=3, n=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, cfg.vocab_size, (b, n), generator=g)
    segments = torch.zeros(b, n, dtype=torch.long)
    segments[:, n // 2:] = 1
    return tokens, segments


# ---------------------------------------------------------------- get_tokens_and_segments

def test_tokens_and_segments_single_text():
    tokens, segments = get_tokens_and_segments(["a", "b"])
    assert tokens == ["[CLS]", "a", "b", "[SEP]"]
    assert segments == [0, 0, 0, 0]


def test_tokens_and_segments_pair():
    tokens, segments = get_tokens_and_segments(["a", "b"], ["c"])
    assert tokens == ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"]
    # 0 for [CLS], A and the first [SEP]; 1 for B and the last [SEP]
    assert segments == [0, 0, 0, 0, 1, 1]


def test_tokens_and_segments_rejects_a_string():
    with pytest.raises(TypeError, match="tokens_a.*list of token strings.*split"):
        get_tokens_and_segments("a b c")
    with pytest.raises(TypeError, match="tokens_b"):
        get_tokens_and_segments(["a"], "b")


# ---------------------------------------------------------------- parameter counts

@pytest.mark.parametrize("name, without_heads, with_heads", [
    ("base", 109_482_240, 110_106_428),
    ("large", 335_141_888, 336_226_108),
])
def test_parameter_counts_match_the_published_models(name, without_heads, with_heads):
    cfg = get_config(name)
    with torch.device("meta"):          # no memory needed to count
        assert num_parameters(BERTModel(cfg, with_heads=False)) == without_heads
        assert num_parameters(BERTModel(cfg, with_heads=True)) == with_heads


def test_mlm_decoder_is_tied_to_the_token_embedding():
    model = BERTModel(tiny())
    assert model.mlm.decoder.weight is model.encoder.token_embedding.weight
    naive = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert naive - num_parameters(model) == model.encoder.token_embedding.weight.numel()


def test_configs_have_the_standard_sizes():
    assert (CONFIGS["base"]["num_blks"], CONFIGS["base"]["num_hiddens"], CONFIGS["base"]["num_heads"],
            CONFIGS["base"]["ffn_num_hiddens"]) == (12, 768, 12, 3072)
    assert (CONFIGS["large"]["num_blks"], CONFIGS["large"]["num_hiddens"], CONFIGS["large"]["num_heads"],
            CONFIGS["large"]["ffn_num_hiddens"]) == (24, 1024, 16, 4096)
    small = get_config("d2l-small")
    assert (small.num_blks, small.num_hiddens, small.num_heads, small.ffn_num_hiddens, small.vocab_size,
            small.dropout) == (2, 128, 2, 256, 20256, 0.2)
    with pytest.raises(ValueError, match="config must be one of"):
        get_config("huge")
    with pytest.raises(TypeError, match="unknown BERTConfig field"):
        get_config("tiny", hidden_size=3)


# ---------------------------------------------------------------- the encoder

def test_encoder_shapes_and_hidden_states():
    cfg = tiny()
    enc = BERTEncoder(cfg).eval()
    tokens, segments = batch(cfg)
    out, hidden = enc(tokens, segments, torch.tensor([10, 7, 3]), return_hidden_states=True)
    assert out.shape == (3, 10, 16)
    assert len(hidden) == cfg.num_blks + 1 and hidden[-1] is out


def test_input_embedding_is_token_plus_segment_plus_position_then_norm():
    cfg = tiny()
    enc = BERTEncoder(cfg).eval()
    tokens, segments = batch(cfg)
    n = tokens.shape[1]
    by_hand = (enc.token_embedding.weight[tokens] + enc.segment_embedding.weight[segments]
               + enc.pos_embedding.weight[:n])
    by_hand = nn.functional.layer_norm(by_hand, (16,), enc.embedding_norm.weight, enc.embedding_norm.bias,
                                       cfg.norm_eps)
    torch.testing.assert_close(enc.embed(tokens, segments), by_hand)
    # no segments means "all sentence A"
    torch.testing.assert_close(enc.embed(tokens), enc.embed(tokens, torch.zeros_like(tokens)))


def test_position_embedding_receives_gradients():
    """Pitfall 1: adding `pos_embedding.data[...]` would detach the table."""
    cfg = tiny()
    model = BERTModel(cfg)
    tokens, segments = batch(cfg)
    encoded, mlm, nsp = model(tokens, segments, pred_positions=torch.tensor([[1, 2]] * 3))
    (encoded.sum() + mlm.sum() + nsp.sum()).backward()
    grad = model.encoder.pos_embedding.weight.grad
    assert grad is not None
    assert grad[: tokens.shape[1]].abs().sum(-1).gt(0).all()       # every used position
    assert grad[tokens.shape[1]:].abs().sum() == 0                  # unused rows get none


def test_padding_does_not_change_real_tokens():
    cfg = tiny()
    enc = BERTEncoder(cfg).eval()
    tokens, segments = batch(cfg, b=1, n=6)
    alone = enc(tokens, segments)
    padded_tokens = torch.cat([tokens, torch.zeros(1, 4, dtype=torch.long)], 1)
    padded_segments = torch.cat([segments, torch.zeros(1, 4, dtype=torch.long)], 1)
    padded = enc(padded_tokens, padded_segments, torch.tensor([6]))
    torch.testing.assert_close(padded[:, :6], alone, atol=1e-5, rtol=1e-5)
    # a boolean mask (True = real token) means the same as the length
    mask = torch.arange(10).unsqueeze(0) < 6
    torch.testing.assert_close(enc(padded_tokens, padded_segments, mask), padded)


def test_fast_attention_path_gives_the_same_encoding():
    from bertcourse.attention import store_attention_weights
    cfg = tiny()
    enc = BERTEncoder(cfg).eval()
    tokens, segments = batch(cfg)
    lens = torch.tensor([10, 4, 1])
    slow = enc(tokens, segments, lens)
    fast = store_attention_weights(enc, False)(tokens, segments, lens)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_activation_is_configurable(activation):
    enc = BERTEncoder(tiny(activation=activation))
    assert enc.blks[0].ffn.activation == activation


def test_norm_eps_reaches_every_layer_norm():
    model = BERTModel(tiny(norm_eps=1e-7))
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    assert len(norms) == 1 + 2 * 2 + 1       # embeddings, two per block, MLM transform
    assert all(m.eps == 1e-7 for m in norms)


# ---------------------------------------------------------------- heads

def test_mlm_logits_equal_a_dense_computation_at_the_positions():
    cfg = tiny()
    model = BERTModel(cfg).eval()
    tokens, segments = batch(cfg)
    pred_positions = torch.tensor([[1, 4, 0], [9, 9, 2], [3, 5, 7]])
    encoded, mlm_logits, _ = model(tokens, segments, pred_positions=pred_positions)
    mlm = model.mlm
    dense = mlm.decoder(mlm.ln(nn.functional.gelu(mlm.dense(encoded))))   # every position
    for b in range(3):
        for i, p in enumerate(pred_positions[b]):
            torch.testing.assert_close(mlm_logits[b, i], dense[b, p])


def test_nsp_reads_only_the_cls_state():
    """Pitfall 3: changing any state but [CLS] must not change the NSP logits."""
    cfg = tiny()
    model = BERTModel(cfg).eval()
    X = torch.randn(2, 7, 16)
    Y = X.clone()
    Y[:, 1:] = torch.randn(2, 6, 16)
    nsp = lambda h: model.nsp(model.pooler(h))
    torch.testing.assert_close(nsp(X), nsp(Y))
    torch.testing.assert_close(model.pooler(X), torch.tanh(model.pooler.dense(X[:, 0])))


def test_model_without_heads_or_positions():
    cfg = tiny()
    tokens, segments = batch(cfg)
    _, mlm, nsp = BERTModel(cfg)(tokens, segments)
    assert mlm is None and nsp.shape == (3, 2)
    _, mlm, nsp = BERTModel(cfg, with_heads=False)(tokens, segments)
    assert mlm is None and nsp is None


# ---------------------------------------------------------------- bad input

@pytest.fixture
def model():
    return BERTModel(tiny()).eval()


def test_tokens_must_be_a_2d_integer_tensor(model):
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, seq <= max_len=12\).*got shape \(10,\)"):
        model(torch.zeros(10, dtype=torch.long))
    with pytest.raises(TypeError, match="tokens must be an integer tensor.*float32"):
        model(torch.zeros(2, 5))
    with pytest.raises(TypeError, match="tokens must be a torch.Tensor"):
        model([[1, 2, 3]])


def test_token_ids_must_be_below_vocab_size(model):
    with pytest.raises(ValueError, match=r"tokens must be ids in \[0, vocab_size=50\), got values from 0 to 50"):
        model(torch.tensor([[0, 50]]))
    with pytest.raises(ValueError, match="vocab_size=50"):
        model(torch.tensor([[-1, 3]]))


def test_sequence_longer_than_max_len(model):
    with pytest.raises(ValueError, match=r"tokens has 13 positions but max_len=12.*\(1, 13\)"):
        model(torch.ones(1, 13, dtype=torch.long))


def test_segments_must_be_0_or_1_and_match_tokens(model):
    tokens = torch.ones(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="segments must be 0 .* or 1 .*, got values from 0 to 2"):
        model(tokens, torch.tensor([[0, 0, 1, 1, 2]] * 2))
    with pytest.raises(ValueError, match=r"segments must have the shape of tokens \(2, 5\), got shape \(2, 4\)"):
        model(tokens, torch.zeros(2, 4, dtype=torch.long))


def test_pred_positions_errors(model):
    tokens = torch.ones(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"pred_positions must lie in \[0, seq=5\)"):
        model(tokens, pred_positions=torch.tensor([[0, 5], [1, 2]]))
    with pytest.raises(ValueError, match=r"pred_positions must have shape \(batch=2, num_preds\), got shape \(3, 2\)"):
        model(tokens, pred_positions=torch.zeros(3, 2, dtype=torch.long))


def test_valid_lens_errors_reach_the_learner(model):
    tokens = torch.ones(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="valid_lens must lie in"):
        model(tokens, valid_lens=torch.tensor([6, 2]))


def test_heads_check_their_inputs():
    with pytest.raises(ValueError, match=r"X must have shape \(batch, seq, num_hiddens=16\), got shape \(2, 3, 8\)"):
        Pooler(16)(torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match=r"pooled must have shape \(batch, num_hiddens=16\)"):
        NextSentencePred(16)(torch.randn(2, 3, 16))
    with pytest.raises(ValueError, match="X must have shape"):
        MaskLM(10, 16)(torch.randn(2, 16), torch.zeros(2, 1, dtype=torch.long))


def test_bad_config_values():
    with pytest.raises(ValueError, match="activation must be one of"):
        BERTEncoder(tiny(activation="swish"))
    with pytest.raises(ValueError, match="num_hiddens must be divisible by num_heads"):
        BERTEncoder(tiny(num_heads=3))
    with pytest.raises(ValueError, match="vocab_size must be > 0"):
        BERTEncoder(tiny(vocab_size=0))


# ---------------------------------------------------------------- the losses of the heads

def _logits_labels_weights():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 7, generator=g) * 2
    labels = torch.randint(0, 7, (3, 4), generator=g)
    weights = torch.tensor([[1., 1., 1., 0.], [1., 0., 0., 0.], [1., 1., 1., 1.]])
    # make the padding slots' losses very different, so averaging them in would show
    logits[weights == 0] = 0.0
    logits[..., 0][weights == 0] = -20.0
    labels[weights == 0] = 0
    return logits, labels, weights

def test_mlm_loss_equals_a_hand_computation():
    logits, labels, weights = _logits_labels_weights()
    total, count = 0.0, 0
    for b in range(3):
        for j in range(4):
            if weights[b, j] == 1:
                log_probs = logits[b, j] - torch.logsumexp(logits[b, j], dim=0)
                total += -float(log_probs[labels[b, j]])
                count += 1
    assert count == 8
    assert float(mlm_loss(logits, labels, weights)) == pytest.approx(total / count, abs=1e-6)

def test_mlm_loss_differs_from_the_pitfall_version():
    logits, labels, weights = _logits_labels_weights()
    ours = mlm_loss(logits, labels, weights)
    # pitfall 2: reduction='mean' first, then the weights: the result is the plain mean
    # over all slots, padding included
    pitfall_scalar = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1))
    pitfall = (pitfall_scalar * weights.reshape(-1)).sum() / (weights.sum() + 1e-8)
    assert float(pitfall) == pytest.approx(float(pitfall_scalar), abs=1e-5)
    assert abs(float(ours) - float(pitfall)) > 1.0

def test_mlm_loss_fractional_weights_zero_weights_and_gradients():
    logits, labels, weights = _logits_labels_weights()
    w = weights * torch.linspace(0.5, 1.5, 4)
    per_slot = F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), reduction="none")
    expected = (per_slot * w.reshape(-1)).sum() / w.sum()
    assert torch.allclose(mlm_loss(logits, labels, w), expected, atol=1e-6)
    zero = mlm_loss(logits, labels, torch.zeros(3, 4))
    assert torch.isfinite(zero) and float(zero) == 0.0
    # padding slots get no gradient
    logits.requires_grad_(True)
    mlm_loss(logits, labels, weights).backward()
    assert torch.all(logits.grad[weights == 0] == 0)
    assert torch.all(logits.grad[weights == 1].abs().sum(-1) > 0)

def test_mlm_loss_errors():
    logits, labels, weights = _logits_labels_weights()
    with pytest.raises(ValueError, match=r"\(batch, max_preds, vocab\)"):
        mlm_loss(logits[0], labels, weights)
    with pytest.raises(TypeError, match="mlm_labels must be an integer tensor"):
        mlm_loss(logits, labels.float(), weights)
    with pytest.raises(TypeError, match="mlm_weights must be a floating-point"):
        mlm_loss(logits, labels, weights.long())
    with pytest.raises(ValueError, match=r"mlm_weights must have shape \(batch=3, max_preds=4\)"):
        mlm_loss(logits, labels, weights[:, :3])
    with pytest.raises(ValueError, match=r"mlm_labels must have shape"):
        mlm_loss(logits, labels[:2], weights)
    with pytest.raises(ValueError, match=r"ids in 0\.\.6"):
        mlm_loss(logits, labels + 7, weights)
    with pytest.raises(TypeError, match="mlm_logits"):
        mlm_loss(logits.tolist(), labels, weights)

def test_nsp_loss():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 2, generator=g)
    labels = torch.tensor([0, 1, 1, 0, 0, 1])
    expected = sum(-float(torch.log_softmax(logits[i], 0)[labels[i]]) for i in range(6)) / 6
    assert float(nsp_loss(logits, labels)) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match=r"\(batch, 2\)"):
        nsp_loss(torch.randn(6, 3), labels)
    with pytest.raises(ValueError, match=r"\(batch=6,\)"):
        nsp_loss(logits, labels[:5])
    with pytest.raises(ValueError, match="0 \\(IsNext\\) or 1 \\(NotNext\\)"):
        nsp_loss(logits, labels + 1)
    with pytest.raises(TypeError, match="integer"):
        nsp_loss(logits, labels.float())


def test_the_sums_are_what_an_evaluation_adds_up_over_batches():
    """reduction="sum": the weighted sum of the per-slot losses and the number of correct real
    predictions, so that a held-out evaluation (pretrain.evaluate) sums batches of any size."""
    logits, labels, weights = _logits_labels_weights()
    assert torch.allclose(mlm_loss(logits, labels, weights, reduction="sum"),
                          mlm_loss(logits, labels, weights) * weights.sum(), atol=1e-5)
    correct = int(((logits.argmax(-1) == labels) & (weights > 0)).sum())
    assert float(mlm_accuracy(logits, labels, weights, reduction="sum")) == correct
    assert float(mlm_accuracy(logits, labels, weights)) == pytest.approx(correct / 8)
    nsp_logits, nsp_labels = torch.randn(5, 2, generator=torch.Generator().manual_seed(1)), torch.tensor([0, 1, 1, 0, 1])
    assert torch.allclose(nsp_loss(nsp_logits, nsp_labels, reduction="sum"),
                          F.cross_entropy(nsp_logits, nsp_labels, reduction="sum"))
    for fn, args in ((mlm_loss, (logits, labels, weights)), (mlm_accuracy, (logits, labels, weights)),
                     (nsp_loss, (nsp_logits, nsp_labels))):
        with pytest.raises(ValueError, match="reduction must be one of"):
            fn(*args, reduction="none")


def test_accuracy_is_the_share_of_rows_whose_highest_logit_is_the_label():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, -1.0], [0.2, 0.1]])
    labels = torch.tensor([0, 1, 1, 1])
    assert float(accuracy(logits, labels)) == 0.5 and float(accuracy(logits, labels, reduction="sum")) == 2.0
    with pytest.raises(ValueError, match=r"labels must have shape \(n=4,\)"):
        accuracy(logits, labels[:3])
    with pytest.raises(TypeError, match="labels"):
        accuracy(logits, labels.float())
    with pytest.raises(ValueError, match="reduction must be one of"):
        accuracy(logits, labels, reduction="none")


def test_confusion_matrix_counts_true_rows_against_predicted_columns():
    labels = torch.tensor([0, 0, 1, 2, 2, 2])
    predicted = torch.tensor([0, 1, 1, 2, 0, 2])
    m = confusion_matrix(labels, predicted, 3)
    assert m.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]] and m.dtype == torch.long
    # a class absent from both still has its row and column; the diagonal is the accuracy's numerator
    assert confusion_matrix(torch.tensor([1]), torch.tensor([1]), 4).tolist() == [[0] * 4, [0, 1, 0, 0], [0] * 4, [0] * 4]
    g = torch.Generator().manual_seed(0)
    y, p = torch.randint(0, 3, (200,), generator=g), torch.randint(0, 3, (200,), generator=g)
    m = confusion_matrix(y, p, 3)
    assert int(m.sum()) == 200 and int(m.trace()) == int((y == p).sum())
    assert m.sum(1).tolist() == torch.bincount(y, minlength=3).tolist()      # rows: the true labels
    with pytest.raises(ValueError, match=r"predictions must have shape \(n=6,\)"):
        confusion_matrix(labels, predicted[:5], 3)
    with pytest.raises(ValueError, match=r"labels must hold class labels in 0..1"):
        confusion_matrix(labels, predicted, 2)
    with pytest.raises(TypeError, match="predictions"):
        confusion_matrix(labels, predicted.float(), 3)
    with pytest.raises((TypeError, ValueError), match="num_classes"):
        confusion_matrix(labels, predicted, 0)

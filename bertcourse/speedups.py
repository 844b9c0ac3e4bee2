"""Speed-ups of chapter 7's pretraining step that change no number the model computes.

* :func:`trim_batch` drops the padding columns that no pair of a batch uses;
* :class:`LengthBucketSampler` / :func:`bucketed_loader` batch pairs of similar length, so
  that trimming removes most of the padding (and, with ``world_size > 1``, give every
  process of a data-parallel run its own share of the batches: chapter 10);
* :func:`pretraining_features` runs the encoder for the two pretraining losses only where
  they read it, with one matrix product for Q, K and V, attention written out with cheap
  dropout masks (:func:`dropout_mask`), and oneDNN's float32 matrix products (:func:`linear`);
* :func:`fused_mlm_loss` computes the MLM cross-entropy chunk by chunk, without ever holding
  the full ``(predictions, vocab)`` logits and their gradient.

``tests/test_speedups.py`` proves each gives the same values and gradients as the plain way
(up to float rounding; with dropout on, the masks are other draws from the same distribution).
``benchmarks/pretrain_step.py`` measures what each buys.
"""
from __future__ import annotations

import math
import platform

import torch
import torch.nn.functional as F

from ._checks import check_bool, check_int_list, check_positive_int, check_probability, check_tensor, shape_str
from .attention import MultiHeadAttention, key_mask
from .data import check_batch
from .transformer import EncoderBlock, get_activation

__all__ = ["trim_batch", "shard_batches", "LengthBucketSampler", "bucketed_loader", "dropout_mask", "linear",
           "use_onednn", "onednn_enabled", "fast_path_supported", "pretraining_features",
           "fused_mlm_loss"]


def trim_batch(batch: dict) -> dict:
    """Cut the padding columns that no sequence of the batch uses.

    The dataset pads every pair to ``max_len``; the corpus' pairs are much shorter, so a
    batch whose longest pair has 30 tokens can drop the other 34 columns: padded keys get
    attention weight 0 and padded positions are never predicted, so every real position
    computes exactly the same thing — only faster. ``tokens``/``segments`` become
    ``(batch, longest)``; the other entries are unchanged.
    """
    check_batch(batch)
    longest = int(batch["valid_lens"].max()) if batch["valid_lens"].numel() else 1
    longest = max(longest, 1)
    if longest >= batch["tokens"].shape[1]:
        return batch
    out = dict(batch)
    out["tokens"] = batch["tokens"][:, :longest]
    out["segments"] = batch["segments"][:, :longest]
    return out


# ---------------------------------------------------------------------------------------
# Batches of similar length, for one process or for each process of a data-parallel run
# ---------------------------------------------------------------------------------------

def shard_batches(batches: list, world_size: int, rank: int) -> list:
    """Process ``rank``'s share of one epoch's ``batches`` in a data-parallel run of
    ``world_size`` processes: batches ``rank, rank + world_size, rank + 2 * world_size, ...``,
    after leaving out the last ``len(batches) % world_size``. Every process gets the same
    number of batches, and no batch goes to two processes."""
    check_positive_int("world_size", world_size)
    check_positive_int("rank", rank, allow_zero=True)
    if rank >= world_size:
        raise ValueError(f"rank must be in 0..world_size-1 = 0..{world_size - 1}, got {rank}")
    usable = len(batches) // world_size * world_size
    return list(batches[:usable][rank::world_size])


class LengthBucketSampler(torch.utils.data.Sampler):
    """Batches of indices in which the pairs have similar lengths.

    Each epoch: shuffle all indices, cut them into pools of ``pool_batches * batch_size``,
    sort each pool by length, cut it into batches, and shuffle the batches. Every pair is
    still seen once per epoch in a random batch, but a batch of short pairs no longer pays
    for the padding of one long pair (see :func:`trim_batch`). ``lengths[i]`` is the
    length of example ``i``; ``generator`` makes the order repeatable.

    Data parallelism (chapter 10): with ``world_size`` processes, each builds the same
    sampler with the same seed, so all draw the same epoch order; process ``rank`` then
    takes its share (:func:`shard_batches`: batches ``rank, rank + world_size, ...``). The
    last ``len % world_size`` batches of an epoch are left out (other ones each epoch), so
    every process has the same number of batches: a process that ran out early would leave
    the others waiting for it forever.
    """

    def __init__(self, lengths, batch_size: int, pool_batches: int = 50, generator=None,
                 world_size: int = 1, rank: int = 0):
        check_positive_int("batch_size", batch_size)
        check_positive_int("pool_batches", pool_batches)
        check_positive_int("world_size", world_size)
        check_positive_int("rank", rank, allow_zero=True)
        if rank >= world_size:
            raise ValueError(f"rank must be in 0..world_size-1 = 0..{world_size - 1}, got {rank}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        if isinstance(lengths, torch.Tensor) and lengths.is_floating_point() and torch.equal(lengths, lengths.round()):
            lengths = lengths.long()      # torch.ones(n): whole numbers in a float tensor are lengths too
        self.lengths = torch.tensor(check_int_list("lengths", lengths, low=0), dtype=torch.long)
        if self.lengths.dim() != 1 or len(self.lengths) == 0:
            raise ValueError(f"lengths must be a non-empty 1-D sequence, got shape {shape_str(self.lengths)}")
        self.batch_size, self.pool_batches = batch_size, pool_batches
        self.world_size, self.rank = world_size, rank
        if self._all_batches() < world_size:
            raise ValueError(f"{len(self.lengths)} examples make {self._all_batches()} batches of "
                             f"{batch_size}: too few for world_size={world_size} processes")
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)

    def _all_batches(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __len__(self) -> int:
        return self._all_batches() // self.world_size

    def __iter__(self):
        n, pool = len(self.lengths), self.batch_size * self.pool_batches
        order = torch.randperm(n, generator=self.generator)
        batches = []
        for s in range(0, n, pool):
            idx = order[s:s + pool]
            idx = idx[torch.argsort(self.lengths[idx], stable=True)]
            batches += [idx[i:i + self.batch_size].tolist() for i in range(0, len(idx), self.batch_size)]
        shuffled = [batches[b] for b in torch.randperm(len(batches), generator=self.generator).tolist()]
        yield from shard_batches(shuffled, self.world_size, self.rank)             # this process' share


def bucketed_loader(dataset, batch_size: int, seed: int = 0, pool_batches: int = 50,
                    world_size: int = 1, rank: int = 0):
    """A training DataLoader over a :class:`~bertcourse.data.PretrainDataset` whose batches
    hold pairs of similar length (:class:`LengthBucketSampler`), seeded by ``seed``. With
    ``world_size`` processes, process ``rank`` gets its share (every process must pass the
    same ``seed``)."""
    check_positive_int("seed", seed, allow_zero=True)
    lengths = getattr(dataset, "lengths", None)   # a PretrainDataset knows them; others are read
    if lengths is None:
        lengths = [int(dataset[i]["valid_lens"]) for i in range(len(dataset))]
    sampler = LengthBucketSampler(lengths, batch_size, pool_batches, torch.Generator().manual_seed(seed),
                                  world_size=world_size, rank=rank)
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler)


# ---------------------------------------------------------------------------------------
# Cheap dropout masks and fast float32 matrix products
# ---------------------------------------------------------------------------------------

def dropout_mask(shape, p: float, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
    """A dropout mask of ``shape``: 0 with probability ``p``, else ``1 / (1 - p)``.

    ``x * dropout_mask(x.shape, p)`` is dropout. Why not ``torch.nn.functional.dropout``? On
    the CPU it draws one Bernoulli number at a time; here every 64-bit random integer gives
    two independent 31-bit numbers ``r``, and an entry is kept when ``r >= p * 2**31``
    (``p`` rounded to a multiple of ``2**-31``). The mask takes 10 ms instead of 25 for a
    (512, 64, 128) tensor on one core of the benchmark CPU, with the same distribution; the
    draws come from torch's generator (of ``device``), so seeding repeats them.
    """
    check_probability("p", p)
    n = math.prod(shape)
    bits = torch.empty((n + 1) // 2, dtype=torch.int64, device=device).random_()   # 63 random bits each
    r = bits.view(torch.int32)[:n].view(shape) & 0x7FFFFFFF                          # two 31-bit numbers each
    mask = (r >= round(p * 2 ** 31)) * (1.0 / (1.0 - p))                            # float32: 0 or 1 / (1 - p)
    return mask if mask.dtype == dtype else mask.to(dtype)


def _dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    if not training or p == 0:
        return x
    return x * dropout_mask(x.shape, p, torch.promote_types(x.dtype, torch.float32), x.device)


def _add_dropout(X: torch.Tensor, Y: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``X + dropout(Y)`` in one pass (the residual connection of "add & norm")."""
    if not training or p == 0:
        return X + Y
    return torch.addcmul(X, Y, dropout_mask(Y.shape, p, torch.promote_types(Y.dtype, torch.float32), Y.device))


# PyTorch sends float32 matrix products on x86 CPUs to MKL; on the AMD EPYC of the course's
# benchmarks MKL reaches 60-90 GFLOP/s per core where oneDNN (also inside PyTorch, used for
# bfloat16) reaches 170-210. ``torch.ops.mkldnn._linear_pointwise`` is oneDNN's linear layer;
# it is internal to PyTorch, so it is checked once and not used when missing or wrong.
# oneDNN compiles and keeps a kernel for every new shape (about 1 MB each, up to a thousand of
# them): it is used only for large products (small ones gain little), and for at most
# ONEDNN_MAX_SHAPES shapes, so that batches of ever new lengths cannot fill the memory.
ONEDNN_MAX_SHAPES = 32
_ONEDNN = {"wanted": True, "works": None, "shapes": set(), "min_product": 2 ** 27}


def use_onednn(enabled: bool, min_product: int = 2 ** 27) -> None:
    """Switch :func:`linear` (and :func:`fused_mlm_loss`) between oneDNN's float32 products
    (``True``, the default where available) and PyTorch's usual ones (``False``).
    ``min_product``: the smallest product (multiply-adds) that goes to oneDNN (default
    2**27; tests use 0). Forgets the shapes seen so far."""
    check_bool("enabled", enabled)
    check_positive_int("min_product", min_product, allow_zero=True)
    _ONEDNN.update(wanted=enabled, min_product=min_product, shapes=set())


def onednn_enabled() -> bool:
    """Whether float32 products on the CPU go to oneDNN: wanted (:func:`use_onednn`), an x86
    CPU, and PyTorch's oneDNN linear layer present and correct on a small test."""
    if not _ONEDNN["wanted"]:
        return False
    if _ONEDNN["works"] is None:
        _ONEDNN["works"] = _onednn_works()
    return _ONEDNN["works"]


def _onednn_works() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64") or not torch.backends.mkldnn.is_available():
        return False
    try:
        a, w, b = torch.randn(5, 3), torch.randn(4, 3), torch.randn(4)
        return bool(torch.allclose(_mm_t(a, w, b), F.linear(a, w, b), atol=1e-5))
    except Exception:            # an older or newer PyTorch without this operator
        return False


def _mm_t(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b.T + bias`` with oneDNN (2-D ``a`` and ``b``; they may be transposed views)."""
    return torch.ops.mkldnn._linear_pointwise(a, b, bias, "none", [], "")


def _use_onednn_for(x: torch.Tensor, shape: tuple) -> bool:
    """Whether the product of ``shape`` = (rows, inner, outer) on ``x`` goes to oneDNN."""
    if not (x.device.type == "cpu" and x.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
            and math.prod(shape) >= _ONEDNN["min_product"] and onednn_enabled()):
        return False
    seen = _ONEDNN["shapes"]
    if shape not in seen and len(seen) >= ONEDNN_MAX_SHAPES:
        return False
    seen.add(shape)
    return True


class _OneDNNLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` and its gradients with oneDNN's float32 products."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return _mm_t(x.reshape(-1, x.shape[-1]), weight, bias).view(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        g, x2 = grad.reshape(-1, grad.shape[-1]), x.reshape(-1, x.shape[-1])
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = _mm_t(g, weight.t().contiguous()).view(x.shape)
        if ctx.needs_input_grad[1]:
            # sum over the rows of g^T x; oneDNN is fastest with the narrower side first
            grad_w = _mm_t(x2.t(), g.t()).t() if x2.shape[1] <= g.shape[1] else _mm_t(g.t(), x2.t())
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = g.sum(0)
        return grad_x, grad_w, grad_b


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear``: ``(..., in) -> (..., out)``, with oneDNN's float32
    products on the CPU when :func:`onednn_enabled` and the product is large (same numbers up
    to rounding)."""
    if (weight.dtype == torch.float32 and (bias is None or bias.dtype == torch.float32)
            and _use_onednn_for(x, (x.numel() // max(x.shape[-1], 1), *weight.shape[::-1]))):
        return _OneDNNLinear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


# ---------------------------------------------------------------------------------------
# The encoder, only where the pretraining losses read it
# ---------------------------------------------------------------------------------------

def fast_path_supported(model) -> bool:
    """Whether :func:`pretraining_features` knows ``model``'s layers: a BERT with its
    pretraining heads whose blocks are post-norm :class:`~bertcourse.transformer.EncoderBlock`."""
    encoder = getattr(model, "encoder", None)
    blocks = list(getattr(encoder, "blks", []))
    return (getattr(model, "mlm", None) is not None and getattr(model, "nsp", None) is not None
            and len(blocks) > 0
            and all(type(b) is EncoderBlock and not getattr(b, "norm_first", False)
                    and type(b.attention) is MultiHeadAttention for b in blocks))


def _block(blk: EncoderBlock, X: torch.Tensor, bias: torch.Tensor, rows: torch.Tensor | None,
           training: bool) -> torch.Tensor:
    """One post-norm encoder block on ``X`` (batch, seq, d), the same computation as
    ``blk(X, valid_lens)``. ``bias`` (batch, 1, 1, seq) is 0 for real keys and very negative
    for padding. ``rows`` (batch, r): compute the output only at these positions (the keys
    and values still come from every position); ``None``: everywhere."""
    mha = blk.attention
    B, n, d = X.shape
    h = mha.num_heads
    proj = (mha.W_q, mha.W_k, mha.W_v) if rows is None else (mha.W_k, mha.W_v)
    W = torch.cat([m.weight for m in proj])                 # one product instead of two or three
    b = None if mha.W_k.bias is None else torch.cat([m.bias for m in proj])
    heads = linear(X, W, b).view(B, n, len(proj), h, d // h).permute(2, 0, 3, 1, 4)   # (k, B, h, n, d/h)
    if rows is None:
        Xq, (q, k, v) = X, heads
    else:
        Xq = torch.gather(X, 1, rows[:, :, None].expand(-1, -1, d))                   # (B, r, d)
        q = linear(Xq, mha.W_q.weight, mha.W_q.bias).view(B, -1, h, d // h).transpose(1, 2)
        k, v = heads
    p = mha.attention.dropout
    if X.device.type == "cuda":           # the fused GPU kernels do dropout themselves
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype), dropout_p=p if training else 0.0)
    else:                                 # on the CPU, the fused kernel has no dropout: written out
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h)) + bias
        weights = _dropout(torch.softmax(scores, dim=-1), p, training)
        out = torch.matmul(weights.to(v.dtype), v)
    out = linear(out.transpose(1, 2).reshape(B, -1, d), mha.W_o.weight, mha.W_o.bias)
    n1, n2, ffn = blk.addnorm1, blk.addnorm2, blk.ffn
    Y = F.layer_norm(_add_dropout(Xq, out, n1.dropout.p, training), (d,), n1.ln.weight, n1.ln.bias, n1.ln.eps)
    Z = linear(get_activation(ffn.activation)(linear(Y, ffn.dense1.weight, ffn.dense1.bias)),
               ffn.dense2.weight, ffn.dense2.bias)
    return F.layer_norm(_add_dropout(Y, Z, n2.dropout.p, training), (d,), n2.ln.weight, n2.ln.bias, n2.ln.eps)


def pretraining_features(model, batch: dict) -> tuple:
    """What the two pretraining losses read, computed only where they read it:
    ``(mlm_features, nsp_logits)``, ``(batch, num_preds, num_hiddens)`` (what
    :class:`~bertcourse.bert.MaskLM` feeds its decoder) and ``(batch, 2)``.

    The same numbers as ``encoded = model.encoder(tokens, segments, valid_lens)``, then
    ``model.mlm.features(encoded, pred_positions)`` and ``model.nsp(model.pooler(encoded))``
    (tested; up to rounding), computed differently:

    * the losses read the last block's output at ``[CLS]`` and at the predicted positions
      only (11 of 64 positions in the d2l setting), so the last block computes its queries,
      attention, FFN and layer norms there and nowhere else (keys and values: everywhere);
    * Q, K and V come from one matrix product; attention is written out (on the CPU the fused
      kernel falls back to a slow path when dropout is on) with masks from :func:`dropout_mask`;
    * float32 products go to oneDNN (:func:`linear`).

    ``batch``: a pretraining batch (already trimmed, see :func:`trim_batch`) whose pairs all
    have at least one token. Needs :func:`fast_path_supported` (``model``).
    """
    check_batch(batch)
    if not fast_path_supported(model):
        raise TypeError("model must be a BERTModel with its pretraining heads and post-norm EncoderBlocks "
                        f"(see fast_path_supported), got {type(model).__name__}")
    tokens, segments, valid_lens = batch["tokens"], batch["segments"], batch["valid_lens"]
    positions = batch["pred_positions"]
    enc = model.encoder
    enc.check_inputs(tokens, segments)
    B, n = tokens.shape
    check_tensor("pred_positions", positions, ndim=2, expected=f"(batch={B}, num_preds)", floating=False)
    if positions.shape[0] != B or (positions.numel() and (positions.min() < 0 or positions.max() >= n)):
        raise ValueError(f"pred_positions must have shape (batch={B}, num_preds) with values in [0, seq={n}), "
                         f"got shape {shape_str(positions)}")
    mask = key_mask(valid_lens, (B, 1, 1, n))               # (B, 1, 1, n), True = a real token
    if valid_lens.dim() != 1 or int(valid_lens.min()) < 1:
        raise ValueError("valid_lens must be (batch,) lengths of at least 1 for pretraining_features, got "
                         f"shape {shape_str(valid_lens)}, smallest {int(valid_lens.min())}")
    bias = torch.zeros(mask.shape, device=tokens.device).masked_fill_(~mask, torch.finfo(torch.float32).min)
    training = model.training
    X = enc.token_embedding(tokens) + enc.segment_embedding(segments)
    X = _dropout(enc.embedding_norm(enc.pos_embedding(X)), enc.embedding_dropout.p, training)
    rows = torch.cat([torch.zeros_like(positions[:, :1]), positions], dim=1)   # [CLS], then the predictions
    for i, blk in enumerate(enc.blks):
        X = _block(blk, X, bias, rows if i == len(enc.blks) - 1 else None, training)
    # X: (B, 1 + num_preds, d); row 0 is [CLS], rows 1.. the predicted positions
    P = positions.shape[1]
    features = model.mlm.features(X, torch.arange(1, P + 1, device=X.device).expand(B, P))
    return features, model.nsp(model.pooler(X))


# ---------------------------------------------------------------------------------------
# The MLM loss without the full logits
# ---------------------------------------------------------------------------------------

class _FusedLinearCrossEntropy(torch.autograd.Function):
    """Cross-entropy of ``H @ W.T + b`` against ``labels``, weighted by ``coef``, without
    keeping the ``(N, vocab)`` logits.

    Forward works on ``chunk`` rows at a time: logits (float32; from bfloat16 inputs they are
    rounded to bfloat16 first, as autocast would), softmax, the loss, and already the gradient
    of the loss with respect to the logits, ``coef * (softmax - one_hot)``. Those gradients are
    collected for ``block`` rows (in the input dtype) and turned into the gradients of ``H``,
    ``W`` and ``b`` with two matrix products and a sum per block. Backward only scales them.
    Memory: ``chunk x vocab`` + ``block x vocab`` values instead of several ``N x vocab``
    tensors; time: every pass over the logits happens while they are still in the cache.
    """

    @staticmethod
    def forward(ctx, H, W, b, labels, coef, chunk: int, block: int):
        N, d, V = H.shape[0], H.shape[1], W.shape[0]
        dev = H.device
        need_grad = any(ctx.needs_input_grad[:3])
        loss = torch.zeros((), dtype=torch.float32, device=dev)
        if need_grad:
            grad_H = torch.empty_like(H)
            grad_W = torch.zeros(W.shape, dtype=torch.float32, device=dev)
            grad_b = torch.zeros(V, dtype=torch.float32, device=dev)
            P = torch.empty(min(block, N), V, dtype=H.dtype, device=dev)       # d loss / d logits, one block
            Wt = None                                                          # W transposed, for oneDNN
        for b0 in range(0, N, block):
            b1 = min(b0 + block, N)
            for s in range(b0, b1, chunk):
                e = min(s + chunk, b1)
                if _use_onednn_for(H, (e - s, d, V)):
                    z = _mm_t(H[s:e], W, b)
                elif H.dtype == torch.float32:
                    z = torch.addmm(b, H[s:e], W.t())
                else:                           # a bfloat16 product (bias included), then float32
                    z = torch.addmm(b.to(H.dtype), H[s:e], W.t()).float()
                lab, c = labels[s:e], coef[s:e]
                zmax = z.amax(dim=1)
                picked = z.gather(1, lab[:, None]).squeeze(1)
                p = torch.softmax(z, dim=1)
                # log-sum-exp from the softmax: its largest entry is 1 / sum(exp(z - zmax)), never tiny
                lse = zmax - p.amax(dim=1).log()
                loss += ((lse - picked) * c).sum()                       # -log softmax[label], weighted
                if need_grad:
                    p.mul_(c[:, None])                                   # c * softmax
                    grad_b += p.sum(dim=0)
                    grad_b.index_add_(0, lab, -c)                        # minus c * one_hot
                    Pc = P[s - b0:e - b0]
                    Pc.copy_(p)
                    Pc[torch.arange(e - s, device=dev), lab] -= c.to(Pc.dtype)
            if need_grad:
                Pb, Hb = P[:b1 - b0], H[b0:b1]
                if _use_onednn_for(H, (b1 - b0, V, d)):
                    Wt = W.t().contiguous() if Wt is None else Wt
                    grad_H[b0:b1] = _mm_t(Pb, Wt)
                else:
                    torch.mm(Pb, W, out=grad_H[b0:b1])
                if _use_onednn_for(H, (d, b1 - b0, V)):
                    grad_W += _mm_t(Hb.t(), Pb.t()).t()                  # oneDNN is fastest as (d, V) = H^T P
                elif H.dtype == torch.float32:
                    grad_W.addmm_(Pb.t(), Hb)
                else:
                    grad_W += torch.mm(Pb.t(), Hb)
        if need_grad:
            ctx.save_for_backward(grad_H, grad_W.to(W.dtype), grad_b.to(b.dtype))
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_H, grad_W, grad_b = ctx.saved_tensors
        return (grad_H * grad_loss.to(grad_H.dtype), grad_W * grad_loss.to(grad_W.dtype),
                grad_b * grad_loss.to(grad_b.dtype), None, None, None, None)


def fused_mlm_loss(features: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   mlm_labels: torch.Tensor, mlm_weights: torch.Tensor,
                   chunk: int = 128, block: int = 1024) -> torch.Tensor:
    """The MLM loss of :func:`bertcourse.pretrain.mlm_loss`, computed from the features the
    MLM head feeds into its decoder, without building the full logits.

    ``features`` ``(batch, num_preds, num_hiddens)`` (what :class:`~bertcourse.bert.MaskLM`
    computes before ``decoder``), ``weight`` ``(vocab, num_hiddens)`` and ``bias``
    ``(vocab,)`` of the decoder, ``mlm_labels`` ``(batch, num_preds)`` ids, ``mlm_weights``
    ``(batch, num_preds)``, 1 for real predictions and 0 for padding slots.

    Same value and gradients as ``mlm_loss(features @ weight.T + bias, labels, weights)``
    (float32: up to rounding; bfloat16 features: the logits are rounded to bfloat16 as
    autocast would, the softmax and the loss are float32). Padding slots are dropped
    before any work is done. ``chunk`` rows of logits at a time (128 was fastest on the
    benchmark CPU; 32 and 256 were 10-30 % slower), gradients turned into products every
    ``block`` rows.
    """
    check_positive_int("chunk", chunk)
    check_positive_int("block", block)
    check_tensor("features", features, ndim=3, expected="(batch, num_preds, num_hiddens)", floating=True)
    batch, num_preds, d = features.shape
    check_tensor("weight", weight, ndim=2, expected=f"(vocab, num_hiddens={d})", floating=True)
    if weight.shape[1] != d:
        raise ValueError(f"weight must have shape (vocab, num_hiddens={d}), got shape {shape_str(weight)}")
    vocab = weight.shape[0]
    check_tensor("bias", bias, ndim=1, expected=f"(vocab={vocab},)", floating=True)
    if bias.shape[0] != vocab:
        raise ValueError(f"bias must have shape (vocab={vocab},), got shape {shape_str(bias)}")
    exp = f"(batch={batch}, num_preds={num_preds})"
    check_tensor("mlm_labels", mlm_labels, ndim=2, expected=exp, floating=False)
    check_tensor("mlm_weights", mlm_weights, ndim=2, expected=exp, floating=True)
    for name, x in (("mlm_labels", mlm_labels), ("mlm_weights", mlm_weights)):
        if tuple(x.shape) != (batch, num_preds):
            raise ValueError(f"{name} must have shape {exp}, got shape {shape_str(x)}")
    if mlm_labels.numel() and (mlm_labels.min() < 0 or mlm_labels.max() >= vocab):
        raise ValueError(f"mlm_labels must be ids in 0..{vocab - 1}, got values from "
                         f"{int(mlm_labels.min())} to {int(mlm_labels.max())}")
    check_positive_int("chunk", chunk)
    check_positive_int("block", block)
    w = mlm_weights.reshape(-1).float()
    real = (w != 0).nonzero().squeeze(1)
    if real.numel() == 0:           # no prediction in the batch: loss 0, still differentiable
        return (features.sum() + weight.sum() + bias.sum()) * 0.0
    H = features.reshape(-1, d).index_select(0, real)
    W = weight.to(H.dtype)
    coef = w[real] / w.sum().clamp(min=1e-8)
    return _FusedLinearCrossEntropy.apply(H, W, bias.float() if H.dtype == torch.float32 else bias,
                                          mlm_labels.reshape(-1)[real], coef, chunk, max(block, chunk))

"""Speed-ups of chapter 7's pretraining step that change no number the model computes.

* :func:`trim_batch` drops the padding columns that no pair of a batch uses;
* :class:`LengthBucketSampler` / :func:`bucketed_loader` batch pairs of similar length, so
  that trimming removes most of the padding;
* :func:`fused_mlm_loss` computes the MLM cross-entropy chunk by chunk, without ever holding
  the full ``(predictions, vocab)`` logits and their gradient.

``tests/test_speedups.py`` proves each gives the same values and gradients as the plain way.
"""
from __future__ import annotations

import math

import torch

from ._checks import check_positive_int, check_tensor, shape_str
from .data import check_batch

__all__ = ["trim_batch", "LengthBucketSampler", "bucketed_loader", "fused_mlm_loss"]


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


class LengthBucketSampler(torch.utils.data.Sampler):
    """Batches of indices in which the pairs have similar lengths.

    Each epoch: shuffle all indices, cut them into pools of ``pool_batches * batch_size``,
    sort each pool by length, cut it into batches, and shuffle the batches. Every pair is
    still seen once per epoch in a random batch, but a batch of short pairs no longer pays
    for the padding of one long pair (see :func:`trim_batch`). ``lengths[i]`` is the
    length of example ``i``; ``generator`` makes the order repeatable.
    """

    def __init__(self, lengths, batch_size: int, pool_batches: int = 50, generator=None):
        check_positive_int("batch_size", batch_size)
        check_positive_int("pool_batches", pool_batches)
        self.lengths = torch.as_tensor(lengths)
        if self.lengths.dim() != 1 or len(self.lengths) == 0:
            raise ValueError(f"lengths must be a non-empty 1-D sequence, got shape {shape_str(self.lengths)}")
        self.batch_size, self.pool_batches = batch_size, pool_batches
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        n, pool = len(self.lengths), self.batch_size * self.pool_batches
        order = torch.randperm(n, generator=self.generator)
        batches = []
        for s in range(0, n, pool):
            idx = order[s:s + pool]
            idx = idx[torch.argsort(self.lengths[idx], stable=True)]
            batches += [idx[i:i + self.batch_size].tolist() for i in range(0, len(idx), self.batch_size)]
        for b in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[b]


def bucketed_loader(dataset, batch_size: int, seed: int = 0, pool_batches: int = 50):
    """A training DataLoader over a :class:`~bertcourse.data.PretrainDataset` whose batches
    hold pairs of similar length (:class:`LengthBucketSampler`), seeded by ``seed``."""
    lengths = getattr(dataset, "lengths", None)   # a PretrainDataset knows them; others are read
    if lengths is None:
        lengths = [int(dataset[i]["valid_lens"]) for i in range(len(dataset))]
    sampler = LengthBucketSampler(lengths, batch_size, pool_batches, torch.Generator().manual_seed(seed))
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler)


class _FusedLinearCrossEntropy(torch.autograd.Function):
    """Cross-entropy of ``H @ W.T + b`` against ``labels``, weighted by ``coef``, without
    keeping the ``(N, vocab)`` logits.

    Forward works on ``chunk`` rows at a time: logits (in the input dtype, converted to
    float32), log-sum-exp, the loss, and already the gradient of the loss with respect to
    the logits, ``coef * (softmax - one_hot)``. Those gradients are collected for
    ``block`` rows (in the input dtype) and turned into the gradients of ``H``, ``W`` and
    ``b`` with three matrix products per block. Backward only scales them.
    Memory: ``chunk x vocab`` float32 + ``block x vocab`` values instead of several
    ``N x vocab`` tensors; time: about half, because every pass over the logits happens
    while they are still in the cache.
    """

    @staticmethod
    def forward(ctx, H, W, b, labels, coef, chunk: int, block: int):
        N, V = H.shape[0], W.shape[0]
        need_grad = any(ctx.needs_input_grad[:3])
        loss = torch.zeros((), dtype=torch.float32)
        if need_grad:
            grad_H = torch.empty_like(H)
            grad_W = torch.zeros(W.shape, dtype=torch.float32)
            grad_b = torch.zeros(V, dtype=torch.float32)
            P = torch.empty(min(block, N), V, dtype=H.dtype)       # d loss / d logits, one block
        z_buf = torch.empty(min(chunk, N), V, dtype=torch.float32)
        bias = b.float()
        Wt = W.t()
        for b0 in range(0, N, block):
            b1 = min(b0 + block, N)
            for s in range(b0, b1, chunk):
                e = min(s + chunk, b1)
                z = z_buf[:e - s]
                if H.dtype == torch.float32:
                    torch.addmm(bias, H[s:e], Wt, out=z)
                else:                       # bf16 product, then float32 for the softmax
                    z.copy_(torch.mm(H[s:e], Wt)).add_(bias)
                z.sub_(z.amax(dim=1, keepdim=True))                  # stable softmax
                lab = labels[s:e]
                picked = z.gather(1, lab[:, None]).squeeze(1)
                torch.exp(z, out=z)
                total = z.sum(dim=1)
                c = coef[s:e]
                loss += ((total.log() - picked) * c).sum()           # -log softmax[label]
                if need_grad:
                    z.mul_((c / total)[:, None])                     # c * softmax
                    z[torch.arange(e - s), lab] -= c                 # c * (softmax - one_hot)
                    grad_b += z.sum(dim=0)
                    P[s - b0:e - b0].copy_(z)
            if need_grad:
                Pb = P[:b1 - b0]
                torch.mm(Pb, W, out=grad_H[b0:b1])
                if H.dtype == torch.float32:
                    grad_W.addmm_(Pb.t(), H[b0:b1])
                else:
                    grad_W += torch.mm(Pb.t(), H[b0:b1])
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
    before any work is done.
    """
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
    return _FusedLinearCrossEntropy.apply(H, W, bias, mlm_labels.reshape(-1)[real], coef,
                                          chunk, max(block, chunk))

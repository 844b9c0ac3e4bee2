"""bertcourse.batching: trimming padding and batching by length change no number."""
import math

import pytest
import torch
from tiny_bert import full_batch, interrupt_at, small_model

from bertcourse.batching import shard_batches, LengthBucketSampler, bucketed_loader, trim_batch
from bertcourse.checkpoints import load_checkpoint, save_checkpoint
from bertcourse.pretrain import mlm_loss, nsp_loss, pretraining_losses, pretraining_step
from bertcourse.training import TrainConfig, Trainer


def test_trim_batch_changes_nothing_but_the_speed(tokenizer, dataset):
    model = small_model(tokenizer).eval()
    batch = full_batch(dataset)
    trimmed = trim_batch(batch)
    longest = int(batch["valid_lens"].max())
    assert trimmed["tokens"].shape == (len(dataset), longest) < batch["tokens"].shape
    assert torch.equal(trimmed["tokens"], batch["tokens"][:, :longest])
    for key in ("valid_lens", "pred_positions", "mlm_labels", "mlm_weights", "nsp_labels"):
        assert trimmed[key] is batch[key]
    a = pretraining_losses(model, batch, fused=False)          # trims inside
    _, mlm_full, nsp_full = model(batch["tokens"], batch["segments"], batch["valid_lens"],
                                  batch["pred_positions"])
    assert torch.allclose(a["mlm_loss"], mlm_loss(mlm_full, batch["mlm_labels"], batch["mlm_weights"]), atol=1e-5)
    assert torch.allclose(a["nsp_loss"], nsp_loss(nsp_full, batch["nsp_labels"]), atol=1e-5)
    with pytest.raises(ValueError, match=r"missing the key\(s\) \['nsp_labels'\]"):
        trim_batch({k: v for k, v in batch.items() if k != "nsp_labels"})
    with pytest.raises(TypeError, match="batch must be a dict"):
        trim_batch([batch["tokens"]])


def test_length_buckets_cover_every_example_once_with_similar_lengths():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(5, 60, (1000,), generator=g)
    sampler = LengthBucketSampler(lengths, batch_size=32, pool_batches=8, generator=torch.Generator().manual_seed(1))
    batches = list(sampler)
    assert len(batches) == len(sampler) == math.ceil(1000 / 32)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    spread = sum(int(lengths[b].max() - lengths[b].min()) for b in batches) / len(batches)
    random_spread = sum(int(lengths[b].max() - lengths[b].min())
                        for b in torch.randperm(1000, generator=g).split(32)) / len(batches)
    assert spread < random_spread / 4, (spread, random_spread)
    again = list(LengthBucketSampler(lengths, 32, 8, torch.Generator().manual_seed(1)))
    assert again == batches                                      # seeded: repeatable
    assert list(sampler) != batches                              # the next epoch is a new order
    with pytest.raises(ValueError, match="lengths must be a non-empty 1-D sequence"):
        LengthBucketSampler([], 4)


def test_resume_with_a_bucketed_loader(tokenizer, dataset, tmp_path):
    cfg = TrainConfig(steps=8, eval_every=None, warmup_steps=2, amp=False, seed=1)
    a = small_model(tokenizer)
    Trainer(a, bucketed_loader(dataset, 4, seed=5, pool_batches=2), pretraining_step(), cfg).fit(progress=False, plot=False)
    b = small_model(tokenizer)
    t = Trainer(b, bucketed_loader(dataset, 4, seed=5, pool_batches=2), pretraining_step(), cfg)
    interrupt_at(t, 6)                                     # in the second epoch (5 batches each)
    t.fit(progress=False, plot=False)
    save_checkpoint(tmp_path, b, tokenizer, t)
    b, _, state = load_checkpoint(tmp_path)
    t = Trainer(b, bucketed_loader(dataset, 4, seed=5, pool_batches=2), pretraining_step(), cfg)
    t.load_state_dict(state)
    t.fit(progress=False, plot=False)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k


def test_shard_batches_gives_every_process_an_equal_disjoint_share():
    batches = list(range(11))
    shares = [shard_batches(batches, 3, rank) for rank in range(3)]
    assert shares == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]          # the last 11 % 3 = 2 batches left out
    assert shard_batches(batches, 1, 0) == batches
    with pytest.raises(ValueError, match=r"rank must be in 0\.\.world_size-1 = 0\.\.2, got 3"):
        shard_batches(batches, 3, 3)


def test_ch14_the_bucket_sampler_deals_one_processs_batches_out_like_cards():
    """Chapter 14, section 2: on chapter 7's training pairs, batches of 128, two ranks seeded
    alike get every other batch of the one-process order, equally many, and no pair twice."""
    import torch
    from bertcourse.batching import LengthBucketSampler
    from bertcourse.data import load_pretrain_data
    loader, _ = load_pretrain_data(batch_size=16, max_len=64, split="train", seed=0, shuffle=False)
    lengths = loader.dataset.lengths
    one = list(LengthBucketSampler(lengths, 128, generator=torch.Generator().manual_seed(0)))
    ranks = [list(LengthBucketSampler(lengths, 128, generator=torch.Generator().manual_seed(0), world_size=2,
                                      rank=r)) for r in range(2)]
    assert len(ranks[0]) == len(ranks[1]) == len(one) // 2
    assert ranks[0] == one[0:2 * len(ranks[0]):2] and ranks[1] == one[1:2 * len(ranks[1]):2]
    assert not set().union(*map(set, ranks[0])) & set().union(*map(set, ranks[1]))


def test_length_loader_buckets_training_and_orders_an_evaluation_by_length():
    from bertcourse.batching import length_loader

    class Lengths(torch.utils.data.Dataset):
        lengths = torch.tensor([5, 2, 9, 2, 7, 3])

        def __len__(self):
            return len(self.lengths)

        def __getitem__(self, i):
            return i

    ds = Lengths()
    order = [i for batch in length_loader(ds, list, 2, by_length=True) for i in batch]
    assert order == [1, 3, 5, 0, 4, 2]                        # shortest first, ties in their order
    assert [i for batch in length_loader(ds, list, 4) for i in batch] == list(range(6))
    seen = sorted(i for batch in length_loader(ds, list, 2, shuffle=True, seed=3) for i in batch)
    assert seen == list(range(6))                              # every example once an epoch
    with pytest.raises(ValueError, match="by_length=True orders the batches of an evaluation"):
        length_loader(ds, list, 2, shuffle=True, by_length=True)

"""bertcourse.ddp_example, the standard DDP script, and the contract of a data-parallel sampler.

The contract (what chapter 14 teaches), for ``DistributedSampler`` and for the course's
``LengthBucketSampler`` alike, checked by one helper (:func:`check_contract`):

* every rank gets the same number of batches in every epoch (a rank with one batch more would
  wait forever in an all-reduce that nobody else joins);
* the ranks' shards are disjoint and together cover the epoch, up to what the sampler does to
  make the shares equal: ``DistributedSampler`` (``drop_last=False``, its default) *pads* — it
  appends the first ``total - n`` indices of the shuffled order again, ``total`` being ``n``
  rounded up to a multiple of the number of ranks, so those examples are seen twice, on two
  ranks; with ``drop_last=True`` it cuts the last ``n mod N`` instead. ``LengthBucketSampler``
  leaves out the last ``batches mod N`` batches of each epoch;
* the order changes from epoch to epoch: ``DistributedSampler`` only if ``set_epoch(epoch)`` is
  called (it shuffles with ``seed + epoch``: without it, every epoch repeats epoch 0), the
  course's sampler by itself (its generator, seeded alike on every rank, moves on each epoch).

The script itself runs under ``torchrun`` with two gloo processes (one thread each), once, and
is checked against an oracle that does not use DDP: one process taking, step by step, the
examples of both ranks as one batch of twice the size.
"""
import os
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DistributedSampler

from bertcourse.batching import LengthBucketSampler
from bertcourse.ddp_example import FEATURES, main, toy_data, toy_model
from bertcourse.distributed import backend_for, launch

WORLD = 2


# ---------------------------------------------------------------------------------------
# The contract of a data-parallel sampler: one helper for both samplers
# ---------------------------------------------------------------------------------------

def draw_epochs(batch_samplers, epochs: int, set_epoch: bool = True) -> list:
    """``shards[epoch][rank]``: the batches (lists of example indices) each rank's sampler gives
    in each epoch, calling ``set_epoch(epoch)`` first where the sampler has it (a
    ``BatchSampler`` passes it to the sampler inside) and ``set_epoch`` is True."""
    shards = []
    for epoch in range(epochs):
        for s in batch_samplers:
            inner = getattr(s, "sampler", s)
            if set_epoch and hasattr(inner, "set_epoch"):
                inner.set_epoch(epoch)
        shards.append([[list(map(int, b)) for b in s] for s in batch_samplers])
    return shards


def check_contract(shards, num_examples: int, *, repeated: int = 0, left_out=range(1),
                   order_changes: bool = True) -> None:
    """Assert the contract on ``shards[epoch][rank]`` (lists of batches) over ``num_examples``
    examples: in every epoch the same number of batches on every rank; no example twice on one
    rank; exactly ``repeated`` examples on two ranks (DistributedSampler's padding); the number
    of examples nobody sees in ``left_out``; and the order of every rank changes from one
    epoch to the next (``order_changes``) or repeats exactly (``order_changes=False``)."""
    for epoch, ranks in enumerate(shards):
        counts = [len(batches) for batches in ranks]
        assert len(set(counts)) == 1 and counts[0] > 0, f"epoch {epoch}: batches per rank {counts}"
        per_rank = [[i for b in batches for i in b] for batches in ranks]
        for rank, examples in enumerate(per_rank):
            assert len(examples) == len(set(examples)), f"epoch {epoch}: rank {rank} sees an example twice"
            assert set(examples) <= set(range(num_examples)), f"epoch {epoch}: rank {rank}: unknown indices"
        on_two = [i for i in range(num_examples) if sum(i in set(e) for e in per_rank) > 1]
        assert len(on_two) == repeated, f"epoch {epoch}: {len(on_two)} examples on two ranks, expected {repeated}"
        missing = num_examples - len(set().union(*map(set, per_rank)))
        assert missing in left_out, f"epoch {epoch}: {missing} examples left out, expected {left_out}"
    for epoch in range(1, len(shards)):
        for rank in range(len(shards[0])):
            same = shards[epoch][rank] == shards[epoch - 1][rank]
            assert same != order_changes, (f"rank {rank}: epoch {epoch} {'repeats' if same else 'differs from'} "
                                           f"epoch {epoch - 1}")


def distributed_samplers(n: int, batch_size: int, world: int = WORLD, **kwargs) -> list:
    data = list(range(n))            # DistributedSampler needs only len(dataset)
    return [BatchSampler(DistributedSampler(data, num_replicas=world, rank=r, shuffle=True, seed=3, **kwargs),
                         batch_size, drop_last=False) for r in range(world)]


@pytest.mark.parametrize("n, world, repeated", [(96, 2, 0), (101, 2, 1), (100, 3, 2), (7, 4, 1)])
def test_distributed_sampler_pads_to_equal_shares_and_set_epoch_reshuffles(n, world, repeated):
    """Not divisible: the shares are equal because the sampler repeats the first ``total - n``
    examples of the shuffled order (on other ranks), e.g. 101 examples on 2 ranks: 51 each, one
    example twice."""
    shards = draw_epochs(distributed_samplers(n, 8, world), epochs=3)
    check_contract(shards, n, repeated=repeated)
    assert all(len(sum(batches, [])) == -(-n // world) for batches in shards[0])     # ceil(n / N) each


def test_distributed_sampler_drop_last_cuts_instead_of_padding():
    shards = draw_epochs(distributed_samplers(101, 8, drop_last=True), epochs=3)
    check_contract(shards, 101, repeated=0, left_out=range(1, 2))
    assert [len(sum(batches, [])) for batches in shards[0]] == [50, 50]


def test_without_set_epoch_every_epoch_repeats_the_first():
    """The pitfall: a DistributedSampler whose set_epoch is never called shuffles with the
    same seed every epoch. Shares and batch counts stay right, so nothing fails: the model just
    sees the examples in the same order and the same batches every epoch."""
    samplers = distributed_samplers(96, 8)
    check_contract(draw_epochs(samplers, epochs=3, set_epoch=False), 96, order_changes=False)
    # the check can fail: it notices both a repeated order and a changed one
    with pytest.raises(AssertionError, match="epoch 1 repeats epoch 0"):
        check_contract(draw_epochs(samplers, epochs=2, set_epoch=False), 96)
    with pytest.raises(AssertionError, match="epoch 1 differs from epoch 0"):
        check_contract(draw_epochs(samplers, epochs=2), 96, order_changes=False)


def test_the_contract_check_catches_broken_shards():
    good = draw_epochs(distributed_samplers(96, 8), epochs=1)
    with pytest.raises(AssertionError, match=r"batches per rank \[6, 5\]"):
        check_contract([[good[0][0], good[0][1][:-1]]], 96)                 # one rank a batch short
    with pytest.raises(AssertionError, match="examples on two ranks"):
        check_contract([[good[0][0], good[0][0]]], 96)                      # a seed per rank gone wrong
    with pytest.raises(AssertionError, match="left out"):
        check_contract([[good[0][0][:-1], good[0][1][:-1]]], 96)


@pytest.mark.parametrize("n, batch_size, world", [(1000, 32, 3), (96, 8, 2), (101, 8, 2)])
def test_the_course_sampler_keeps_the_same_contract(n, batch_size, world):
    """LengthBucketSampler: the same seed on every rank, every rank its share of the batches;
    the last ``batches mod N`` batches are left out (at most N - 1 batches' worth of examples),
    nothing is repeated, and each epoch has a new order without any set_epoch."""
    lengths = torch.randint(5, 60, (n,), generator=torch.Generator().manual_seed(0))
    samplers = [LengthBucketSampler(lengths, batch_size, 4, torch.Generator().manual_seed(3), world_size=world,
                                    rank=r) for r in range(world)]
    assert not hasattr(samplers[0], "set_epoch")
    shards = draw_epochs(samplers, epochs=3)
    batches = -(-n // batch_size)
    check_contract(shards, n, repeated=0, left_out=range((batches % world) * batch_size + 1))
    assert all(len(shards[0][r]) == batches // world for r in range(world))


# ---------------------------------------------------------------------------------------
# The script under torchrun: two gloo processes, and an oracle without DDP
# ---------------------------------------------------------------------------------------

EXAMPLES, BATCH, EPOCHS, LR = 101, 8, 3, 0.5        # 101: DistributedSampler pads one example


# Runs the script exactly as `-m bertcourse.ddp_example` does, with torch.save wrapped so that
# every rank records which files it saved (in saves-RANK.txt, next to, not in, the run's --out).
RECORD_SAVES = textwrap.dedent("""
    import os, runpy, torch
    saves, save = [], torch.save

    def recording_save(obj, f, *args, **kwargs):      # files only: all_gather_object saves into memory too
        if isinstance(f, (str, os.PathLike)):
            saves.append(os.path.basename(f))
        return save(obj, f, *args, **kwargs)

    torch.save = recording_save
    try:
        runpy.run_module("bertcourse.ddp_example", run_name="__main__", alter_sys=True)
    finally:
        with open(f"saves-{os.environ['RANK']}.txt", "w") as f:
            f.write(" ".join(saves))
""")


@pytest.fixture(scope="module")
def torchrun_run(tmp_path_factory):
    """One run of ``torchrun --nproc-per-node=2 -m bertcourse.ddp_example --trace`` (through
    RECORD_SAVES), with ``--tee 3``: torchrun prefixes every line a process prints with
    ``[default<local rank>]:``, which shows who printed it."""
    folder = tmp_path_factory.mktemp("ddp")
    (folder / "record_saves.py").write_text(RECORD_SAVES)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={WORLD}",
               "--tee", "3", "--log-dir", str(folder / "logs"), "record_saves.py",
               "--out", str(folder / "out"), "--examples", str(EXAMPLES), "--batch-size", str(BATCH),
               "--epochs", str(EPOCHS), "--lr", str(LR), "--device", "cpu", "--trace"]
    printed = launch(command, cwd=folder, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout_s=300)
    return {"printed": printed, "trace": torch.load(folder / "out" / "trace.pt"), "out": folder / "out",
            "saves": [(folder / f"saves-{r}.txt").read_text().split() for r in range(WORLD)]}


@pytest.mark.slow
def test_every_rank_runs_the_same_batches_on_disjoint_shards_reshuffled_each_epoch(torchrun_run):
    trace = torchrun_run["trace"]
    assert [r["rank"] for r in trace] == list(range(WORLD))
    shards = [[trace[r]["batches"][e] for r in range(WORLD)] for e in range(EPOCHS)]
    check_contract(shards, EXAMPLES, repeated=1)                # 101 on 2 ranks: 51 each, one twice
    assert [len(b) for b in shards[0]] == [7, 7]                # ceil(51 / 8) batches on each rank
    assert [len(b) for b in shards[0][0]] == [8] * 6 + [3]


@pytest.mark.slow
def test_the_ranks_end_bitwise_equal_and_only_rank_0_prints_and_saves(torchrun_run):
    trace, printed = torchrun_run["trace"], torchrun_run["printed"]
    for name, value in trace[0]["weights"].items():
        assert torch.equal(value, trace[1]["weights"][name]), name
    lines = printed.strip().splitlines()
    assert all(line.startswith("[default0]:") for line in lines), printed        # rank 0 alone printed
    assert sum("epoch" in line and "mean loss" in line for line in lines) == EPOCHS
    assert f"{WORLD} processes (gloo): 51 examples per rank and epoch, 7 batches" in lines[0]
    assert torchrun_run["saves"] == [["trace.pt", "model.pt"], []]              # rank 0 alone saved
    assert sorted(p.name for p in torchrun_run["out"].iterdir()) == ["model.pt", "trace.pt"]
    saved = torch.load(torchrun_run["out"] / "model.pt")
    assert not any(k.startswith("module.") for k in saved)                      # model.module was saved
    assert saved.keys() == trace[0]["weights"].keys()
    assert all(torch.equal(saved[k], trace[0]["weights"][k]) for k in saved)


def one_process(batches_per_epoch) -> dict:
    """The oracle: one process, no DDP, no sampler; plain SGD on the given batches of example
    indices, mean cross-entropy over each batch."""
    x, y, _ = toy_data(EXAMPLES, 0).tensors
    model = toy_model(0)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for batches in batches_per_epoch:
        for idx in batches:
            loss = F.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.state_dict()


@pytest.mark.slow
def test_two_ranks_of_batch_b_train_like_one_process_of_batch_2b(torchrun_run):
    """Every rank has as many examples in its k-th batch as the other (equal shares), so the
    mean of the two ranks' mean losses is the mean loss of their union, and the averaged
    gradient is that batch's gradient. Tolerance: 1e-5 (float32 sums taken in another order;
    about 1e-7 measured); training on rank 0's batches alone ends far outside it."""
    trace = torchrun_run["trace"]
    union = [[a + b for a, b in zip(trace[0]["batches"][e], trace[1]["batches"][e])] for e in range(EPOCHS)]
    assert all(len(b) == 2 * BATCH for epoch in union for b in epoch[:-1])
    oracle = one_process(union)
    ddp = trace[0]["weights"]
    for name in ddp:
        assert torch.allclose(ddp[name], oracle[name], rtol=0, atol=1e-5), name
    alone = one_process(trace[0]["batches"])
    assert max((alone[n] - ddp[n]).abs().max().item() for n in ddp) > 1e-2


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------

def test_toy_data_and_model_are_repeatable_and_name_wrong_input():
    a, b = toy_data(10, 1), toy_data(10, 1)
    assert all(torch.equal(s, t) for s, t in zip(a.tensors, b.tensors))
    x, y, index = a.tensors
    assert x.shape == (10, FEATURES) and set(y.tolist()) <= {0, 1} and index.tolist() == list(range(10))
    assert toy_model(0)(x).shape == (10, 2)
    assert all(torch.equal(p, q) for p, q in zip(toy_model(2).parameters(), toy_model(2).parameters()))
    with pytest.raises(ValueError, match="num_examples must be > 0, got 0"):
        toy_data(0)
    with pytest.raises(TypeError, match="seed must be an int"):
        toy_model(0.5)


def test_backend_for_each_device():
    assert backend_for(torch.device("cpu")) == "gloo"
    assert backend_for(torch.device("cuda", 1)) == "nccl"        # a name only: no GPU needed
    with pytest.raises(TypeError, match="device must be a device .*got str"):
        backend_for("cuda")


def test_the_command_line_wants_torchrun_and_valid_options(tmp_path, monkeypatch, capsys):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert main(["--out", str(tmp_path)]) == 2
    assert "start it with torchrun" in capsys.readouterr().err
    assert main(["--out", str(tmp_path), "--examples", "0"]) == 2
    assert "--examples must be > 0, got 0" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []

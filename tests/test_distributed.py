"""bertcourse.distributed and data-parallel training: devices, shards, and two processes that
compute exactly what one process computes on the same global batch."""
import dataclasses
import os
import socket
import sys
from collections import namedtuple

import pytest
import torch
import torch.multiprocessing as mp
from hypothesis import given, settings, strategies as st
from tiny_bert import interrupt_cli, small_model

from bertcourse.data import PretrainDataset
from bertcourse.distributed import (
    StepModule,
    agree,
    data_parallel,
    launch,
    device_of,
    global_mean_loss,
    init_distributed,
    move_to,
    resolve_device,
    step_seed,
    world,
)
from bertcourse.pretrain import pretraining_losses, pretraining_step
from bertcourse.batching import LengthBucketSampler, bucketed_loader
from bertcourse.training import TrainConfig, Trainer

WORLD, PER_RANK = 2, 4


# ---------------------------------------------------------------------------------------
# Devices and batches
# ---------------------------------------------------------------------------------------

def test_resolve_device_names_what_is_wrong():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        resolve_device("gpu")
    with pytest.raises(TypeError, match="device must be 'auto', 'cpu', 'cuda' or 'cuda:N'.*got int"):
        resolve_device(0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"asked for a GPU, but torch.cuda.is_available\(\) is False"):
            resolve_device("cuda")


@dataclasses.dataclass
class Pair:
    tokens: torch.Tensor
    label: int


def test_move_to_handles_tensors_dicts_dataclasses_and_tuples():
    Point = namedtuple("Point", "x y")
    batch = {"a": torch.ones(2), "b": [torch.zeros(1), (torch.ones(1), "text")], "c": Pair(torch.ones(3), 1),
             "d": Point(torch.ones(1), 2), "e": None}
    moved = move_to(batch, torch.device("cpu"))
    assert moved["a"] is batch["a"]                       # already there: not copied
    assert isinstance(moved["b"], list) and moved["b"][1][1] == "text"
    assert isinstance(moved["c"], Pair) and moved["c"].label == 1
    assert isinstance(moved["d"], Point) and moved["d"].y == 2 and moved["e"] is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda.is_available() is False)")
def test_training_on_the_gpu_keeps_every_tensor_there(tokenizer):
    dataset = PretrainDataset([["a b c d.", "e f g."], ["h i j.", "k l m n."]] * 4, tokenizer, max_len=32, seed=0)
    model = small_model(tokenizer, dropout=0.1)
    cfg = TrainConfig(steps=3, eval_every=None, warmup_steps=0, amp="auto", device="cuda")
    trainer = Trainer(model, bucketed_loader(dataset, 4), pretraining_step(), cfg)
    history = trainer.fit(progress=False, plot=False)
    assert next(model.parameters()).device.type == "cuda" and len(history["loss"]) == 3
    assert "rng.cuda" in trainer.state_dict()["tensors"]
    batch = move_to(next(iter(bucketed_loader(dataset, 4))), trainer.device)
    model.train()
    assert torch.isfinite(pretraining_losses(model, batch)["loss"])    # dropout masks made on the GPU


def test_device_of_a_module():
    assert device_of(torch.nn.Linear(2, 2)) == torch.device("cpu")
    assert device_of(torch.nn.ReLU()) == torch.device("cpu")          # no parameters: the CPU


def _date_model_and_data():
    from bertcourse.seq2seq import make_date_dataset
    from bertcourse.transformer import EncoderDecoder, TransformerDecoder, TransformerEncoder
    ds = make_date_dataset(num_train=64, num_valid=8, seed=0)
    torch.manual_seed(0)
    model = EncoderDecoder(TransformerEncoder(len(ds.src_vocab), 16, 32, 2, 1, max_len=16),
                           TransformerDecoder(len(ds.tgt_vocab), 16, 32, 2, 1, max_len=16))
    return ds, model


def test_auto_on_a_machine_without_a_gpu_is_the_cpu_run():
    """device="auto" (what chapters 3, 7 and 9 pass) trains exactly as device="cpu" where
    there is no GPU, and the model stays where it was."""
    from bertcourse.seq2seq import train_seq2seq
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: auto means the GPU here")
    runs = []
    for device in ("cpu", "auto"):
        ds, model = _date_model_and_data()
        losses = train_seq2seq(model, ds.train, ds.src_vocab, ds.tgt_vocab, num_steps=3, batch_size=16,
                               progress=False, device=device)
        runs.append((losses, model.state_dict()))
        assert device_of(model).type == "cpu" and not model.training
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1].values(), runs[1][1].values()))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda.is_available() is False)")
def test_chapter_helpers_train_on_the_gpu_and_read_inputs_on_the_models_device():
    from bertcourse.seq2seq import exact_match, train_seq2seq, translate
    ds, model = _date_model_and_data()
    train_seq2seq(model, ds.train, ds.src_vocab, ds.tgt_vocab, num_steps=3, batch_size=16, progress=False,
                  device="cuda")
    assert device_of(model).type == "cpu"                             # it came back
    model.cuda()                                                       # inputs follow the model
    assert len(translate(model, [s for s, _ in ds.valid[:2]], ds.src_vocab, ds.tgt_vocab)) == 2
    assert 0.0 <= exact_match(model, ds.valid, ds.src_vocab, ds.tgt_vocab) <= 1.0


# ---------------------------------------------------------------------------------------
# Shards
# ---------------------------------------------------------------------------------------

def test_each_rank_takes_its_own_equal_share_of_the_same_epoch_order():
    lengths = torch.randint(5, 60, (1000,), generator=torch.Generator().manual_seed(0))
    one = LengthBucketSampler(lengths, 32, 8, torch.Generator().manual_seed(3))
    ranks = [LengthBucketSampler(lengths, 32, 8, torch.Generator().manual_seed(3), world_size=3, rank=r)
             for r in range(3)]
    for epoch in range(2):
        everything = list(one)
        shares = [list(s) for s in ranks]
        assert [len(s) for s in shares] == [len(s) for s in ranks] == [10, 10, 10]   # 32 batches: 2 left out
        assert all(b in everything for share in shares for b in share)   # the same epoch order ...
        seen = [i for share in shares for b in share for i in b]
        assert len(seen) == len(set(seen))                               # ... and no pair twice
        assert shares[1][0] == everything[1] and shares[2][0] == everything[2]
    with pytest.raises(ValueError, match=r"rank must be in 0..world_size-1 = 0..1, got 2"):
        LengthBucketSampler(lengths, 32, world_size=2, rank=2)
    with pytest.raises(ValueError, match="too few for world_size=4 processes"):
        LengthBucketSampler(torch.ones(3), 1, world_size=4)


def test_helpers_when_training_alone():
    assert world() == (0, 1)
    assert init_distributed(torch.device("cpu")) == (0, 1)        # no torchrun: nothing to join
    assert agree(3, torch.device("cpu")) == 3
    assert step_seed(0, 5, 1) != step_seed(0, 5, 0) != step_seed(0, 6, 0)
    assert 0 <= step_seed(2 ** 62, 2 ** 40, 7) < 2 ** 63
    with pytest.raises(TypeError, match="step_fn must be a function"):
        StepModule(torch.nn.Linear(2, 2), "loss")
    with pytest.raises(ValueError, match="step must be >= 0"):
        step_seed(0, -1, 0)


# ---------------------------------------------------------------------------------------
# Two processes = one process on the global batch
# ---------------------------------------------------------------------------------------

class FixedPairs(torch.utils.data.Dataset):
    """Pairs of one length with the same number of real predictions each: then the mean of
    the ranks' losses is the loss of the global batch, and so are the gradients."""

    def __init__(self, vocab_size: int, n: int = 24, length: int = 12, preds: int = 3):
        g = torch.Generator().manual_seed(0)
        self.items = [{"tokens": torch.randint(5, vocab_size, (length,), generator=g),
                       "segments": (torch.arange(length) >= length // 2).long(),
                       "valid_lens": torch.tensor(length),
                       "pred_positions": torch.randperm(length - 2, generator=g)[:preds] + 1,
                       "mlm_labels": torch.randint(5, vocab_size, (preds,), generator=g),
                       "mlm_weights": torch.ones(preds),
                       "nsp_labels": torch.tensor(i % 2)} for i in range(n)]
        self.lengths = [length] * n

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_worker(rank: int, port: int, out: str) -> None:
    """One rank, as torchrun would start it: the environment says who it is."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from tiny_bert import PARAGRAPHS
    from bertcourse.data import train_wordpiece
    tok = train_wordpiece([s for p in PARAGRAPHS for s in p] * 3, vocab_size=150)
    assert init_distributed(torch.device("cpu"), timeout_s=60) == (rank, WORLD)
    model = small_model(tok, dropout=0.0)
    data = bucketed_loader(FixedPairs(len(tok.vocab)), PER_RANK, seed=7, world_size=WORLD, rank=rank)
    cfg = TrainConfig(steps=1, eval_every=None, warmup_steps=0, clip=None, lr=1e-2, amp=False)
    trainer = Trainer(model, data, pretraining_step(), cfg)
    trainer.fit(progress=False, plot=False)
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    torch.save({"grads": grads, "params": {n: p.detach().clone() for n, p in model.named_parameters()},
                "loss": trainer.history["loss"][0]}, os.path.join(out, f"rank{rank}.pt"))
    torch.distributed.destroy_process_group()


def test_two_processes_compute_the_gradients_of_one_process_on_the_global_batch(tokenizer, tmp_path):
    mp.spawn(ddp_worker, args=(free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD))
    # the copies stay identical: same averaged gradients, same step
    for name in r0["params"]:
        assert torch.equal(r0["params"][name], r1["params"][name]), name
        assert torch.equal(r0["grads"][name], r1["grads"][name]), name
    # one process on the same 2 x 4 pairs: the batches the two ranks read in their first step
    dataset = FixedPairs(len(tokenizer.vocab))
    first = [next(iter(bucketed_loader(dataset, PER_RANK, seed=7, world_size=WORLD, rank=r))) for r in range(WORLD)]
    global_batch = {k: torch.cat([b[k] for b in first]) for k in first[0]}
    model = small_model(tokenizer, dropout=0.0)
    losses = pretraining_losses(model.train(), global_batch)
    losses["loss"].backward()
    for name, p in model.named_parameters():
        assert torch.allclose(r0["grads"][name], p.grad, atol=1e-5, rtol=1e-5), name
    assert abs((r0["loss"] + r1["loss"]) / 2 - losses["loss"].item()) < 1e-5


# ---------------------------------------------------------------------------------------
# Unequal numbers of MLM predictions: the exact global mean under DDP
# ---------------------------------------------------------------------------------------

PREDS = (5, 1)     # real MLM predictions per pair on rank 0 and on rank 1: 20 and 4 per rank


def unequal_batch(vocab_size: int) -> dict:
    """2 x PER_RANK pairs of one length; the pairs of rank 0 have 5 real predictions, those of
    rank 1 only 1 (the other slots are padding, weight 0)."""
    g = torch.Generator().manual_seed(3)
    n, length, slots = WORLD * PER_RANK, 12, max(PREDS)
    weights = torch.zeros(n, slots)
    for r, k in enumerate(PREDS):
        weights[r * PER_RANK:(r + 1) * PER_RANK, :k] = 1
    return {"tokens": torch.randint(5, vocab_size, (n, length), generator=g),
            "segments": (torch.arange(length) >= length // 2).long().expand(n, length).clone(),
            "valid_lens": torch.full((n,), length),
            "pred_positions": torch.stack([torch.randperm(length - 2, generator=g)[:slots] + 1 for _ in range(n)]),
            "mlm_labels": torch.randint(5, vocab_size, (n, slots), generator=g),
            "mlm_weights": weights,
            "nsp_labels": torch.arange(n) % 2}


def exact_loss(model, batch, world_size_factor=True):
    """The pretraining loss with the MLM part averaged over the real predictions of *all*
    ranks (``global_mean_loss``); the NSP part, a mean over pairs, is the same on every rank.
    ``world_size_factor=False``: the formula without the factor N (each rank's sum over the
    global count)."""
    losses = pretraining_losses(model, batch)
    count = batch["mlm_weights"].sum()
    mlm = global_mean_loss(losses["mlm_loss"] * count, count)        # mlm_loss * count: the sum
    if not world_size_factor:
        mlm = mlm / WORLD
    return {"loss": mlm + losses["nsp_loss"]}


def unequal_counts_worker(rank: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from tiny_bert import PARAGRAPHS
    from bertcourse.data import train_wordpiece
    tok = train_wordpiece([s for p in PARAGRAPHS for s in p] * 3, vocab_size=150)
    init_distributed(torch.device("cpu"), timeout_s=60)
    mine = {k: v[rank * PER_RANK:(rank + 1) * PER_RANK] for k, v in unequal_batch(len(tok.vocab)).items()}
    grads = {}
    for name, step in {"exact": exact_loss,
                       "without N": lambda m, b: exact_loss(m, b, world_size_factor=False),
                       "plain mean": lambda m, b: {"loss": pretraining_losses(m, b)["loss"]}}.items():
        model = small_model(tok, dropout=0.0)          # a fresh copy (and DDP wrapper) per loss
        ddp = data_parallel(model, step, torch.device("cpu"))
        ddp(mine)["loss"].backward()
        grads[name] = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    torch.save(grads, os.path.join(out, f"rank{rank}.pt"))
    torch.distributed.destroy_process_group()


def test_global_mean_loss_gives_the_gradient_of_the_global_batch_with_unequal_counts(tokenizer, tmp_path):
    mp.spawn(unequal_counts_worker, args=(free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD))
    # one process, all 8 pairs: the MLM loss is the mean over all 24 real predictions
    model = small_model(tokenizer, dropout=0.0)
    pretraining_losses(model, unequal_batch(len(tokenizer.vocab)))["loss"].backward()
    full = {n: p.grad for n, p in model.named_parameters()}
    scale = max(g.abs().max().item() for g in full.values())

    def off(grads):          # largest difference to the one-process gradient, relative to its size
        return max((grads[n] - g).abs().max().item() for n, g in full.items()) / scale

    for name in r0:
        assert r0[name].keys() == full.keys()
        assert all(torch.equal(r0[name][n], r1[name][n]) for n in r0[name])    # DDP: the same on both ranks
    assert off(r0["exact"]) < 1e-5
    # dividing each rank's sum by the global count and letting DDP average: the MLM part N times too small
    assert off(r0["without N"]) > 0.3
    assert off(r0["plain mean"]) > 0.3             # the plain mean gives 4 predictions the say of 20


def test_global_mean_loss_alone_and_its_wrong_inputs():
    assert global_mean_loss(torch.tensor(6.0), 3).item() == 2.0
    assert global_mean_loss(torch.tensor(6.0), torch.tensor(4)).item() == 1.5
    assert global_mean_loss(torch.tensor(0.0), 0).item() == 0.0           # no items: 0, not NaN
    with pytest.raises(TypeError, match="loss_sum must be a torch.Tensor"):
        global_mean_loss(6.0, 3)
    with pytest.raises(ValueError, match="loss_sum must have shape"):
        global_mean_loss(torch.ones(2), 3)
    with pytest.raises(TypeError, match="loss_sum must be a floating-point tensor"):
        global_mean_loss(torch.tensor(6), 3)
    with pytest.raises(ValueError, match="count must be >= 0"):
        global_mean_loss(torch.tensor(6.0), -1)
    with pytest.raises(ValueError, match="count must be >= 0"):
        global_mean_loss(torch.tensor(6.0), torch.tensor(-1.0))
    with pytest.raises(TypeError, match="count must be a number"):
        global_mean_loss(torch.tensor(6.0), "3")
    with pytest.raises(ValueError, match="count must have shape"):
        global_mean_loss(torch.tensor(6.0), torch.ones(2))


# ---------------------------------------------------------------------------------------
# torchrun and the command line: Ctrl-C stops every rank, rank 0 saves, --resume continues
# ---------------------------------------------------------------------------------------

def test_torchrun_ctrl_c_stops_all_ranks_and_resume_continues(tmp_path, monkeypatch):
    """Also: torchrun leaves a torchelastic_* folder in the temp dir on every run, so the first
    run gets a temp dir inside tmp_path, and the resumed run goes through launch (chapter 14's
    notebook does), which must leave nothing in a fresh temp dir."""
    import json
    import tempfile
    from bertcourse.distributed import launch
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={free_port()}",
           "-m", "bertcourse.pretrain", "--config", "tiny", "--out", str(out), "--num-paragraphs", "60",
           "--batch-size", "8", "--eval-every", "100000", "--quiet", "--amp", "off", "--device", "cpu"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    (tmp_path / "tmp").mkdir()
    # torchrun passes the Ctrl-C on to both ranks
    _, text, err = interrupt_cli(cmd + ["--steps", "100000"], "data-parallel: 2 processes", 2,
                                 env={**env, "TMPDIR": str(tmp_path / "tmp")})
    assert "a global batch of 16 pairs per optimizer step" in text, text
    assert text.count("interrupted at step") == 1 and "--resume" in text, (text, err)   # rank 0 alone prints
    assert "Traceback" not in text
    with open(out / "trainer_state.json") as f:
        info = json.load(f)
    step = info["step"]
    assert step > 0 and info["history"]["stopped_by"] == "interrupt"
    fresh = tmp_path / "fresh-tmp"
    fresh.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(fresh))
    printed = launch(cmd + ["--steps", str(step + 2), "--resume"], cwd=tmp_path, env=env, timeout_s=300)
    assert f"resuming from step {step}" in printed and f"done: {step + 2} steps" in printed
    assert printed.count("done:") == 1
    assert list(fresh.iterdir()) == [], f"left in the temp dir: {sorted(p.name for p in fresh.iterdir())}"


def test_the_arithmetic_of_data_parallelism():
    from bertcourse.distributed import allreduce_seconds, data_parallel_plan
    assert data_parallel_plan(100, 32, 2) == {"global_batch": 64, "batches": 4, "steps_per_epoch": 2,
                                              "left_out_batches": 0}
    assert data_parallel_plan(1000, 32, 3)["left_out_batches"] == 2
    # ring all-reduce: 2 (N - 1) / N of the bytes, whatever N
    assert allreduce_seconds(1_000_000, 2, 1.0) == pytest.approx(0.004)
    assert allreduce_seconds(1_000_000, 1000, 1.0) < 0.008
    assert allreduce_seconds(1_000_000, 1, 1.0) == 0.0
    # ... but 2 (N - 1) messages one after the other: the latency term grows with N
    assert allreduce_seconds(1_000_000, 2, 1.0, latency_s=1e-5) == pytest.approx(0.004 + 2 * 1e-5)
    assert allreduce_seconds(1, 1024, 1.0, latency_s=5e-6) == pytest.approx(2 * 1023 * 5e-6, rel=1e-3)
    assert allreduce_seconds(1_000_000, 1024, 1.0, latency_s=5e-6) > 2 * allreduce_seconds(1_000_000, 1024, 1.0)
    with pytest.raises(ValueError, match="latency_s must be >= 0"):
        allreduce_seconds(10, 2, 1.0, latency_s=-1e-6)
    with pytest.raises(ValueError, match="gbytes_per_s must be > 0, got 0"):
        allreduce_seconds(10, 2, 0)
    with pytest.raises(ValueError, match="batch_size must be > 0"):
        data_parallel_plan(10, 0, 2)


# ---------------------------------------------------------------------------------------
# Starting the processes: advice per operating system, and nothing left in the temp dir
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("system, words", [
    ("Windows", ["USE_LIBUV=0", "untested", "WSL"]), ("win32", ["USE_LIBUV=0"]), ("CYGWIN_NT-10.0", ["USE_LIBUV=0"]),
    ("Darwin", ["GLOO_SOCKET_IFNAME=lo0", "untested"]), ("darwin", ["GLOO_SOCKET_IFNAME=lo0"]),
    ("Linux", ["GLOO_SOCKET_IFNAME=lo", "--standalone", "tested"]), ("linux", ["GLOO_SOCKET_IFNAME=lo"]),
    ("FreeBSD", ["FreeBSD", "untested", "GLOO_SOCKET_IFNAME"]),
])
def test_platform_notes_give_each_system_its_advice(system, words):
    from bertcourse.distributed import platform_notes
    notes = platform_notes(system)
    for word in words:
        assert word in notes, (system, word, notes)
    assert ("USE_LIBUV" in notes) == (words[0] == "USE_LIBUV=0"), "the libuv advice is for Windows only"
    assert ("lo0" in notes) == (system.lower() == "darwin"), "lo0 is macOS's loopback interface"


def test_platform_notes_default_to_this_system_and_name_wrong_input(monkeypatch):
    import platform
    from bertcourse.distributed import platform_notes
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    assert platform_notes() == platform_notes("Windows")
    with pytest.raises(TypeError, match="system must be an operating system's name.*got int"):
        platform_notes(3)
    with pytest.raises(ValueError, match="system must be .*got an empty string"):
        platform_notes("  ")


def test_init_distributed_failure_says_what_to_try(monkeypatch):
    """When the processes cannot meet (here: PyTorch's Windows error, simulated), the error says
    what to try on this system instead of only torch's message."""
    import platform
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")

    def fail(*args, **kwargs):
        raise RuntimeError("use_libuv was requested but PyTorch was built without libuv support")

    monkeypatch.setattr(torch.distributed, "init_process_group", fail)
    with pytest.raises(RuntimeError, match=r"(?s)could not join the gloo process group: use_libuv.*USE_LIBUV=0"):
        init_distributed(torch.device("cpu"))


def test_launch_returns_the_output_and_cleans_the_temp_dir(tmp_path, monkeypatch):
    """A command that writes a temporary file (as torchrun does) leaves nothing in the temp dir."""
    import tempfile
    from bertcourse.distributed import launch
    fresh = tmp_path / "tmp"
    fresh.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(fresh))
    code = "import tempfile; print(tempfile.mkdtemp(prefix='torchelastic_'), end='')"
    made = launch([sys.executable, "-c", code], cwd=tmp_path)
    assert made.startswith(str(fresh)), "the command should get a private folder in the temp dir"
    assert list(fresh.iterdir()) == [], f"left behind: {list(fresh.iterdir())}"


def test_launch_failure_shows_the_error_output_and_the_advice(tmp_path, monkeypatch):
    import platform
    from bertcourse.distributed import launch
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    with pytest.raises(RuntimeError, match=r"(?s)failed \(exit code 3\).*gloo could not connect.*GLOO_SOCKET_IFNAME=lo0"):
        launch([sys.executable, "-c", "import sys; print('gloo could not connect', file=sys.stderr); sys.exit(3)"],
               cwd=tmp_path)
    with pytest.raises(RuntimeError, match=r"did not finish within 1 s \(timeout_s\)"):
        launch([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout_s=1)


def test_launch_names_wrong_input(tmp_path):
    from bertcourse.distributed import launch
    with pytest.raises(TypeError, match="command must be a list of strings.*got a str"):
        launch("torchrun --standalone", cwd=tmp_path)
    with pytest.raises(ValueError, match="command must hold at least one"):
        launch([], cwd=tmp_path)
    with pytest.raises(TypeError, match="command must be a list of strings.*PosixPath|command must be a list of strings.*Path"):
        launch([sys.executable, tmp_path], cwd=tmp_path)
    with pytest.raises(FileNotFoundError, match="cwd must be an existing folder.*nowhere"):
        launch([sys.executable, "-c", "pass"], cwd=tmp_path / "nowhere")
    with pytest.raises(TypeError, match="cwd must be a path"):
        launch([sys.executable, "-c", "pass"], cwd=3)
    with pytest.raises(TypeError, match="env must be None or a dict of str to str"):
        launch([sys.executable, "-c", "pass"], cwd=tmp_path, env={"OMP_NUM_THREADS": 1})
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        launch([sys.executable, "-c", "pass"], cwd=tmp_path, timeout_s=0)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(program=st.one_of(st.text(alphabet=" \t\n", max_size=3), st.text(alphabet="abcxyz-", min_size=1, max_size=8)
                         .map(lambda name: f"no-such-program-{name}")),
       arguments=st.lists(st.text(max_size=4).filter(lambda a: "\x00" not in a), max_size=3))
def test_launch_names_a_program_that_cannot_be_run_property(tmp_path_factory, program, arguments):
    """An empty program name, or one that is not there: an error naming command[0], not
    subprocess's bare OSError."""
    cwd = tmp_path_factory.getbasetemp()
    error = ValueError if not program.strip() else FileNotFoundError
    with pytest.raises(error, match=r"^command\[0\] "):
        launch([program, *arguments], cwd=cwd)

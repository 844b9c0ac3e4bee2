"""bertcourse.checkpoints: saving and loading the course's models."""
import json
import os

import pytest
import torch
from tiny_bert import loader, small_model, full_batch

from safetensors.torch import load_file, save_file

from bertcourse.checkpoints import SafetensorsFile, load_checkpoint, save_checkpoint
from bertcourse.pretrain import pretrain
from bertcourse.training import TrainConfig


def test_checkpoint_round_trip_is_exact(tokenizer, dataset, tmp_path):
    model = small_model(tokenizer, dropout=0.2, activation="relu")
    pretrain(model, loader(dataset), None, TrainConfig(steps=3, eval_every=None, amp=False),
             progress=False, plot=False)
    model.eval()
    save_checkpoint(tmp_path / "ckpt", model, tokenizer, extra={"note": "test"})
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["config.json", "model.safetensors", "tokenizer.json"]
    loaded, tok, state = load_checkpoint(tmp_path / "ckpt")
    assert state is None and not loaded.training
    assert loaded.config == model.config
    assert loaded.mlm.decoder.weight is loaded.encoder.token_embedding.weight      # tie restored
    for (k, a), b in zip(model.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), k
    batch = full_batch(dataset)
    with torch.no_grad():
        out_a = model(batch["tokens"], batch["segments"], batch["valid_lens"], batch["pred_positions"])
        out_b = loaded(batch["tokens"], batch["segments"], batch["valid_lens"], batch["pred_positions"])
    for a, b in zip(out_a, out_b):
        assert torch.equal(a, b)
    assert tok.vocab.tokens == tokenizer.vocab.tokens
    assert tok.encode("its capital is olm.") == tokenizer.encode("its capital is olm.")
    with open(tmp_path / "ckpt" / "config.json") as f:
        assert json.load(f)["extra"] == {"note": "test"}
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "nothing")


def test_safetensors_file_reads_what_load_file_reads_one_tensor_at_a_time(tmp_path):
    file = tmp_path / "t.safetensors"
    save_file({"w": torch.randn(3, 4), "half": torch.randn(5).half(), "brain": torch.randn(2, 2).bfloat16(),
               "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4), "ids": torch.arange(7),
               "mask": torch.tensor([True, False]), "bytes": torch.arange(6, dtype=torch.uint8)}, str(file))
    lazy, eager = SafetensorsFile(file), load_file(str(file))
    assert list(lazy) == list(eager) and len(lazy) == len(eager) == 8        # load_file's order
    for name, tensor in eager.items():
        assert lazy.dtype(name) == lazy[name].dtype == tensor.dtype and torch.equal(lazy[name], tensor), name
    lazy["w"].zero_()                                                        # a fresh tensor each time:
    assert torch.equal(lazy["w"], eager["w"])                                # the mapping keeps none
    assert "w" in lazy and "nope" not in lazy
    for get in (lazy.__getitem__, lazy.dtype):
        with pytest.raises(KeyError):
            get("nope")


def test_safetensors_file_names_a_damaged_missing_or_wrong_path(tmp_path):
    file = tmp_path / "t.safetensors"
    save_file({"w": torch.randn(8, 8)}, str(file))
    file.write_bytes(file.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"t\.safetensors is not a readable safetensors file .*damaged"):
        SafetensorsFile(file)
    with pytest.raises(FileNotFoundError, match="file .*missing.safetensors' does not exist"):
        SafetensorsFile(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="is a folder, but file must be a file"):
        SafetensorsFile(tmp_path)
    with pytest.raises(TypeError, match="file must be a path"):
        SafetensorsFile(3)

"""bertcourse.checkpoints: saving and loading the course's models."""
import json
import os

import pytest
import torch
from tiny_bert import loader, small_model, full_batch

from bertcourse.checkpoints import load_checkpoint, save_checkpoint
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

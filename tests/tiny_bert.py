"""A tiny BERT world shared by the pretraining tests: six paragraphs, a 150-token WordPiece
vocabulary, a dataset of pairs, and helpers for loaders and small models.

A pytest plugin (``pytest_plugins`` in conftest.py): the fixtures ``tokenizer`` and
``dataset`` reach every test file by name; the plain helpers are imported."""
import contextlib
import os
import random
import signal
import subprocess
import time

import numpy as np
import pytest
import torch

from bertcourse.bert import BERTModel, get_config
from bertcourse.data import PretrainDataset, train_wordpiece
from bertcourse.pretrain import init_bert_weights

PARAGRAPHS = [
    ["velora is a country in the north.", "its capital is tarnum.", "tarnum lies on the river osk.",
     "people there speak velish."],
    ["brisk is a country in the south.", "its capital is olm.", "olm is a big town by the sea.",
     "people there speak briskan."],
    ["the fox is a small animal.", "it is red.", "it eats mice at night.", "it lives in the forest."],
    ["mira holt works as a baker in olm.", "she bakes bread every morning.", "she has a cat.",
     "she likes to swim."],
    ["the bear is a big animal.", "it is brown.", "it eats fish.", "it lives by the river."],
    ["tom vale works as a smith in tarnum.", "he makes tools.", "he has a dog.", "he plays football."],
]


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece([s for p in PARAGRAPHS for s in p] * 3, vocab_size=150)


@pytest.fixture(scope="module")
def dataset(tokenizer):
    return PretrainDataset(PARAGRAPHS, tokenizer, max_len=32, seed=0)


def loader(dataset, batch_size=4, shuffle=True, seed=0):
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                       generator=torch.Generator().manual_seed(seed) if shuffle else None)


def small_model(tokenizer, seed=0, **overrides):
    torch.manual_seed(seed)
    cfg = get_config("tiny", vocab_size=len(tokenizer.vocab), num_hiddens=32, ffn_num_hiddens=64,
                     max_len=32, **overrides)
    return init_bert_weights(BERTModel(cfg))


def full_batch(dataset):
    return next(iter(loader(dataset, batch_size=len(dataset), shuffle=False)))


def params_of(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def interrupt_at(trainer, step):
    """Make ``trainer`` receive a Ctrl-C (SIGINT) right after optimizer step ``step``."""
    original = trainer.optimizer.step

    def step_then_interrupt(*args, **kwargs):
        out = original(*args, **kwargs)
        if trainer.step + 1 == step:          # trainer.step is counted after optimizer.step
            os.kill(os.getpid(), signal.SIGINT)
        return out

    trainer.optimizer.step = step_then_interrupt


def interrupt_cli(cmd: list, started: str, seconds: float, env: dict | None = None):
    """Start ``cmd``, wait for a line of its output that starts with ``started``, let it run
    ``seconds`` more and press Ctrl-C (SIGINT). Returns ``(returncode, stdout, stderr)``,
    stdout with the lines read before the interrupt."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if line.startswith(started):
            break
    time.sleep(seconds)
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=120)
    return p.returncode, "".join(lines) + rest, err


@contextlib.contextmanager
def command_in_this_process():
    """``with command_in_this_process(): code = main([...])``: a command's main function
    run in the test process (a fresh Python and torch import per case would cost seconds), which
    is left as it was: PyTorch's thread count (``--threads``) and the random generators the
    commands seed."""
    threads = torch.get_num_threads()
    states = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.random.set_rng_state(states[2])

"""Tests of chapter 9's fine-tuning module (bertcourse.finetune): the classifier, training and
evaluation, predictions, checkpoints, the model family, the command line, and one named test
per pitfall of the chapter. (The data: tests/test_reviews.py; the baselines: tests/test_finetuning_baselines.py.)"""
from __future__ import annotations

import dataclasses
import math
import pathlib
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings, strategies as st
from tiny_bert import command_in_this_process

import bertcourse.finetune.__main__ as finetune_command
from bertcourse.bert import BERTConfig, BERTEncoder
from bertcourse.finetune.__main__ import main as finetune_main
from bertcourse.data import train_wordpiece
from bertcourse.finetune import (MODEL_FAMILY, BERTClassifier, ClassifierConfig, UntrainedClassifierError,
                                 build_classifier, classification_loss, classification_step, encoder_parameters,
                                 evaluate_classifier, finetune, fit_probe, init_head_from_probe, probe_then_finetune, load_classifier, misclassified, model_family_table,
                                 predict_proba, save_classifier, token_contributions,
                                 weights_moved)
from bertcourse.reviews import (Review, collate_reviews, encode_texts, review_loader, special_ids)
from bertcourse.checkpoints import read_config
from bertcourse.finetune import RECIPE
from bertcourse.sentence_pairs import LABELS
from bertcourse.token_tags import TAGS
from bertcourse.bert import mean_pool
from bertcourse.inspection import sentence_vectors
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.finetuning_baselines import WEIGHT_DECAYS, LogisticRegression
from bertcourse.memory import saved_for_backward
from bertcourse.precision import autocast
from bertcourse.training import TrainConfig, Trainer


# ---------------------------------------------------------------------------------------
# Small helpers: a tiny tokenizer and classifier
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_tokenizer(splits):
    """A WordPiece trained on the review sentences: [PAD] [UNK] [CLS] [SEP] [MASK] = 0..4,
    unlike bert-base-uncased's 0, 100, 101, 102, 103."""
    return train_wordpiece([r.text for r in splits.train], vocab_size=400)


def tiny_classifier(tokenizer, pooling="mean", dropout=0.1, seed=0, num_classes=2):
    torch.manual_seed(seed)
    cfg = BERTConfig(vocab_size=len(tokenizer), num_hiddens=32, ffn_num_hiddens=64, num_heads=2, num_blks=2,
                     max_len=128, dropout=dropout)
    return BERTClassifier(ClassifierConfig(cfg, num_classes=num_classes, pooling=pooling, dropout=dropout))


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained("minilm")


# ---------------------------------------------------------------------------------------
# The classifier
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_classifier_shapes(tiny_tokenizer, pooling):
    clf = tiny_classifier(tiny_tokenizer, pooling=pooling).eval()
    tokens = torch.randint(5, len(tiny_tokenizer), (3, 7))
    mask = torch.arange(7) < torch.tensor([7, 4, 1])[:, None]
    assert clf(tokens, valid_lens=mask).shape == (3, 2)
    assert clf.features(tokens, valid_lens=mask).shape == (3, 32)
    assert clf(tokens).shape == (3, 2)                                   # no mask: no padding
    assert torch.allclose(clf(tokens, valid_lens=torch.tensor([7, 4, 1])), clf(tokens, valid_lens=mask))
    assert (clf.pooler is None) == (pooling == "mean")
    three = tiny_classifier(tiny_tokenizer, pooling=pooling, num_classes=3).eval()
    assert three(tokens, valid_lens=mask).shape == (3, 3)


def test_mean_pooling_ignores_padding(tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer).eval()
    ids, _ = encode_texts(tiny_tokenizer, ["Great phone!", "The screen cracked after a week of use."])
    batch = collate_reviews([(torch.tensor(i), 0) for i in ids], 0)
    with torch.no_grad():
        together = clf(batch["tokens"], valid_lens=batch["mask"])
        alone = clf(torch.tensor([ids[0]]))
    torch.testing.assert_close(together[0], alone[0], atol=1e-5, rtol=1e-5)


def test_cls_pooling_reads_only_the_first_position(tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer, pooling="cls").eval()
    X = torch.randn(2, 6, 32)
    Y = X.clone()
    Y[:, 1:] = torch.randn(2, 5, 32)
    mask = torch.ones(2, 6, dtype=torch.bool)
    torch.testing.assert_close(clf.pool(X, mask), clf.pool(Y, mask))
    torch.testing.assert_close(clf.pool(X, mask), torch.tanh(clf.pooler.dense(X[:, 0])))


def test_classifier_named_errors(tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer)
    tokens = torch.randint(5, 50, (2, 5))
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, seq\).*got shape \(5,\)"):
        clf(tokens[0])
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        clf(tokens.float())
    with pytest.raises(TypeError, match="must be bool.*got dtype torch.int64.*\\.bool\\(\\)"):
        clf(tokens, valid_lens=torch.ones(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"valid_lens as a mask must have the shape of tokens \(batch=2, seq=5\), "
                                         r"got shape \(2, 4\)"):
        clf(tokens, valid_lens=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="valid_lens must lie in 1..seq=5"):
        clf(tokens, valid_lens=torch.tensor([6, 2]))
    with pytest.raises(TypeError, match="valid_lens must be"):
        clf(tokens, valid_lens=[5, 5])
    cfg = clf.config.bert
    with pytest.raises(ValueError, match="pooling must be one of"):
        ClassifierConfig(cfg, pooling="max")
    with pytest.raises(ValueError, match="num_classes must be >= 2, got 1"):
        ClassifierConfig(cfg, num_classes=1)
    with pytest.raises(ValueError, match="dropout must be < 1, got 1.5"):
        ClassifierConfig(cfg, dropout=1.5)
    with pytest.raises(TypeError, match="dropout must be a number, got str"):
        ClassifierConfig(cfg, dropout="0.1")
    with pytest.raises(TypeError, match="bert must be a BERTConfig"):
        ClassifierConfig("tiny")
    with pytest.raises(TypeError, match="config must be a ClassifierConfig"):
        BERTClassifier(cfg)
    other = BERTEncoder(BERTConfig(vocab_size=50, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1))
    with pytest.raises(ValueError, match="encoder has num_hiddens=16 but config.bert has 32"):
        BERTClassifier(clf.config, encoder=other)
    with pytest.raises(TypeError, match="source must be 'minilm', 'scratch' or a Pretrained"):
        build_classifier(3)
    with pytest.raises(ValueError, match="source must be one of"):
        build_classifier("bert-base-uncased")


def test_classifier_on_the_real_minilm(minilm):
    clf, tokenizer = build_classifier(minilm, pooling="cls", seed=0)
    assert tokenizer is minilm.tokenizer and clf.training
    for (name, p), (_, q) in zip(clf.encoder.named_parameters(), minilm.model.encoder.named_parameters()):
        assert torch.equal(p, q) and p is not q, name                     # a copy: the original is untouched
    assert torch.equal(clf.pooler.dense.weight, minilm.model.pooler.dense.weight)
    mean_clf, _ = build_classifier(minilm, pooling="mean", seed=0)
    assert mean_clf.pooler is None
    assert sum(p.numel() for p in mean_clf.parameters()) == 22_713_216 - (384 * 384 + 384) + (2 * 384 + 2)
    enc = minilm.encode(["Great phone!", "Terrible."])
    mean_clf.eval()
    with torch.no_grad():
        features = mean_clf.features(enc.tokens, valid_lens=enc.mask)
        expected = mean_pool(minilm.model.encoder(enc.tokens, enc.segments, enc.mask), enc.mask)
    torch.testing.assert_close(features, expected)


def test_scratch_classifier_has_fresh_weights():
    clf, tokenizer = build_classifier("scratch", seed=0)
    again, _ = build_classifier("scratch", seed=0)
    pretrained = load_pretrained("minilm")
    w = clf.encoder.blks[0].attention.W_q.weight
    assert not torch.equal(w, pretrained.model.encoder.blks[0].attention.W_q.weight)
    assert torch.equal(w, again.encoder.blks[0].attention.W_q.weight)          # seeded
    assert 0.015 < float(w.detach().std()) < 0.025                                       # BERT's N(0, 0.02²)
    assert clf.config.bert == pretrained.config


# ---------------------------------------------------------------------------------------
# Training and evaluation
# ---------------------------------------------------------------------------------------

def test_two_steps_lower_the_loss_on_a_fixed_batch(splits, tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer, dropout=0.0)
    batch = next(iter(review_loader(splits.train[:16], tiny_tokenizer, batch_size=16)))
    with torch.no_grad():
        before = classification_step(clf.eval(), batch)["loss"].item()
    trainer = Trainer(clf, [batch, batch], classification_step,
                      TrainConfig(steps=2, lr=1e-2, warmup_steps=0, eval_every=None, amp=False))
    trainer.fit(progress=False, plot=False)
    with torch.no_grad():
        after = classification_step(clf.eval(), batch)["loss"].item()
    assert after < before and int(clf.trained_steps) == 2


def test_finetune_runs_the_recipe_and_evaluates_per_epoch(splits, tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer)
    train = splits.train[:64]
    trainer = finetune(clf, tiny_tokenizer, train, splits.validation[:32], epochs=2, lr=1e-3, batch_size=16,
                       warmup_ratio=0.25, amp=False, progress=False, plot=False)
    assert trainer.step == 8 and [e["step"] for e in trainer.history.evals] == [4, 8]
    assert trainer.cfg.warmup_steps == 2 and trainer.history.lr[-1] < trainer.history.lr[2]
    # warm-up times decay: the peak, at the end of the warm-up (step 1 of 8), is lr * (1 - 1/8)
    assert max(trainer.history.lr) == pytest.approx(1e-3 * (1 - 1 / 8)) == trainer.history.lr[1]
    assert not clf.training and int(clf.trained_steps) == 8
    with pytest.raises(ValueError, match="warmup_ratio must be <= 1, got 2"):
        finetune(clf, tiny_tokenizer, train, warmup_ratio=2, progress=False, plot=False)


def test_probe_then_finetune_starts_the_head_from_the_probe_then_trains_like_finetune(splits, tiny_tokenizer):
    """Chapter 9's recipe (and the command line's) is the probe's weights in the head, then
    finetune(): given a probe, the same training to the bit as init_head_from_probe + finetune;
    without one, a probe fitted on the frozen pooled features (weight decay chosen on validation)."""
    train, validation = splits.train[:48], splits.validation[:32]
    options = dict(epochs=1, lr=1e-3, batch_size=16, amp=False, progress=False, plot=False)
    probe, wd, accs = fit_probe(tiny_classifier(tiny_tokenizer), tiny_tokenizer, train, validation)
    assert isinstance(probe, LogisticRegression) and wd in WEIGHT_DECAYS and accs[wd] == max(accs.values())
    by_hand = tiny_classifier(tiny_tokenizer)
    init_head_from_probe(by_hand, probe)
    finetune(by_hand, tiny_tokenizer, train, validation, **options)
    recipe = tiny_classifier(tiny_tokenizer)
    trainer = probe_then_finetune(recipe, tiny_tokenizer, train, validation, probe=probe, **options)
    assert trainer.step == 3
    for (k, a), b in zip(by_hand.state_dict().items(), recipe.state_dict().values()):
        assert torch.equal(a, b), k
    fitted = tiny_classifier(tiny_tokenizer)
    probe_then_finetune(fitted, tiny_tokenizer, train, validation, **options)     # fits its own probe: the same one
    for (k, a), b in zip(by_hand.state_dict().items(), fitted.state_dict().values()):
        assert torch.equal(a, b), k
    with pytest.raises(TypeError, match="model must be a BERTClassifier"):
        probe_then_finetune(tiny_tokenizer, tiny_tokenizer, train, validation, **options)
    with pytest.raises(TypeError, match="validation must be a list of Review"):
        fit_probe(recipe, tiny_tokenizer, train, "Great phone!")


def test_classification_loss_is_the_mean_cross_entropy_and_names_bad_labels():
    logits, labels = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]]), torch.tensor([0, 2])
    by_hand = -(torch.log_softmax(logits, -1)[[0, 1], labels]).mean()
    assert torch.allclose(classification_loss(logits, labels), by_hand)
    assert torch.allclose(classification_loss(logits, labels, reduction="sum"), 2 * by_hand)
    with pytest.raises(ValueError, match="labels"):
        classification_loss(logits, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match=r"logits must have shape \(batch, num_classes\)"):
        classification_loss(logits[0], labels)


@pytest.mark.parametrize("amp", [False, True])
def test_checkpointing_gives_the_same_gradients(splits, tiny_tokenizer, amp):
    """Activation checkpointing recomputes each block in the backward pass, with the same dropout
    masks: the gradients are equal to the last bit, and it keeps far fewer activations."""
    clf = tiny_classifier(tiny_tokenizer, dropout=0.1).train()
    batch = next(iter(review_loader(splits.train[:16], tiny_tokenizer, batch_size=16)))
    grads, kept = {}, {}
    for on in (False, True):
        clf.encoder.checkpointing = on
        torch.manual_seed(0)
        with autocast(amp):
            loss = classification_step(clf, batch)["loss"]
        clf.zero_grad(set_to_none=True)
        loss.backward()
        grads[on] = [p.grad.clone() for p in clf.parameters()]
        kept[on] = saved_for_backward(clf, classification_step, batch)
    assert all(torch.equal(a, b) for a, b in zip(grads[False], grads[True]))
    assert kept[True] < kept[False] / 2
    # outside training (eval mode or no gradients) the encoder runs as usual
    outputs = []
    for on in (True, False):
        clf.encoder.checkpointing = on
        with torch.no_grad():
            outputs.append(clf.eval()(batch["tokens"], valid_lens=batch["mask"]))
    assert torch.equal(*outputs)


def test_finetune_with_checkpointing_trains_the_same_model(splits, tiny_tokenizer):
    runs = []
    for on in (False, True):
        clf = tiny_classifier(tiny_tokenizer, dropout=0.1)
        seen = []            # the encoder's setting at each training forward pass
        clf.encoder.register_forward_pre_hook(lambda m, args: seen.append(m.checkpointing) if m.training else None)
        finetune(clf, tiny_tokenizer, splits.train[:48], epochs=1, lr=1e-3, batch_size=16, amp=False,
                 checkpointing=on, progress=False, plot=False)
        assert seen == [on] * 3 and clf.encoder.checkpointing is False     # on for the training only
        runs.append(clf.state_dict())
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    with pytest.raises(TypeError, match="checkpointing must be True or False, got str"):
        finetune(clf, tiny_tokenizer, splits.train[:16], checkpointing="yes", progress=False, plot=False)


def test_checkpoint_round_trip(tmp_path, splits, tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer, pooling="cls")
    trainer = finetune(clf, tiny_tokenizer, splits.train[:32], epochs=1, batch_size=16, amp=False,
                       progress=False, plot=False)
    save_classifier(tmp_path, clf, tiny_tokenizer, trainer, extra={"note": "test"})
    loaded, tokenizer = load_classifier(tmp_path)
    texts = ["Great phone!", "Awful service, never again."]
    torch.testing.assert_close(predict_proba(loaded, tokenizer, texts), predict_proba(clf, tiny_tokenizer, texts))
    assert loaded.config == clf.config and int(loaded.trained_steps) == 2 and not loaded.training
    with pytest.raises(TypeError, match="model must be a BERTClassifier"):
        save_classifier(tmp_path, torch.nn.Linear(2, 2))


def test_predict_proba_reads_sentence_pairs_with_their_segment_ids(tiny_tokenizer):
    from bertcourse.sentence_pairs import Pair, collate_pairs, PairDataset

    clf = tiny_classifier(tiny_tokenizer, num_classes=3)
    clf.trained_steps += 1
    pairs = [Pair("A man plays a guitar.", "A person plays music.", 0), Pair("Two dogs run.", "Cats sleep.", 2),
             Pair("A child smiles at the camera on a sunny day.", "A kid is happy.", 1)]
    probs = predict_proba(clf, tiny_tokenizer, pairs)
    assert probs.shape == (3, 3) and torch.allclose(probs.sum(1), torch.ones(3))
    # the oracle: the same pairs one at a time, with their segment ids, no padding
    data = PairDataset(pairs, tiny_tokenizer)
    clf.eval()
    with torch.no_grad():
        for i in range(3):
            b = collate_pairs([data[i]], pad_id=data.pad_id)
            assert b["segments"].any()
            one = clf(b["tokens"], segments=b["segments"], valid_lens=b["mask"]).softmax(-1)[0]
            torch.testing.assert_close(probs[i], one, atol=1e-5, rtol=1e-5)
    swapped = predict_proba(clf, tiny_tokenizer, [Pair(p.hypothesis, p.premise, p.label) for p in pairs])
    assert not torch.allclose(probs, swapped)          # the order of the two texts is read
    with pytest.raises(TypeError, match="texts"):
        predict_proba(clf, tiny_tokenizer, [pairs[0], "a sentence"])


def test_predictions_and_contributions(splits, tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer)
    clf.trained_steps += 1
    clf.train()
    probs = predict_proba(clf, tiny_tokenizer, ["Great phone!", "Bad."])
    assert probs.shape == (2, 2) and torch.allclose(probs.sum(1), torch.ones(2)) and clf.training
    data = token_contributions(clf, tiny_tokenizer, "Great phone, bad battery.")
    assert data["pieces"] == encode_texts(tiny_tokenizer, ["Great phone, bad battery."])[1][0][1:-1]
    assert abs(data["p"] - float(predict_proba(clf, tiny_tokenizer, ["Great phone, bad battery."])[0, 1])) < 1e-5
    torch.testing.assert_close(data["contributions"], data["p"] - data["p_without"])
    without_first = " ".join(data["pieces"][1:])
    assert abs(float(data["p_without"][0]) - float(predict_proba(clf, tiny_tokenizer, [without_first])[0, 1])) < 1e-4 \
        or "##" in without_first
    wrong = misclassified(clf, tiny_tokenizer, splits.test[:40])
    assert all(int(p > 0.5) != r.label for r, p in wrong)
    assert [abs(p - 0.5) for _, p in wrong] == sorted((abs(p - 0.5) for _, p in wrong), reverse=True)
    with pytest.raises(ValueError, match="target must be a class index in 0..1"):
        token_contributions(clf, tiny_tokenizer, "x", target=2)
    with pytest.raises(TypeError, match="wrap a single text in a list"):
        predict_proba(clf, tiny_tokenizer, "Great phone!")


# ---------------------------------------------------------------------------------------
# Wrong input: texts, reviews, labels (the rows of tests/test_bad_inputs.py, plus what holds
# for every input)
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained_classifiers(tiny_tokenizer):
    """``{num_classes: classifier}`` in eval mode, marked as trained (the labels' checks only)."""
    out = {}
    for k in (2, 3):
        clf = tiny_classifier(tiny_tokenizer, num_classes=k, dropout=0.0).eval()
        clf.trained_steps += 1
        out[k] = clf
    return out


def test_texts_reviews_and_labels_are_named(splits, tiny_tokenizer, trained_classifiers):
    clf = trained_classifiers[2]
    with pytest.raises(ValueError, match="texts must be a list of non-empty strings, got '' at index 1"):
        predict_proba(clf, tiny_tokenizer, ["Great phone!", ""])
    with pytest.raises(ValueError, match="texts must hold at least one"):
        predict_proba(clf, tiny_tokenizer, [])
    with pytest.raises(TypeError, match="model must be a BERTClassifier"):
        token_contributions(clf.encoder, tiny_tokenizer, "Great phone!")
    assert token_contributions(clf, tiny_tokenizer, "")["pieces"] == []       # the widget's empty box
    with pytest.raises(ValueError, match="train must hold at least one Review"):
        finetune(clf, tiny_tokenizer, [], progress=False, plot=False)
    with pytest.raises(TypeError, match="validation must be a list of Review.*got str"):
        finetune(clf, tiny_tokenizer, splits.train[:16], "Great phone!", progress=False, plot=False)
    with pytest.raises(TypeError, match="reviews must be a list of Review.*got an element of type str"):
        misclassified(clf, tiny_tokenizer, ["Great phone!"])
    batch = next(iter(review_loader(splits.train[:4], tiny_tokenizer, batch_size=4)))
    batch["labels"] = torch.tensor([0, 1, 2, 1])
    with pytest.raises(ValueError, match=r"batch\['labels'\] must hold class labels in 0..1 \(num_classes=2\), "
                                         r"got values from 0 to 2"):
        classification_step(clf, batch)                   # cross_entropy's IndexError, before
    with pytest.raises(ValueError, match=r"batch\['labels'\] must hold class labels in 0..1"):
        evaluate_classifier(clf, [batch])
    assert classification_step(trained_classifiers[3], batch)["loss"].isfinite()    # three classes: valid


@settings(max_examples=30, deadline=None, derandomize=True)
@given(labels=st.lists(st.integers(-2, 4), min_size=1, max_size=4), num_classes=st.sampled_from([2, 3]))
def test_classification_step_takes_the_labels_of_its_classes_only_property(splits, tiny_tokenizer,
                                                                           trained_classifiers, labels, num_classes):
    batch = next(iter(review_loader(splits.train[:len(labels)], tiny_tokenizer, batch_size=len(labels))))
    batch["labels"] = torch.tensor(labels)
    clf = trained_classifiers[num_classes]
    with torch.no_grad():
        if all(0 <= y < num_classes for y in labels):
            out = classification_step(clf, batch)
            assert out["loss"].isfinite() and 0.0 <= float(out["acc"]) <= 1.0
            assert evaluate_classifier(clf, [batch])["n"] == len(labels)
        else:
            for call in (lambda: classification_step(clf, batch), lambda: evaluate_classifier(clf, [batch])):
                with pytest.raises(ValueError, match=rf"^batch\['labels'\] must hold class labels in 0..{num_classes - 1}"):
                    call()


@settings(max_examples=30, deadline=None, derandomize=True)
@given(texts=st.lists(st.text(alphabet="ab !\t", min_size=0, max_size=5), min_size=1, max_size=4))
def test_predict_proba_takes_non_empty_texts_only_property(tiny_tokenizer, trained_classifiers, texts):
    blank = next((i for i, t in enumerate(texts) if not t.strip()), None)
    if blank is None:
        probs = predict_proba(trained_classifiers[2], tiny_tokenizer, texts)
        assert probs.shape == (len(texts), 2)
        torch.testing.assert_close(probs.sum(1), torch.ones(len(texts)))
    else:
        with pytest.raises(ValueError, match=rf"^texts must be a list of non-empty strings, got .* at index {blank}$"):
            predict_proba(trained_classifiers[2], tiny_tokenizer, texts)


# ---------------------------------------------------------------------------------------
# The model family
# ---------------------------------------------------------------------------------------

def test_parameter_counts_match_the_course_and_the_papers(minilm):
    assert encoder_parameters(30522, 768, 12) == 109_482_240          # COURSE.md: BERT-base, no heads
    assert encoder_parameters(30522, 1024, 24) == 335_141_888         # BERT-large
    assert encoder_parameters(30522, 384, 6, 1536) == sum(p.numel() for p in minilm.model.parameters())
    table = model_family_table()
    assert list(table.index) == [r["model"] for r in MODEL_FAMILY]
    assert {"BERT-base", "BERT-large", "RoBERTa-large", "ALBERT-base", "ELECTRA-base", "DistilBERT"} == set(table.index)
    for column in ("layers", "hidden", "heads", "parameters", "objective", "data", "paper"):
        assert table[column].notna().all(), column
    assert "MLM" not in table.loc["ELECTRA-base", "objective"].split(" (")[0]     # ELECTRA is not an MLM
    assert "NSP" in table.loc["BERT-base", "objective"] and "no NSP" in table.loc["RoBERTa-large", "objective"]


# ---------------------------------------------------------------------------------------
# Pitfalls of the chapter, one named test each
# ---------------------------------------------------------------------------------------

def test_mask_passed_positionally_is_refused(minilm, tiny_tokenizer):
    """Pitfall 1: encoder(input_ids, attention_mask) runs and makes the mask the segment ids."""
    enc = minilm.encode(["Great phone!", "The screen cracked after a week and support never answered."])
    with torch.no_grad():
        right = minilm.model.encoder(enc.tokens, enc.segments, enc.mask)
        wrong = minilm.model.encoder(enc.tokens, enc.mask.long())          # runs without complaint
    assert (wrong - right)[enc.mask].abs().max() > 0.5
    clf = tiny_classifier(tiny_tokenizer)
    tokens = torch.randint(5, 50, (2, 5))
    with pytest.raises(TypeError, match="pass the mask by name: model\\(tokens, valid_lens=mask\\)"):
        clf(tokens, torch.ones(2, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="pass the mask by name"):
        clf.features(tokens, torch.ones(2, 5, dtype=torch.bool))


def test_untrained_classifier_refuses_to_predict(tiny_tokenizer):
    """Pitfall 2: a random head's output is not a prediction."""
    clf = tiny_classifier(tiny_tokenizer)
    with pytest.raises(UntrainedClassifierError, match="never been trained"):
        predict_proba(clf, tiny_tokenizer, ["I loved it!"])
    with pytest.raises(UntrainedClassifierError):
        token_contributions(clf, tiny_tokenizer, "I loved it!")
    assert isinstance(UntrainedClassifierError("x"), ValueError)
    p = predict_proba(clf, tiny_tokenizer, ["I loved it!", "I hated it!"], allow_untrained=True)
    assert (p[:, 1] - 0.5).abs().max() < 0.1                  # a coin, whatever it would print
    batch = next(iter(review_loader([Review("I loved it!", 1, "x")], tiny_tokenizer)))
    classification_step(clf.train(), batch)["loss"].backward()
    assert int(clf.trained_steps) == 1
    predict_proba(clf, tiny_tokenizer, ["I loved it!"])       # now allowed


def test_pretraining_sized_learning_rate_wrecks_the_encoder(minilm, splits):
    """Pitfall 3: ten steps at 1e-3 overwrite what pretraining learned; ten at 5e-5 do not."""
    texts = [r.text for r in splits.validation[:64]]
    start = sentence_vectors(minilm.model.encoder, minilm.tokenizer, texts, normalize=True)
    moved, similarity = {}, {}
    for lr in (5e-5, 1e-3):
        clf, tok = build_classifier(minilm, seed=0)
        finetune(clf, tok, splits.train[:160], epochs=1, lr=lr, batch_size=16, amp=False,      # 10 steps
                 progress=False, plot=False)
        moved[lr] = weights_moved(clf.encoder, minilm.model.encoder)
        similarity[lr] = float((sentence_vectors(clf.encoder, tok, texts, normalize=True) * start).sum(-1).mean())
    assert moved[1e-3] > 5 * moved[5e-5]
    assert similarity[5e-5] > 0.9 and similarity[1e-3] < 0.5


def test_sentence_vectors_are_minilms_sentence_embeddings(minilm, splits):
    """Pitfall 3's sentence vectors: the embedding all-MiniLM-L6-v2 was trained to produce
    (Pretrained.sentence_embeddings, itself checked against sentence-transformers in
    test_pretrained_bert.py), the same from the encoder or the classifier, in the order of the texts
    whatever their lengths, with dropout off whatever the mode."""
    texts = [r.text for r in splits.validation[:12]]
    clf = build_classifier(minilm, seed=0)[0].train()
    encoder = clf.encoder                                                # training mode: dropout on
    vectors = sentence_vectors(encoder, minilm.tokenizer, texts, normalize=True, batch_size=5)
    assert vectors.shape == (12, 384) and not vectors.requires_grad and encoder.training   # mode restored
    torch.testing.assert_close(vectors.norm(dim=-1), torch.ones(12))
    torch.testing.assert_close(vectors, minilm.sentence_embeddings(texts), atol=1e-5, rtol=0)
    one_by_one = torch.cat([sentence_vectors(encoder, minilm.tokenizer, [t], normalize=True) for t in texts])
    torch.testing.assert_close(vectors, one_by_one, atol=1e-5, rtol=0)   # the order of the texts, not of the batches
    assert torch.equal(sentence_vectors(encoder, minilm.tokenizer, texts, normalize=True, batch_size=5), vectors)
    assert torch.equal(sentence_vectors(clf, minilm.tokenizer, texts, normalize=True, batch_size=5), vectors)
    raw = sentence_vectors(encoder, minilm.tokenizer, texts, batch_size=5)
    torch.testing.assert_close(torch.nn.functional.normalize(raw, dim=-1), vectors, atol=0, rtol=0)
    with pytest.raises(TypeError, match="model must be a BERTModel, a BERTClassifier or a BERTEncoder"):
        sentence_vectors(torch.nn.Linear(2, 2), minilm.tokenizer, texts)
    with pytest.raises(TypeError, match="texts must be a non-empty list of strings"):
        sentence_vectors(encoder, minilm.tokenizer, "Great phone!")


def test_weights_moved_is_the_largest_relative_change_of_a_weight_matrix(tiny_tokenizer):
    clf = tiny_classifier(tiny_tokenizer)
    start = tiny_classifier(tiny_tokenizer)                   # the same seed: the same weights
    assert weights_moved(clf, start) == 0.0
    with torch.no_grad():
        clf.encoder.blks[0].ffn.dense1.bias.add_(10.0)         # a bias: not a weight matrix
        assert weights_moved(clf, start) == 0.0
        clf.encoder.blks[1].ffn.dense2.weight.mul_(1.25)       # 25 % farther
        clf.encoder.blks[0].attention.W_q.weight.mul_(1.1)     # 10 %: not the largest
    assert weights_moved(clf, start) == pytest.approx(0.25, rel=1e-6)
    assert weights_moved(clf.encoder, start.encoder) == pytest.approx(0.25, rel=1e-6)   # names relative to the module
    with pytest.raises(ValueError, match="reference must have model's weight matrices: model's .* reference's is"):
        weights_moved(clf, tiny_classifier(tiny_tokenizer, num_classes=3))             # another head
    with pytest.raises(ValueError, match="reference must have model's weight matrices.*missing"):
        weights_moved(clf, clf.encoder)                        # another module
    with torch.no_grad():
        start.head.weight.zero_()
    with pytest.raises(ValueError, match="reference's head.weight is all zeros"):
        weights_moved(clf, start)
    with pytest.raises(ValueError, match="model must have weight matrices.*LayerNorm has none"):
        weights_moved(torch.nn.LayerNorm(4), torch.nn.LayerNorm(4))
    with pytest.raises(TypeError, match="model must be a Module, got OrderedDict"):
        weights_moved(clf.state_dict(), start)
    with pytest.raises(TypeError, match="reference must be a Module, got OrderedDict"):
        weights_moved(clf, start.state_dict())


def test_evaluate_classifier_switches_dropout_off(splits, tiny_tokenizer):
    """Pitfall 4: evaluation with dropout on is noisy; evaluate_classifier uses eval() and
    puts the mode back."""
    clf = tiny_classifier(tiny_tokenizer, dropout=0.5)
    loader = review_loader(splits.validation[:64], tiny_tokenizer, batch_size=32)

    def in_current_mode():
        with torch.no_grad():
            return [clf(b["tokens"], valid_lens=b["mask"]).argmax(-1) for b in loader]

    clf.train()
    assert not all(torch.equal(a, b) for a, b in zip(in_current_mode(), in_current_mode()))
    first, second = evaluate_classifier(clf, loader), evaluate_classifier(clf, loader)
    assert first == second and clf.training                      # mode restored
    clf.eval()
    assert evaluate_classifier(clf, loader) == first and not clf.training
    assert first["n"] == 64 and set(first) == {"acc", "loss", "n"}


def test_special_token_ids_come_from_the_tokenizer(tiny_tokenizer, minilm):
    """Pitfall 5: [0, 101, 102, 103] are bert-base-uncased's ids, ordinary pieces elsewhere."""
    assert [special_ids(minilm.tokenizer)[t] for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")] == [0, 101, 102, 103]
    ours = special_ids(tiny_tokenizer)
    assert (ours["[PAD]"], ours["[CLS]"], ours["[SEP]"], ours["[MASK]"]) == (0, 2, 3, 4)
    assert not set(tiny_tokenizer.vocab.to_tokens([101, 102, 103])) & {"[PAD]", "[CLS]", "[SEP]", "[MASK]"}
    ids, pieces = encode_texts(tiny_tokenizer, ["Great phone!"])
    assert ids[0][0] == 2 and ids[0][-1] == 3 and pieces[0][0] == "[CLS]"
    ids, pieces = encode_texts(minilm.tokenizer, ["Great phone!"])
    assert ids[0][0] == 101 and ids[0][-1] == 102
    dataset = review_loader([Review("Great phone!", 1, "x")], tiny_tokenizer).dataset
    assert dataset.pad_id == 0 and dataset.ids[0][0] == 2


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------

def run_cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "bertcourse.finetune", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_cli_help_explains_every_option():
    out = run_cli("--help")
    assert out.returncode == 0
    for option in ("--task", "--model", "--out", "--epochs", "--lr", "--batch-size", "--warmup-ratio",
                   "--weight-decay", "--pooling", "--head", "--train-size", "--seed", "--amp", "--threads",
                   "--checkpointing", "--freeze-word-embeddings", "--no-freeze-word-embeddings", "--quiet", "--device"):
        assert option in out.stdout, option
    text = " ".join(out.stdout.split())
    for task, spec in finetune_command.TASKS.items():
        assert task in text and f"chapter {spec.chapter}" in text and spec.score in text, task


def test_cli_help_states_each_tasks_training_pool_and_default_size():
    """The help's "all 2,400 sentences (sentiment), 3,000 of 8,936 pairs (nli), ..." is what the data hold."""
    text = " ".join(finetune_command.parser().format_help().split())
    for task, spec in finetune_command.TASKS.items():
        pool = len(spec.data()[0])
        size = f"all {pool:,}" if spec.train_size is None else f"{spec.train_size:,} of {pool:,}"
        assert f"{size} {spec.examples} ({task})" in text, (task, size)


def test_cli_task_defaults_are_the_chapters_recipes():
    """What `--task nli|ner|qa` trains with by default is what the notebooks (and their spread study,
    benchmarks/spread_chapters.py, which runs the notebooks' calls) train with."""
    import importlib.util
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "spread_chapters.py"
    spec = importlib.util.spec_from_file_location("spread_chapters", path)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    for task, recipe, sizes in (("nli", study.CH10_RECIPE, study.CH10_SPLITS), ("ner", study.CH11_RECIPE, {}),
                                ("qa", study.CH12_RECIPE, study.CH12_SPLITS)):
        args = finetune_command.parse_args(["--task", task, "--out", str(path.parent / "..")])
        spec = finetune_command.TASKS[task]
        assert args.lr == recipe["lr"] and args.batch_size == recipe.get("batch_size", RECIPE["batch_size"]), task
        assert args.freeze_word_embeddings == (not recipe["train_word_embeddings"]), task
        assert args.train_size == sizes.get("train_size"), task
        assert args.epochs == 1 and args.seed == 0 and args.head == "random", task
        assert args.amp == {False: "off", True: "on"}.get(recipe.get("amp"), "auto"), task
    assert finetune_command.WINDOWS == study.CH12_WINDOWS
    nli = finetune_command.TASKS["nli"].data()
    from bertcourse.sentence_pairs import load_snli
    chapter = load_snli(**study.CH10_SPLITS)
    assert finetune_command.TASKS["nli"].subset(nli[0], 3000, 0) == chapter.train
    assert (nli[1], nli[2]) == (chapter.validation, chapter.test)
    qa = finetune_command.TASKS["qa"].data()
    from bertcourse.answer_spans import load_questions
    chapter = load_questions(**study.CH12_SPLITS)
    assert finetune_command.TASKS["qa"].subset(qa[0], 1000, 0) == chapter.train and qa[2] == chapter.test


@pytest.mark.parametrize("args, message", [
    ([], "the following arguments are required: --out"),
    (["--out", "{tmp}", "--model", "bert"], "--model must be one of minilm, scratch, got 'bert'"),
    (["--out", "{tmp}", "--epochs", "0"], "--epochs must be > 0, got 0"),
    (["--out", "{tmp}", "--epochs", "two"], "--epochs must be a whole number, got 'two'"),
    (["--out", "{tmp}", "--lr", "nan"], "--lr must be > 0, got nan"),
    (["--out", "{tmp}", "--pooling", "max"], "--pooling must be one of mean, cls, got 'max'"),
    (["--out", "{tmp}", "--head", "zeros"], "--head must be one of probe, random, got 'zeros'"),
    (["--out", "{tmp}", "--train-size", "5000"], "--train-size must be <= 2400"),
    (["--out", "{tmp}", "--warmup-ratio", "1.5"], "--warmup-ratio must be <= 1, got 1.5"),
    (["--out", "/proc/no/such/folder"], "--out '/proc/no/such/folder' is not a writable folder"),
    (["--out", "{tmp}", "--bogus"], "unrecognized arguments: --bogus"),
    (["--out", "{tmp}", "--device", "gpu"], "--device must be auto, cpu, cuda or cuda:N, got 'gpu'"),
    (["--out", "{tmp}", "--task", "pos"], "--task must be one of sentiment, nli, ner, qa, got 'pos'"),
    (["--out", "{tmp}", "--task", "ner", "--pooling", "cls"],
     "--pooling is for the tasks that classify a whole input (sentiment, nli); --task ner reads every piece's state"),
    (["--out", "{tmp}", "--task", "qa", "--pooling", "max"], "--pooling must be one of mean, cls, got 'max'"),
    (["--out", "{tmp}", "--task", "nli", "--head", "probe"],
     "--head probe is chapter 9's recipe for --task sentiment; --task nli starts its new layer at random"),
    (["--out", "{tmp}", "--task", "qa", "--train-size", "7000"],
     "--train-size must be <= 6929 (the training questions of --task qa), got 7000"),
    (["--out", "{tmp}", "--task", "nli", "--train-size", "9000"],
     "--train-size must be <= 8936 (the training sentence pairs of --task nli), got 9000"),
])
def test_cli_bad_options_are_one_line_and_exit_code_2(tmp_path, capsys, args, message):
    # the command's main function, as `python -m bertcourse.finetune` calls it (the test below
    # runs one case through the real command)
    with command_in_this_process():
        code = finetune_main([a.replace("{tmp}", str(tmp_path)) for a in args])
    out, err = capsys.readouterr()
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert "Traceback" not in err and out == ""


def test_cli_bad_option_through_the_real_command_is_one_line_and_exit_code_2(tmp_path):
    out = run_cli("--out", str(tmp_path), "--epochs", "0")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == ["error: --epochs must be > 0, got 0"], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_cli_trains_saves_and_ends_with_the_test_accuracy(tmp_path):
    out = run_cli("--model", "scratch", "--train-size", "32", "--batch-size", "16", "--out", str(tmp_path),
                  "--threads", "1", "--quiet", "--amp", "off")
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("test accuracy: 0.") and len(last) == len("test accuracy: 0.xxx")
    assert "epoch 1.00 (step 2): validation accuracy" in out.stdout
    model, tokenizer = load_classifier(tmp_path)
    assert int(model.trained_steps) == 2 and tokenizer is not None
    assert (tmp_path / "trainer_state.safetensors").is_file()


def test_cli_freeze_word_embeddings_leaves_the_table_alone(tmp_path, capsys, monkeypatch):
    """--freeze-word-embeddings reaches the training: the saved table is the initial one, while
    the rest of the encoder moved (two steps of the random twin, in this process; 32 validation
    and test sentences instead of 300 each, since only the weights are checked here)."""
    _small_task(monkeypatch, "sentiment", 32)
    args = ["--model", "scratch", "--train-size", "32", "--batch-size", "16", "--threads", "1", "--quiet",
            "--amp", "off", "--seed", "0"]
    initial, _ = build_classifier("scratch", seed=0)
    for flag, folder in (([], tmp_path / "all"), (["--freeze-word-embeddings"], tmp_path / "frozen")):
        with command_in_this_process():
            assert finetune_main([*args, *flag, "--out", str(folder)]) == 0, capsys.readouterr().err
    trained = {name: load_classifier(tmp_path / name)[0].encoder for name in ("all", "frozen")}
    table = initial.encoder.token_embedding.weight
    assert torch.equal(trained["frozen"].token_embedding.weight, table)
    assert not torch.equal(trained["all"].token_embedding.weight, table)
    for encoder in trained.values():           # the blocks trained in both runs
        assert not torch.equal(encoder.blks[0].ffn.dense1.weight, initial.encoder.blks[0].ffn.dense1.weight)


@pytest.mark.parametrize("amp, capped", [("on", True), ("off", False)])
def test_cli_keeps_few_onednn_kernels_when_it_trains_in_bf16(tmp_path, monkeypatch, amp, capped):
    """Under bf16 the command keeps 16 compiled oneDNN kernels, as chapter 9's setup cell does
    (``--task sentiment`` on a bf16 CPU peaked at 1,103-1,153 MB with it, 1,238-1,247 MB without,
    the same weights to the bit: benchmarks/README.md), and before its first product."""
    calls = []
    monkeypatch.setattr(finetune_command, "cap_onednn_kernels", lambda: calls.append("capped"))

    class Stop(Exception):
        pass

    def data_read():                     # the command's first step after choosing the precision
        calls.append("data")
        raise Stop

    monkeypatch.setitem(finetune_command.TASKS, "sentiment",
                        dataclasses.replace(finetune_command.TASKS["sentiment"], data=data_read))
    with pytest.raises(Stop):
        finetune_command.run(finetune_command.parse_args(["--amp", amp, "--out", str(tmp_path / "run")]))
    assert calls == (["capped", "data"] if capped else ["data"])


def _small_task(monkeypatch, task: str, n: int = 16):
    """``--task`` with ``n`` test examples (and validation ones): the command's own run, on the
    real data's first examples, in seconds."""
    spec = finetune_command.TASKS[task]
    train, validation, test = spec.data()
    small = dataclasses.replace(spec, data=lambda: (train, None if validation is None else validation[:n], test[:n]))
    monkeypatch.setitem(finetune_command.TASKS, task, small)
    return test[:n]


@pytest.mark.parametrize("task, last, architecture", [
    ("nli", r"test accuracy: 0\.\d{3}", None),
    ("ner", r"test entity F1: 0\.\d{3}", "BertForTokenClassification"),
    ("qa", r"test F1: \d{1,3}\.\d", "BertForQuestionAnswering")])
def test_cli_trains_each_task_saves_it_and_ends_with_its_test_score(tmp_path, capsys, monkeypatch, task, last,
                                                                    architecture):
    import json
    import re
    test = _small_task(monkeypatch, task)
    with command_in_this_process():
        code = finetune_main(["--task", task, "--model", "scratch", "--train-size", "8", "--batch-size", "4",
                              "--threads", "1", "--quiet", "--amp", "off", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    assert re.fullmatch(last, lines[-1]), lines[-1]
    assert f"for {task} (chapter {finetune_command.TASKS[task].chapter}) on 8 " in out
    assert "word embeddings frozen" in out                     # the chapters' recipe
    if task != "ner":                                          # chapter 11 has no validation split
        assert re.search(r"epoch 1\.00 \(step \d+\): validation (accuracy|start accuracy) 0\.\d{3}", out), out
    if architecture is None:                                   # the course's checkpoint, three classes
        model, tokenizer = load_classifier(tmp_path)
        assert model.config.num_classes == 3 and tokenizer is not None
        assert read_config(tmp_path)["extra"]["labels"] == list(LABELS)
        assert read_config(tmp_path)["extra"]["test_acc"] == pytest.approx(float(lines[-1].split()[-1]), abs=5e-4)
        return
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == [architecture]
    run = json.loads((tmp_path / finetune_command.RUN_FILE).read_text())
    assert run["task"] == task and run["train_size"] == 8 and run["freeze_word_embeddings"] is True
    score = run["test_entity_f1"] if task == "ner" else run["test_f1"]
    assert score == pytest.approx(float(lines[-1].split()[-1]), abs=0.05 if task == "qa" else 5e-4)
    if task == "ner":
        assert [config["id2label"][str(i)] for i in range(len(TAGS))] == list(TAGS)
    # the saved head is the trained one: the shape of the task's, moved from where the seed started it
    from safetensors.torch import load_file
    from bertcourse.task_heads import build_span_predictor, build_tagger
    initial = build_tagger("scratch", len(TAGS), seed=0)[0] if task == "ner" else build_span_predictor("scratch", seed=0)[0]
    saved = load_file(tmp_path / "model.safetensors")["classifier.weight" if task == "ner" else "qa_outputs.weight"]
    assert saved.shape == initial.head.weight.shape and not torch.equal(saved, initial.head.weight)
    assert len(test) == 16


def test_cli_qa_trains_on_the_windows_that_hold_the_answer(monkeypatch):
    """--task qa hands finetune chapter 12's windows: 96 pieces, a stride of 32, only those with the answer."""
    from bertcourse.answer_spans import WindowDataset
    seen = {}

    def fake_finetune(model, tokenizer, train, validation, **options):
        seen.update(train=train, validation=validation, options=options)
        raise KeyboardInterrupt
    monkeypatch.setattr(finetune_command, "finetune", fake_finetune)
    _small_task(monkeypatch, "qa")
    args = finetune_command.parse_args(["--task", "qa", "--model", "scratch", "--train-size", "8", "--out",
                                        str(pathlib.Path(__file__).parent / "fixtures"), "--quiet"])
    monkeypatch.setattr(finetune_command, "check_writable", lambda *a: None)
    with command_in_this_process(), pytest.raises(KeyboardInterrupt):
        finetune_command.run(args)
    train = seen["train"]
    assert isinstance(train, WindowDataset) and isinstance(seen["validation"], WindowDataset)
    assert len(train.questions) == 8 and (0, 0) not in train.targets
    assert max(len(w) for w in train.windows) <= 96
    assert seen["options"]["batch_size"] == 4 and seen["options"]["lr"] == 2e-4
    assert seen["options"]["train_word_embeddings"] is False


def test_a_pair_batch_brings_its_segment_ids_to_the_step_and_the_evaluation(tiny_tokenizer):
    # chapter 10's sentence pairs: classification_step and evaluate_classifier read "segments"
    from bertcourse.sentence_pairs import Pair, pair_loader
    clf = tiny_classifier(tiny_tokenizer, dropout=0.0)          # 2 classes: the pairs' labels are 0 and 1
    pairs = [Pair("the food was good", "the food was bad", 1), Pair("great phone", "a phone", 0)] * 4
    (batch,) = list(pair_loader(pairs, tiny_tokenizer, batch_size=8))
    assert int(batch["segments"].sum()) > 0
    clf.eval()
    with torch.no_grad():
        with_segments = clf(batch["tokens"], segments=batch["segments"], valid_lens=batch["mask"])
        without = clf(batch["tokens"], valid_lens=batch["mask"])
        step = classification_step(clf, batch)
    assert not torch.allclose(with_segments, without)                  # the segment ids matter
    expected = torch.nn.functional.cross_entropy(with_segments, batch["labels"])
    assert torch.allclose(step["loss"], expected)
    assert math.isclose(evaluate_classifier(clf, [batch])["loss"], float(expected), rel_tol=1e-5)


def test_finetune_trains_on_sentence_pairs_and_refuses_a_mix(tiny_tokenizer, splits):
    from bertcourse.sentence_pairs import Pair
    clf = tiny_classifier(tiny_tokenizer, num_classes=3)
    pairs = [Pair(f"the food was {w}", f"the food was {v}", y) for w, v, y in
             (("good", "good", 0), ("good", "cold", 1), ("good", "bad", 2))] * 8
    trainer = finetune(clf, tiny_tokenizer, pairs, pairs[:6], batch_size=8, lr=1e-3, progress=False, plot=False)
    assert len(trainer.history.step) == 3 and trainer.history.evals[-1]["n"] == 6
    with pytest.raises(TypeError, match="validation must hold what train holds"):
        finetune(clf, tiny_tokenizer, pairs, splits.validation[:4], progress=False, plot=False)
    with pytest.raises(TypeError, match="train must hold one kind of example"):
        finetune(clf, tiny_tokenizer, pairs[:2] + splits.train[:2], progress=False, plot=False)


def test_finetune_trains_a_tagger_on_tagged_sentences_with_the_same_loop(tiny_tokenizer, splits):
    # chapter 11: the one finetune takes a TokenTagger and TaggedSentences (tagging_step, evaluate_tagger)
    from bertcourse.task_heads import TokenTagger, evaluate_tagger
    from bertcourse.token_tags import TAGS, TaggedSentence, tagged_loader
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=len(tiny_tokenizer), num_hiddens=32, ffn_num_hiddens=64, num_heads=2, num_blks=2,
                     max_len=128, dropout=0.0)
    tagger = TokenTagger(cfg, num_tags=len(TAGS), dropout=0.0)
    sentences = [TaggedSentence(("the", "food", "in", "paris"), ("O", "O", "O", "B-LOC"), "d1", "s1"),
                 TaggedSentence(("john", "was", "good"), ("B-PER", "O", "O"), "d2", "s2")] * 8
    before = evaluate_tagger(tagger, tagged_loader(sentences, tiny_tokenizer, 16))["loss"]
    trainer = finetune(tagger, tiny_tokenizer, sentences, sentences[:4], batch_size=8, lr=1e-2, epochs=10,
                       progress=False, plot=False)
    assert len(trainer.history.step) == 20 and trainer.history.evals[-1]["n"] == 2 * (4 + 3)     # a label per word
    assert trainer.history.evals[-1]["loss"] < 0.5 * before
    assert tagger.encoder.token_embedding.weight.requires_grad and not tagger.training
    with pytest.raises(TypeError, match=r"model must be a TokenTagger to train on TaggedSentence examples, got "
                                        r"BERTClassifier"):
        finetune(tiny_classifier(tiny_tokenizer), tiny_tokenizer, sentences, progress=False, plot=False)
    with pytest.raises(TypeError, match=r"model must be a BERTClassifier to train on Review examples, got TokenTagger"):
        finetune(tagger, tiny_tokenizer, splits.train[:4], progress=False, plot=False)
    with pytest.raises(TypeError, match=r"validation must hold what train holds \(TaggedSentence\), got Review"):
        finetune(tagger, tiny_tokenizer, sentences, splits.validation[:4], progress=False, plot=False)
    with pytest.raises(TypeError, match="model must be a BERTClassifier or TokenTagger or SpanPredictor"):
        finetune(tagger.encoder, tiny_tokenizer, sentences, progress=False, plot=False)


def test_finetune_trains_a_span_predictor_on_questions_with_the_same_loop(tiny_tokenizer):
    # chapter 12: the one finetune takes a SpanPredictor and Questions, or their windows
    from bertcourse.answer_spans import Question, WindowDataset, window_loader
    from bertcourse.task_heads import SpanPredictor, evaluate_spans
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=len(tiny_tokenizer), num_hiddens=32, ffn_num_hiddens=64, num_heads=2, num_blks=2,
                     max_len=128, dropout=0.0)
    model = SpanPredictor(cfg)
    context = "the food was good and the phone was bad"
    questions = [Question("q1", "what was good", context, (("the food", 0),)),
                 Question("q2", "what was bad", context, (("the phone", 22),))] * 8
    windows = WindowDataset(questions, tiny_tokenizer, max_len=10, stride=2)
    assert len(windows) > len(questions)                       # several windows per question
    in_order = window_loader(windows, tiny_tokenizer, 16)
    before = evaluate_spans(model, in_order)["loss"]
    trainer = finetune(model, tiny_tokenizer, windows, windows, batch_size=8, lr=1e-2, epochs=10, progress=False,
                       plot=False)
    assert len(trainer.history.step) == 10 * -(-len(windows) // 8)
    assert trainer.history.evals[-1]["n"] == len(windows)
    assert evaluate_spans(model, in_order)["loss"] < 0.5 * before and not model.training
    trainer = finetune(SpanPredictor(cfg), tiny_tokenizer, questions, batch_size=8, progress=False, plot=False)
    assert len(trainer.history.step) == 2                  # 16 questions, one window each at 192 pieces
    with pytest.raises(TypeError, match=r"model must be a SpanPredictor to train on Question examples, got "
                                        r"BERTClassifier"):
        finetune(tiny_classifier(tiny_tokenizer), tiny_tokenizer, windows, progress=False, plot=False)
    with pytest.raises(TypeError, match=r"validation must hold what train holds \(Question\)"):
        finetune(model, tiny_tokenizer, questions, [Review("good", 1, "site")], progress=False, plot=False)

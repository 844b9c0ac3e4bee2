"""bertcourse.task_heads: a tag per token and an answer span, on the one encoder, trained by the
one Trainer. The Hugging Face bridges of these heads are in tests/test_hf_export.py."""
from __future__ import annotations

import math

import pytest
import torch

from bertcourse.bert import BERTConfig
from bertcourse.task_heads import (IGNORE_INDEX, SpanPredictor, TokenTagger, build_span_predictor, build_tagger,
                                   evaluate_spans, evaluate_tagger, span_loss, span_step, tagging_loss, tagging_step)
from bertcourse.training import TrainConfig, Trainer

CFG = BERTConfig(vocab_size=30, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1, max_len=12, dropout=0.0)


def tag_batch(seed: int, batch: int = 8, seq: int = 10) -> dict:
    """A toy tagging task: the tag of a token is its id's remainder by 3; padding and [CLS]
    (position 0) are ignored."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(4, seq + 1, (batch,), generator=g)
    tokens = torch.randint(1, 30, (batch, seq), generator=g)
    mask = torch.arange(seq) < lengths[:, None]
    labels = torch.where(mask, tokens % 3, IGNORE_INDEX)
    labels[:, 0] = IGNORE_INDEX
    return {"tokens": tokens, "mask": mask, "labels": labels}


def span_batch(seed: int, batch: int = 8, seq: int = 10) -> dict:
    """A toy span task: the answer starts at the token 7 and ends at the next token 8."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(9, 30, (batch, seq), generator=g)
    starts = torch.randint(1, seq - 3, (batch,), generator=g)
    ends = starts + torch.randint(0, 3, (batch,), generator=g)
    rows = torch.arange(batch)
    tokens[rows, starts], tokens[rows, ends] = 7, 8
    tokens[rows[starts == ends], starts[starts == ends]] = 6          # a one-token answer
    return {"tokens": tokens, "segments": torch.zeros_like(tokens), "mask": torch.ones_like(tokens, dtype=torch.bool),
            "starts": starts, "ends": ends}


def test_tagging_loss_is_the_mean_cross_entropy_over_the_labelled_pieces_only():
    torch.manual_seed(0)
    logits, batch = torch.randn(2, 4, 3), {"labels": torch.tensor([[-100, 2, -100, 0], [-100, 1, 1, -100]])}
    used = [(0, 1, 2), (0, 3, 0), (1, 1, 1), (1, 2, 1)]
    by_hand = sum(-torch.log_softmax(logits[b, s], -1)[y] for b, s, y in used) / len(used)
    assert math.isclose(float(tagging_loss(logits, batch["labels"])), float(by_hand), rel_tol=1e-6)
    changed = logits.clone()
    changed[0, 0] += 5.0                                     # an ignored position: nothing changes
    assert float(tagging_loss(changed, batch["labels"])) == float(tagging_loss(logits, batch["labels"]))
    assert math.isclose(float(tagging_loss(logits, batch["labels"], reduction="sum")), float(by_hand) * 4,
                        rel_tol=1e-6)


@pytest.mark.parametrize("labels, words", [
    (torch.tensor([[-100, 3, 0, 0]]), "labels shifted by the \\[CLS\\] piece, or -100 forgotten"),
    (torch.full((1, 4), -100), "must label at least one position"),
    (torch.tensor([[0, 1, 2]]), r"must have shape \(batch=1, seq=4\)"),
])
def test_tagging_loss_names_bad_labels(labels, words):
    with pytest.raises(ValueError, match=words):
        tagging_loss(torch.randn(1, 4, 3), labels)


def test_span_loss_is_the_mean_of_the_start_and_end_cross_entropies():
    torch.manual_seed(1)
    start, end = torch.randn(3, 6), torch.randn(3, 6)
    starts, ends = torch.tensor([0, 2, 4]), torch.tensor([0, 3, 5])
    by_hand = sum(-torch.log_softmax(start[i], -1)[starts[i]] - torch.log_softmax(end[i], -1)[ends[i]]
                  for i in range(3)) / 2 / 3
    assert math.isclose(float(span_loss(start, end, starts, ends)), float(by_hand), rel_tol=1e-6)
    with pytest.raises(ValueError, match="example 1 ends at 1 but starts at 2"):
        span_loss(start, end, starts, torch.tensor([0, 1, 5]))
    with pytest.raises(ValueError, match=r"starts must be \(batch=3,\) positions in 0..5"):
        span_loss(start, end, torch.tensor([0, 2, 6]), torch.tensor([0, 3, 6]))


def test_heads_take_the_mask_by_name_and_give_their_shapes():
    tagger, spans = TokenTagger(CFG, num_tags=3).eval(), SpanPredictor(CFG).eval()
    batch = tag_batch(0)
    assert tagger(batch["tokens"], valid_lens=batch["mask"]).shape == (8, 10, 3)
    start, end = spans(batch["tokens"], valid_lens=batch["mask"])
    assert start.shape == end.shape == (8, 10)
    for model in (tagger, spans):
        with pytest.raises(TypeError, match="pass the mask by name"):
            model(batch["tokens"], batch["mask"])


def test_the_one_trainer_trains_both_heads_and_the_one_evaluation_loop_scores_them():
    torch.manual_seed(0)
    tagger, spans = TokenTagger(CFG, num_tags=3, dropout=0.1), SpanPredictor(CFG)
    tag_loader, span_loader = [tag_batch(s) for s in range(20)], [span_batch(s) for s in range(20)]
    held_tags, held_spans = [tag_batch(100 + s) for s in range(4)], [span_batch(100 + s) for s in range(4)]
    before = evaluate_tagger(tagger, held_tags), evaluate_spans(spans, held_spans)
    cfg = TrainConfig(steps=150, lr=3e-3, warmup_steps=10, eval_every=None, seed=0)
    Trainer(tagger, tag_loader, tagging_step, cfg, eval_loader=held_tags, eval_fn=evaluate_tagger).fit(
        progress=False, plot=False)
    Trainer(spans, span_loader, span_step, cfg, eval_loader=held_spans, eval_fn=evaluate_spans).fit(
        progress=False, plot=False)
    after = evaluate_tagger(tagger, held_tags), evaluate_spans(spans, held_spans)
    # chance is 1/3 for the tags and about 1/10 for a position; the toy tasks are read off the token ids
    assert before[0]["acc"] < 0.5 and after[0]["acc"] > 0.95
    assert before[1]["start_acc"] < 0.4 and after[1]["start_acc"] > 0.9 and after[1]["end_acc"] > 0.9
    assert after[0]["n"] == sum(int((b["labels"] != IGNORE_INDEX).sum()) for b in held_tags)
    assert tagger.training and spans.training                          # the evaluations put the mode back


def test_build_puts_the_heads_on_minilm_and_the_steps_run_on_real_batches():
    from bertcourse.token_tags import TAGS, TaggedSentence, encode_tagged
    tagger, tok = build_tagger("minilm", num_tags=len(TAGS))
    spans, tok2 = build_span_predictor("minilm")
    assert tagger.config.num_hiddens == spans.config.num_hiddens == 384 and tagger.training
    assert tok.get_vocab_size() == tok2.get_vocab_size() == 30522
    batch = encode_tagged(tok, [TaggedSentence(["Anna", "visited", "Tampa", "Bay"], ["B-PER", "O", "B-LOC", "I-LOC"],
                                               "d", "d-1")])
    out = tagging_step(tagger, {k: batch[k] for k in ("tokens", "mask", "labels")})
    assert out["loss"].dim() == 0 and math.isfinite(float(out["loss"].detach()))
    # the heads start from seed 0: the same seed gives the same head
    again, _ = build_tagger("minilm", num_tags=len(TAGS))
    assert torch.equal(again.head.weight, tagger.head.weight)
    with pytest.raises(ValueError, match="source"):
        build_tagger("bert-large")


def test_predictions_are_a_tag_per_word_and_an_answer_per_question():
    from bertcourse.answer_spans import Question, WindowDataset, best_answer, make_windows
    from bertcourse.pretrained_bert import load_pretrained
    from bertcourse.token_tags import TaggedDataset, TaggedSentence, encode_tagged, word_tags
    from bertcourse.task_heads import predict_answers, predict_tags
    tok = load_pretrained("minilm").tokenizer
    cfg = BERTConfig(vocab_size=30522, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1, max_len=128)
    torch.manual_seed(0)
    tagger, spans = TokenTagger(cfg, num_tags=7).train(), SpanPredictor(cfg)
    sentences = [TaggedSentence(["Anna", "visited", "Tampa", "Bay"], ["B-PER", "O", "B-LOC", "I-LOC"], "d", "d-1"),
                 TaggedSentence(["hello", "there"], ["O", "O"], "d", "d-2")]
    # batches of one: the same computation as by hand below, bit for bit (an untrained model's
    # logits are nearly tied, and padding may move a last bit on some CPUs)
    got = predict_tags(tagger, TaggedDataset(sentences, tok), batch_size=1)
    by_hand = []
    for sentence in sentences:
        enc = encode_tagged(tok, [sentence])
        with torch.no_grad():
            best = tagger.eval()(enc["tokens"], valid_lens=enc["mask"]).argmax(-1)
        by_hand.append(word_tags(enc["word_ids"][0], best[0].tolist(), len(sentence.words)))
    assert got == by_hand
    # batched shortest first and put back in order: each sentence's piece tags are the argmax of its own forward
    from bertcourse.task_heads import predict_piece_tags
    many = [sentences[1], sentences[0], sentences[1], sentences[0], sentences[0]]
    data = TaggedDataset(many, tok)
    pieces = predict_piece_tags(tagger, data, batch_size=2)
    assert [len(p) for p in pieces] == [len(ids) for ids in data.ids] and all(p.dtype == torch.long for p in pieces)
    with torch.no_grad():
        alone = [tagger(ids[None], valid_lens=torch.ones(1, len(ids), dtype=torch.bool))[0].argmax(-1) for ids in data.ids]
    logits = [tagger(ids[None], valid_lens=torch.ones(1, len(ids), dtype=torch.bool))[0] for ids in data.ids]
    for p, a, z in zip(pieces, alone, logits):      # equal wherever the two best logits are not tied within 1e-5
        top2 = z.detach().topk(2, dim=-1).values
        clear = (top2[:, 0] - top2[:, 1]) > 1e-5
        assert torch.equal(p[clear], a[clear])
    context = " ".join(["the river runs by the town"] * 30)
    questions = [Question("a", "what runs?", context, (("river", 4),)), Question("b", "where?", "by the town", (("town", 7),))]
    answers = predict_answers(spans, WindowDataset(questions, tok, max_len=48, stride=16), batch_size=1)
    assert set(answers) == {"a", "b"}
    windows = make_windows(tok, "what runs?", context, 48, 16)
    with torch.no_grad():
        logits = [spans.eval()(torch.tensor([w.ids]), segments=torch.tensor([w.segments])) for w in windows]
    by_hand = best_answer(windows, [s[0] for s, _ in logits], [e[0] for _, e in logits], context)   # unpadded, as batch_size=1
    assert answers["a"] == by_hand.text

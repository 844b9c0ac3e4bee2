"""Headless tests of chapter 11's named-entity explorer (bertcourse.widgets.tags): the pure function
against the training encoding (encode_tagged), predict_tags and bio_entities, with MiniLM's real
tokenizer and a tiny tagger; the figure's data; and the widget's state after its controls change."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba
from tokenizers import Tokenizer

from bertcourse.bert import BERTConfig
from bertcourse.data import train_wordpiece
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.task_heads import IGNORE_INDEX, TokenTagger, predict_tags
from bertcourse.token_tags import TAGS, TaggedDataset, TaggedSentence, bio_entities, encode_tagged
from bertcourse.wordpiece import hf_tokenizer
from bertcourse.widgets.tags import TYPE_COLOURS, TYPE_YOUR_OWN, TagExplorer, draw_tags, tag_data

SENTENCE = "Angela Merkel met Emmanuel Macron in Brussels on Obama's visit to New York."
KEYS = {"tags", "words", "pieces", "word_ids", "first_piece", "probs", "piece_tags", "word_tags", "entities",
        "cut_words", "message"}


@pytest.fixture(scope="module")
def tokenizer():
    return load_pretrained("minilm").tokenizer


def config(vocab_size: int = 30522, max_len: int = 512) -> BERTConfig:
    # max_len 512: MiniLM's tokenizer truncates at 512, and a model must have the positions for it
    return BERTConfig(vocab_size=vocab_size, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1,
                      max_len=max_len)


def tiny_tagger(num_tags: int = 7, dropout: float = 0.1, vocab_size: int = 30522) -> TokenTagger:
    """A tiny tagger with a random head, large enough that its predictions vary from piece to piece."""
    torch.manual_seed(0)
    tagger = TokenTagger(config(vocab_size), num_tags=num_tags, dropout=dropout)
    with torch.no_grad():
        tagger.head.weight.normal_(0.0, 0.5)
    return tagger.eval()


@pytest.fixture(scope="module")
def model():
    return tiny_tagger()


class LookupTagger(TokenTagger):
    """A tagger whose logits depend on the piece alone (a table, one row per token id): its tags
    are known in advance. The encoder is not run."""

    def __init__(self, tokenizer, tags_of: dict, default: str = "O"):
        super().__init__(config(), num_tags=len(TAGS))
        table = torch.zeros(30522, len(TAGS))
        table[:, TAGS.index(default)] = 5.0
        for piece, tag in tags_of.items():
            table[tokenizer.token_to_id(piece), TAGS.index(tag)] = 10.0
        self.register_buffer("table", table)

    def forward(self, tokens, *args, segments=None, valid_lens=None):
        return self.table[tokens]


def words_of(tokenizer, text):
    return [w for w, _ in hf_tokenizer(tokenizer).pre_tokenizer.pre_tokenize_str(text)]


def predicted_by_the_package(model, tokenizer, words):
    """The oracle: predict_tags on the words as one sentence (tags all "O": they are not read)."""
    return predict_tags(model, TaggedDataset([TaggedSentence(words, ["O"] * len(words), "d", "d-1")], tokenizer),
                        batch_size=1)[0]


# --- the pure function -----------------------------------------------------------------------

def test_words_pieces_and_alignment_are_the_training_encoding(model, tokenizer):
    d = tag_data(model, tokenizer, SENTENCE)
    assert set(d) == KEYS and d["tags"] == TAGS
    words = words_of(tokenizer, SENTENCE)
    assert d["words"] == words and words[8:11] == ["Obama", "'", "s"] and words[-1] == "."
    enc = hf_tokenizer(tokenizer).encode(words, is_pretokenized=True, add_special_tokens=False)
    assert d["pieces"] == ["[CLS]", *enc.tokens, "[SEP]"]
    assert d["word_ids"] == [None, *enc.word_ids, None]
    assert d["pieces"][2:4] == ["mer", "##kel"] and d["word_ids"][2:4] == [1, 1]
    # the first piece of each word carries its tag; the others (and [CLS], [SEP]) do not
    expected = [w is not None and w != prev for prev, w in zip([None, *d["word_ids"]], d["word_ids"])]
    assert d["first_piece"] == expected
    assert d["first_piece"][2:4] == [True, False] and d["first_piece"][0] is d["first_piece"][-1] is False
    assert sum(d["first_piece"]) == len(words)
    assert not any(first for p, first in zip(d["pieces"], d["first_piece"]) if p.startswith("##"))
    # ... exactly the pieces that training labels (the others get -100) for the same words
    gold = ["B-PER", "I-PER", "O", "B-PER", "I-PER", "O", "B-LOC", "O", "B-PER", "O", "O", "O", "O", "B-LOC",
            "I-LOC", "O"]
    labels = encode_tagged(tokenizer, [TaggedSentence(words, gold, "d", "d-1")])["labels"][0].tolist()
    assert [y != IGNORE_INDEX for y in labels] == d["first_piece"]
    assert [y for y in labels if y != IGNORE_INDEX] == [TAGS.index(t) for t in gold]
    assert d["cut_words"] == 0


def test_probabilities_and_tags_are_the_package_predictions(model, tokenizer):
    d = tag_data(model, tokenizer, SENTENCE)
    p = d["probs"]
    assert isinstance(p, np.ndarray) and p.shape == (len(d["pieces"]), len(TAGS)) and p.dtype.kind == "f"
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-6)
    assert (p > 0).all()
    with torch.no_grad():
        enc = encode_tagged(tokenizer, [TaggedSentence(d["words"], ["O"] * len(d["words"]), "d", "d-1")])
        logits = model(enc["tokens"], valid_lens=enc["mask"])[0]
    np.testing.assert_allclose(p, logits.softmax(-1).double().numpy(), atol=1e-6)
    assert d["piece_tags"] == [TAGS[k] for k in p.argmax(1)]
    assert len(set(d["piece_tags"])) >= 3, "the tiny tagger should predict several tags"
    assert d["word_tags"] == predicted_by_the_package(model, tokenizer, d["words"])
    firsts = [t for t, first in zip(d["piece_tags"], d["first_piece"]) if first]
    assert d["word_tags"] == firsts            # a word's tag is its first piece's


def test_entities_and_message_are_bio_entities_of_the_word_tags(tokenizer):
    tagger = LookupTagger(tokenizer, {"obama": "B-PER", "new": "B-LOC", "york": "I-LOC", "##kel": "B-ORG"})
    d = tag_data(tagger, tokenizer, "Obama's visit to New York.")
    assert d["words"] == ["Obama", "'", "s", "visit", "to", "New", "York", "."]
    assert d["word_tags"] == ["B-PER", "O", "O", "O", "O", "B-LOC", "I-LOC", "O"]
    assert d["entities"] == [("PER", "Obama", 0, 1), ("LOC", "New York", 5, 7)]
    assert d["message"] == "2 entities: Obama (PER), New York (LOC)"
    # a later piece's own prediction is never read: ##kel says B-ORG, the word takes mer's O
    d = tag_data(tagger, tokenizer, "Merkel  met\tObama")
    assert d["piece_tags"][2] == "B-ORG" and not d["first_piece"][2]
    assert d["word_tags"] == ["O", "O", "B-PER"]
    assert d["entities"] == [("PER", "Obama", 2, 3)] and d["message"] == "1 entity: Obama (PER)"
    d = tag_data(tagger, tokenizer, "we met in new  york")               # the entity's text as typed
    assert d["entities"] == [("LOC", "new  york", 3, 5)]
    d = tag_data(tagger, tokenizer, "nobody here")
    assert d["entities"] == [] and d["message"] == "no entity found"


def test_random_tags_give_the_entities_of_bio_entities(model, tokenizer):
    d = tag_data(model, tokenizer, SENTENCE)
    spans = bio_entities(d["word_tags"])
    assert len(spans) >= 2
    assert [(kind, start, end) for kind, _text, start, end in d["entities"]] == spans
    assert d["entities"][1][1] == "Merkel met" and d["entities"][1][2:] == (1, 3)   # words 1-2, as typed
    listed = ", ".join(f"{text} ({kind})" for kind, text, _s, _e in d["entities"])
    assert d["message"] == f"{len(spans)} entities: {listed}"


def test_predictions_are_made_in_eval_mode(tokenizer):
    tagger = tiny_tagger(dropout=0.5)                     # in training mode every call would differ
    expected = tag_data(tagger, tokenizer, SENTENCE)["probs"]
    tagger.train()
    for _ in range(2):
        np.testing.assert_allclose(tag_data(tagger, tokenizer, SENTENCE)["probs"], expected, atol=1e-6)
    assert tagger.training                                # and the mode is given back


def test_words_beyond_max_len_are_cut_off_and_said(model, tokenizer):
    d = tag_data(model, tokenizer, "word " * 130)
    assert len(d["pieces"]) == 128 and d["cut_words"] == 4
    assert d["word_tags"][-4:] == ["O"] * 4 and len(d["word_tags"]) == 130
    assert d["message"].endswith("; 4 words after the first 128 pieces were cut off (tagged O)")


def test_invisible_words_are_left_out_and_a_tokenizer_without_pre_tokenizer_splits_on_spaces(model, tokenizer):
    d = tag_data(model, tokenizer, "Anna \u200b went to \x1c Oslo")      # a zero-width space, a control character
    assert d["words"] == ["Anna", "went", "to", "Oslo"] and d["cut_words"] == 0
    plain = tag_data(model, tokenizer, "Anna went to Oslo")
    np.testing.assert_allclose(d["probs"], plain["probs"], atol=1e-6)
    assert d["word_tags"] == plain["word_tags"] and d["pieces"] == plain["pieces"]
    bare = Tokenizer.from_str(hf_tokenizer(tokenizer).to_str())
    bare.pre_tokenizer = None
    d = tag_data(model, bare, "Merkel met Obama, in Oslo.")
    assert d["words"] == ["Merkel", "met", "Obama,", "in", "Oslo."]
    assert d["pieces"] == ["[CLS]", "mer", "##kel", "met", "obama", "##,", "in", "oslo", "##.", "[SEP]"]
    assert d["first_piece"] == [False, True, False, True, True, False, True, True, False, False]


@pytest.mark.parametrize("text", ["", "   ", "\t\n", "\x1c", "\u200b"])
def test_blank_text_asks_for_a_sentence(model, tokenizer, text):
    d = tag_data(model, tokenizer, text)
    assert set(d) == KEYS and d["message"] == "type a sentence"
    assert d["probs"] is d["piece_tags"] is d["word_tags"] is d["entities"] is None
    assert d["words"] == [] and d["pieces"] == ["[CLS]", "[SEP]"] and d["word_ids"] == [None, None]
    fig = draw_tags(d)
    assert "type a sentence" in fig.axes[0].texts[0].get_text()


def test_wrong_arguments_are_named(model, tokenizer):
    with pytest.raises(TypeError, match="text must be a str"):
        tag_data(model, tokenizer, ["Anna", "ran"])
    with pytest.raises(TypeError, match="model must be a TokenTagger"):
        tag_data(torch.nn.Linear(2, 7), tokenizer, SENTENCE)
    with pytest.raises(ValueError, match="model must tag with the 7 tags.*num_tags=3"):
        tag_data(tiny_tagger(num_tags=3), tokenizer, SENTENCE)
    with pytest.raises(TypeError, match="tokenizer must be"):
        tag_data(model, "bert-base-uncased", SENTENCE)
    small = train_wordpiece(["anna ran to oslo ."] * 4, vocab_size=60, min_frequency=1)
    with pytest.raises(ValueError, match="tokenizer and model do not fit"):
        tag_data(tiny_tagger(vocab_size=20), small, SENTENCE)
    with pytest.raises(TypeError, match="data must be the dict"):
        draw_tags([0.2, 0.8])
    with pytest.raises(ValueError, match="data must have the keys"):
        draw_tags({"probs": np.ones((3, 7)) / 7})
    with pytest.raises(TypeError, match="examples must be a list"):
        TagExplorer(model, tokenizer, "Anna ran to Oslo .")
    with pytest.raises(TypeError, match="examples must be a list"):
        TagExplorer(model, tokenizer, ["Anna ran .", 3])
    with pytest.raises(TypeError, match="text must be a str"):
        TagExplorer(model, tokenizer, [], text=None)
    with pytest.raises(ValueError, match="num_tags=3"):
        TagExplorer(tiny_tagger(num_tags=3), tokenizer, [])


# --- the figure ------------------------------------------------------------------------------

def test_draw_tags_pieces_colours_and_probabilities(model, tokenizer):
    d = tag_data(model, tokenizer, SENTENCE)
    fig = draw_tags(d)
    ax_tok, ax = fig.axes[0], fig.axes[1]
    boxes = [t for t in ax_tok.texts if t.get_bbox_patch() is not None]
    assert [t.get_text() for t in boxes] == d["pieces"]
    for i, box in enumerate(boxes):
        patch, w = box.get_bbox_patch(), d["word_ids"][i]
        colour = patch.get_facecolor()
        if w is None:                                                   # [CLS], [SEP]: white
            assert colour == to_rgba("white")
            continue
        kind = d["word_tags"][w].partition("-")[2] or "O"
        full = to_rgba(TYPE_COLOURS[kind])
        if d["first_piece"][i]:
            assert colour == full and patch.get_linestyle() == "-"
        else:                                                           # the word's colour, paler, dashed
            assert colour != full and all(c >= f for c, f in zip(colour, full))
            assert patch.get_linestyle() == "--"
    assert [d["first_piece"][i] for i, b in enumerate(boxes) if b.get_bbox_patch().get_linestyle() == "-"
            and d["word_ids"][i] is not None] == [True] * len(d["words"])
    # the word's tag is written under its first piece, one per word
    written = [t.get_text() for t in ax_tok.texts if t.get_bbox_patch() is None]
    assert written == d["word_tags"]
    # the heat map: rows the tags, columns the pieces; one outlined cell per word, at its tag
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), d["probs"].T, atol=1e-12)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(TAGS)
    assert [t.get_text() for t in ax.get_xticklabels()] == d["pieces"]
    outlined = sorted((round(r.get_x() + 0.5), round(r.get_y() + 0.5)) for r in ax.patches)
    firsts = [i for i, first in enumerate(d["first_piece"]) if first]
    assert outlined == [(i, TAGS.index(d["piece_tags"][i])) for i in firsts]
    assert [TAGS[k] for _i, k in outlined] == d["word_tags"]


# --- the widget ------------------------------------------------------------------------------

def test_widget_examples_and_text_box(tokenizer):
    tagger = LookupTagger(tokenizer, {"obama": "B-PER", "new": "B-LOC", "york": "I-LOC", "oslo": "B-LOC",
                                      "<": "B-ORG"})
    tagger.train()
    examples = ["Obama's visit to New York.", "Anna went to Oslo <3"]
    w = TagExplorer(tagger, tokenizer, examples)
    assert len(w.example.options) == len(examples) + 1
    assert w.state["example"] == TYPE_YOUR_OWN and w.state["text"] == w.text.value
    assert set(w.state) == KEYS | {"text", "example"}

    w.example.value = 0                                   # choosing an example fills the box
    assert w.text.value == examples[0] and w.state["text"] == examples[0] and w.state["example"] == 0
    assert w.state["message"] == "2 entities: Obama (PER), New York (LOC)"
    assert w.state["message"] in w.info.value
    np.testing.assert_allclose(w.state["probs"], tag_data(tagger, tokenizer, examples[0])["probs"])
    assert len(w.figure.axes[1].patches) == len(w.state["words"])

    w.example.value = 1
    assert w.state["entities"] == [("LOC", "Oslo", 3, 4), ("ORG", "<", 4, 5)]
    assert w.info.value == "<b>2 entities: Oslo (LOC), &lt; (ORG)</b>"     # the typed text, escaped

    w.text.value = "New York and Oslo"                    # editing the box leaves the example
    assert w.example.value == TYPE_YOUR_OWN and w.state["example"] == TYPE_YOUR_OWN
    assert w.state["words"] == ["New", "York", "and", "Oslo"]
    assert [e[1] for e in w.state["entities"]] == ["New York", "Oslo"]
    assert tagger.training                                # the widget gives the mode back

    w.text.value = " "
    assert w.state["probs"] is None and "type a sentence" in w.figure.axes[0].texts[0].get_text()
    assert w.info.value == "<b>type a sentence</b>"

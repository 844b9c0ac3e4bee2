"""Chapter 11 widget: the named-entity explorer.

Type a sentence (or pick an example) and see what the fine-tuned token tagger makes of it.
Top: the sentence as the model reads it, ``[CLS] pieces [SEP]``, each piece coloured by the
entity type of its word's predicted tag (person, location, organisation; grey: outside any
entity), with the word's tag written under the word's **first** piece. A word's later pieces
(``##kel`` of *Merkel*) are drawn pale, with a dashed edge: in training they carried no label
(``-100``, :func:`~bertcourse.token_tags.align_labels`), and at prediction time the word's
tag is read from its first piece alone (:func:`~bertcourse.token_tags.word_tags`). Bottom:
the probability of each of the seven tags at every piece (rows: tags, columns: pieces), the
cell each word's tag is read from outlined.

The model also predicts a tag at the later pieces and at ``[CLS]`` and ``[SEP]``: those
columns are shown, but nothing reads them. The words are split as the tokenizer splits text
(its pre-tokenizer: white space and punctuation), then encoded exactly as the training
sentences were (:func:`~bertcourse.token_tags.encode_tagged`), so the pieces, the alignment
and the tags are those of :func:`~bertcourse.task_heads.predict_tags` on the same words. The
treebank's own words differ here and there (it keeps *'s* as one word; the pre-tokenizer makes
it two, *'* and *s*).

Pure function (tested directly): :func:`tag_data`. Draw function: :func:`draw_tags`. Widget:
:class:`TagExplorer`.
"""
from __future__ import annotations

import html
import re
from typing import Sequence

import ipywidgets as W
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from .._checks import check_instance, check_keys, check_str_list, check_tokenizer_fits
from ..i18n import gettext as _
from ..task_heads import IGNORE_INDEX, TokenTagger
from ..token_tags import ENTITY_TYPES, MAX_LEN, TAGS, TaggedSentence, bio_entities, encode_tagged, word_tags
from ..training import evaluation_batches
from ..wordpiece import hf_tokenizer
from . import FigureWidget
from .drawing import ROW_WIDTH, draw_heatmap, draw_message, token_layout

__all__ = ["TYPE_YOUR_OWN", "TYPE_COLOURS", "tag_data", "draw_tags", "TagExplorer"]

TYPE_YOUR_OWN = -1          # the example control's value for "the text box holds my own sentence"
TYPE_COLOURS = {"PER": "#fc8d62", "LOC": "#66c2a5", "ORG": "#8da0cb", "O": "#d9d9d9"}
"""The colour of a piece whose word is tagged with an entity of that type (``"O"``: none)."""
SPECIAL_COLOUR = "#ffffff"  # [CLS] and [SEP]: no word, no tag
LATER_PIECE_SHADE = 0.55    # a word's later pieces: its colour mixed with this much white
OUTLINE_COLOUR = "#d62728"  # the heat map's cells each word's tag is read from
KEYS = ("tags", "words", "pieces", "word_ids", "first_piece", "probs", "piece_tags", "word_tags", "entities",
        "cut_words", "message")


def _check_tagger(model, tokenizer) -> None:
    check_instance("model", model, TokenTagger, "see build_tagger(); fine-tune it on the named entities")
    if model.num_tags != len(TAGS):
        raise ValueError(f"model must tag with the {len(TAGS)} tags {list(TAGS)} (num_tags={len(TAGS)}), "
                         f"got a tagger with num_tags={model.num_tags}")
    check_tokenizer_fits(tokenizer, model)


def tag_data(model: TokenTagger, tokenizer, text: str) -> dict:
    """What the widget shows for ``text``.

    ``tags`` (:data:`~bertcourse.token_tags.TAGS`); ``words``: ``text`` split by the tokenizer's
    pre-tokenizer (white space and punctuation), without the words its normaliser empties
    (zero-width and control characters: they have no piece); ``pieces``: ``[CLS] pieces [SEP]``
    as the model reads them (:func:`~bertcourse.token_tags.encode_tagged`, at most
    :data:`~bertcourse.token_tags.MAX_LEN` pieces, or the model's ``max_len`` if smaller);
    ``word_ids``: the word of each piece (``None`` for ``[CLS]`` and ``[SEP]``);
    ``first_piece``: per piece, whether it is its word's first piece, the one that carries the
    word's tag (training labels the others ``-100``); ``probs``: the softmax of the tagger's
    logits, a float array ``(pieces, len(tags))``, in eval mode without gradients (the model's
    mode is given back); ``piece_tags``: the most probable tag at each piece; ``word_tags``: one
    tag per word, the one at its first piece (:func:`~bertcourse.token_tags.word_tags`);
    ``entities``: ``(type, text, start, end)`` per entity of
    :func:`~bertcourse.token_tags.bio_entities` (``start``/``end``: word indices, end
    exclusive; ``text``: the words as typed); ``cut_words``: words after the last piece that
    fits (tagged ``"O"``); and a one-line ``message``. With a blank ``text`` (the learner is
    typing) ``pieces`` is ``[CLS] [SEP]``, the predictions are ``None`` and the message asks
    for a sentence."""
    _check_tagger(model, tokenizer)
    check_instance("text", text, str)
    hf = hf_tokenizer(tokenizer)
    split = hf.pre_tokenizer.pre_tokenize_str(text) if hf.pre_tokenizer else \
        [(m.group(), m.span()) for m in re.finditer(r"\S+", text)]
    # A word that the normaliser empties (a zero-width space, a control character) has no piece:
    # it is left out, so that cut_words counts only the words truncation cut off.
    spans = [(w, span) for w, span in split if (hf.normalizer.normalize_str(w) if hf.normalizer else w).strip()]
    words = [w for w, _span in spans]
    data = {"tags": TAGS, "words": words, "pieces": ["[CLS]", "[SEP]"], "word_ids": [None, None],
            "first_piece": [False, False], "probs": None, "piece_tags": None, "word_tags": None,
            "entities": None, "cut_words": 0}
    if not words:
        data["message"] = _("type a sentence")
        return data
    # All tags "O": only the words are read; the labels say which pieces carry a word's tag.
    sentence = TaggedSentence(words, ["O"] * len(words), "typed", "typed")
    max_len = min(MAX_LEN, model.config.max_len)
    enc = encode_tagged(tokenizer, [sentence], max_len=max_len)
    n = int(enc["mask"][0].sum())
    for batch in evaluation_batches(model, [enc]):
        logits = model(batch["tokens"], valid_lens=batch["mask"])[0, :n]
        probs = logits.float().softmax(-1).cpu().double().numpy()
    best = probs.argmax(-1).tolist()
    wids = enc["word_ids"][0][:n]
    tags = word_tags(wids, best, len(words))
    entities = [(kind, text[spans[start][1][0]:spans[end - 1][1][1]], start, end)
                for kind, start, end in bio_entities(tags)]
    data.update(pieces=[hf.id_to_token(i) for i in enc["tokens"][0, :n].tolist()], word_ids=wids,
                first_piece=(enc["labels"][0, :n] != IGNORE_INDEX).tolist(), probs=probs,
                piece_tags=[TAGS[k] for k in best], word_tags=tags, entities=entities, cut_words=enc["cut_words"][0])
    listed = _(", ").join(_("{text} ({type})").format(text=t, type=kind) for kind, t, _s, _e in entities)
    if not entities:
        message = _("no entity found")
    elif len(entities) == 1:
        message = _("1 entity: {entities}").format(entities=listed)
    else:
        message = _("{n} entities: {entities}").format(n=len(entities), entities=listed)
    cut = data["cut_words"]
    if cut:
        message += (_("; 1 word after the first {max_len} pieces was cut off (tagged O)") if cut == 1 else
                    _("; {n} words after the first {max_len} pieces were cut off (tagged O)")).format(
            n=cut, max_len=max_len)
    data["message"] = message
    return data


def _type_of(tag: str) -> str:
    """``"B-PER"`` -> ``"PER"``; ``"O"`` -> ``"O"``."""
    return tag.partition("-")[2] or tag


def _paler(colour: str) -> tuple:
    rgb = np.array([int(colour[k:k + 2], 16) / 255 for k in (1, 3, 5)])
    return tuple(rgb + (1 - rgb) * LATER_PIECE_SHADE) + (1.0,)


def _piece_colour(data: dict, i: int) -> tuple | str:
    """The face colour of piece ``i`` in :func:`draw_tags`: white for ``[CLS]``/``[SEP]``, else
    the colour of its word's tag's entity type (:data:`TYPE_COLOURS`), paler for a later piece."""
    w = data["word_ids"][i]
    if w is None:
        return SPECIAL_COLOUR
    colour = TYPE_COLOURS[_type_of(data["word_tags"][w])]
    return colour if data["first_piece"][i] else _paler(colour)


def draw_tags(data: dict) -> Figure:
    """Top (``fig.axes[0]``): the pieces in boxes (the texts with a box, in order), each
    coloured by the entity type of its word's tag (:data:`TYPE_COLOURS`; white: ``[CLS]`` and
    ``[SEP]``); a word's later pieces paler, with a dashed edge; under each
    word's first piece, the word's tag (a text without a box). Bottom (``fig.axes[1]``): the
    probabilities as a heat map (``images[0]``: ``probs.T``, rows in the order of ``tags``,
    columns the pieces), with an outlined cell (``patches``) per first piece, at its most
    probable tag: the tag its word takes. Later pieces' and special tokens' labels are grey."""
    check_keys("data", data, KEYS, "tag_data()")
    if data["probs"] is None:
        return draw_message(_("type a sentence to see its word pieces and their tags"))
    pieces, first, word_ids = data["pieces"], data["first_piece"], data["word_ids"]
    layout = token_layout([max(len(t), 2) for t in pieces])
    rows = layout[-1][0] + 1
    fig = Figure(figsize=(11, 4.6 + 0.7 * rows))
    ax_tok, ax = fig.subplots(2, 1, gridspec_kw={"height_ratios": [0.7 * rows + 0.6, 3.6]})
    for i, ((r, c), piece) in enumerate(zip(layout, pieces)):
        special, later = word_ids[i] is None, word_ids[i] is not None and not first[i]
        ax_tok.text(c, -r, piece, ha="center", va="center", fontsize=9,
                    fontweight="bold" if special else "normal", color="0.35" if later else "black",
                    bbox=dict(boxstyle="round,pad=0.3", facecolor=_piece_colour(data, i),
                              edgecolor="#999999" if later else "#555555", linestyle="--" if later else "-"))
        if first[i]:
            ax_tok.text(c, -r - 0.45, data["word_tags"][word_ids[i]], ha="center", va="center", fontsize=7,
                        color="0.25")
    ax_tok.set_xlim(0, ROW_WIDTH)
    ax_tok.set_ylim(-rows + 0.3, 0.5)
    ax_tok.axis("off")
    names = {"PER": _("PER: person"), "LOC": _("LOC: location"), "ORG": _("ORG: organisation"),
             "O": _("O: outside any entity")}
    handles = [Patch(facecolor=TYPE_COLOURS[kind], edgecolor="#555555", label=names[kind])
               for kind in (*ENTITY_TYPES, "O")]
    handles.append(Patch(facecolor=_paler(TYPE_COLOURS["O"]), edgecolor="#999999", linestyle="--",
                         label=_("a word's later piece: the tag is read from its first piece")))
    ax_tok.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8,
                  frameon=False)
    probs = np.asarray(data["probs"], dtype=float)
    draw_heatmap(ax, torch.from_numpy(probs.T.copy()), list(data["tags"]), list(pieces), vmax=1.0,
                 fontsize=8 if len(pieces) <= 40 else 6, rotation=90, xlabel=_("word pieces"), ylabel=_("tag"),
                 title=_("probability of each tag at each piece (outlined: the tag a word takes, "
                         "read at its first piece)"), title_size=10, colorbar=0.9)
    ax.set_aspect("auto")
    for i, label in enumerate(ax.get_xticklabels()):
        if not first[i]:
            label.set_color("0.55")
            label.set_fontstyle("italic")
    for i in range(len(pieces)):
        if first[i]:
            k = int(probs[i].argmax())
            ax.add_patch(Rectangle((i - 0.5, k - 0.5), 1, 1, fill=False, edgecolor=OUTLINE_COLOUR, linewidth=1.6))
    fig.tight_layout()
    return fig


class TagExplorer(FigureWidget):
    """A sentence box and a menu of ``examples`` (sentences) -> the pieces coloured by their
    words' predicted entity types, and the probability of each tag at each piece.

    Choosing an example copies it into the box; editing the box leaves the example. ``state``
    holds :func:`tag_data`'s keys plus ``text`` and ``example`` (the index into ``examples``,
    or :data:`TYPE_YOUR_OWN`).
    """

    def __init__(self, model: TokenTagger, tokenizer, examples: Sequence[str],
                 text: str = "Angela Merkel met Emmanuel Macron in Brussels ."):
        _check_tagger(model, tokenizer)
        check_str_list("examples", examples, what="example sentences (str)")
        check_instance("text", text, str)
        self.model, self.tokenizer, self.examples = model, tokenizer, list(examples)
        style, wide = {"description_width": "90px"}, W.Layout(width="680px")
        options = [(_("(type your own sentence below)"), TYPE_YOUR_OWN)]
        for i, sentence in enumerate(self.examples):
            short = sentence if len(sentence) <= 70 else sentence[:67] + "..."
            options.append((f"{i + 1}. {short}", i))
        self.example = W.Dropdown(options=options, value=TYPE_YOUR_OWN, description=_("examples"), style=style,
                                  layout=wide)
        self.text = W.Text(value=text, description=_("sentence"), continuous_update=False, style=style,
                           layout=wide)
        self.info = W.HTML()
        super().__init__([self.example, self.text])
        self.widget = W.VBox([self.example, self.text, self.info, self.output])

    def link(self, change) -> None:
        if change["owner"] is self.example and self.example.value != TYPE_YOUR_OWN:
            self.text.value = self.examples[self.example.value]
        elif change["owner"] is self.text and self.example.value != TYPE_YOUR_OWN \
                and self.text.value != self.examples[self.example.value]:
            self.example.value = TYPE_YOUR_OWN      # the box no longer holds the chosen example

    def compute(self) -> dict:
        data = tag_data(self.model, self.tokenizer, self.text.value)
        data.update(text=self.text.value, example=self.example.value)
        return data

    def draw(self, state: dict) -> Figure:
        return draw_tags(state)

    def update(self) -> None:
        super().update()
        self.info.value = f"<b>{html.escape(self.state['message'])}</b>"

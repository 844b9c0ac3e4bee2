"""Chapter 12 widget: the answer-span explorer.

Pick a question on a paragraph (or type your own) and see where the span head puts the answer.
The model reads ``[CLS] question [SEP] part of the paragraph [SEP]``: a paragraph longer than
one window is cut into overlapping windows (:func:`~bertcourse.answer_spans.make_windows`), and
the head gives every position of a window two logits, "the answer starts here" and "it ends
here". The figure shows one window: its word pieces along the x axis, each piece's start
probability as a bar up and its end probability as a bar down (each head's softmax over the
window's positions, the distributions :func:`~bertcourse.task_heads.span_loss` trains), the
chosen span shaded, and ``[CLS]``, the question and ``[SEP]`` in grey: they are positions of
the window and take probability, but the decoder never answers with them. Under the bars: the
answer, a line on the two heads taken alone, and the window's best few spans with their scores.

The two heads are separate softmaxes, so the most probable start and the most probable end,
each taken on its own (the triangles), need not make a span: the end may come before the
start, one of them may sit on the question or on ``[CLS]`` (where training points a window that
does not hold the answer), or the span may be longer than ``max_answer_len``. That is why the
answer is not the two argmaxes but the best *valid* pair, scored start logit + end logit
(BERT's rule, :func:`~bertcourse.answer_spans.best_span`), and the best over all the windows
(:func:`~bertcourse.answer_spans.best_answer`): the answer
:func:`~bertcourse.task_heads.predict_answers` gives for the same question. The line on the
heads taken alone says which case the window is in.

Pure function (tested directly): :func:`span_data`. Draw function: :func:`draw_spans`. Widget:
:class:`SpanExplorer`.
"""
from __future__ import annotations

import html
import textwrap
import unicodedata

import ipywidgets as W
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from .._checks import (check_instance, check_int, check_keys, check_length, check_list_of, check_positive_int,
                       check_text, check_tokenizer_fits)
from ..answer_spans import Window, best_answer, best_spans, collate_windows, make_windows, span_text
from ..i18n import gettext as _
from ..reviews import special_ids
from ..task_heads import SpanPredictor
from ..training import evaluation_batches
from ..wordpiece import hf_tokenizer
from . import FigureWidget
from .drawing import draw_message

__all__ = ["TYPE_YOUR_OWN", "span_data", "draw_spans", "SpanExplorer"]

TYPE_YOUR_OWN = -1          # the example control's value for "the boxes hold my own question and paragraph"
START_COLOUR, END_COLOUR = "#3182bd", "#e6550d"      # the bars of the start head (up) and the end head (down)
ALONE_COLOURS = ("#08306b", "#7f2704")               # the triangles: each head's most probable piece
NEVER_COLOUR = "#c8c8c8"    # [CLS], the question and [SEP]: positions the decoder never answers with
SPAN_COLOUR = "#fdd835"     # the shaded span
ROW_PIECES = 48             # pieces per row of bars: a window of 128 positions takes three rows
BATCH_SIZE = 64             # windows per forward pass, as predict_answers batches them
MAX_QUESTION_LEN = 64       # make_windows' max_question_len (BERT's max_query_length)
KEYS = ("question", "context", "windows", "start_logits", "end_logits", "start_probs", "end_probs", "answer",
        "candidates", "alone", "notes", "message")


def _check_settings(model, tokenizer, max_len, stride, max_answer_len, top, max_question_len) -> None:
    check_instance("model", model, SpanPredictor, "see build_span_predictor(); fine-tune it on questions")
    check_tokenizer_fits(tokenizer, model)
    check_positive_int("max_len", max_len)
    if max_len > model.config.max_len:
        raise ValueError(f"max_len must be at most the model's max_len={model.config.max_len} (a window of more "
                         f"pieces has positions the model has no embedding for), got {max_len}")
    check_positive_int("stride", stride, allow_zero=True)
    check_positive_int("max_answer_len", max_answer_len)
    check_positive_int("top", top)
    check_positive_int("max_question_len", max_question_len)


def _check_examples(examples) -> None:
    check_list_of("examples", examples, (tuple, list), "(question, context) pairs of strings", allow_empty=True)
    for i, pair in enumerate(examples):
        check_length(f"examples[{i}]", pair, 2, "(question, context)")
        check_text(f"examples[{i}][0] (the question)", pair[0])
        check_text(f"examples[{i}][1] (the context)", pair[1])


def _ranked_spans(start: np.ndarray, end: np.ndarray, window: Window, context: str, max_answer_len: int,
                  top: int) -> list:
    """The ``top`` best valid spans of ``window`` (:func:`~bertcourse.answer_spans.best_spans`, the
    rule of ``best_span``, so the first is the span it picks) with their texts:
    ``(start, end, score, text)``, best first."""
    return [(i, j, score, span_text(window, context, i, j))
            for i, j, score in best_spans(torch.from_numpy(start), torch.from_numpy(end), window, max_answer_len,
                                          top=top)]      # best_answer's n_best too: the default


def _note(window: Window, alone: tuple, max_answer_len: int) -> str:
    """What the two heads say taken alone, in one sentence: why their argmaxes are (or are not)
    the window's best span."""
    i, j = alone
    context = window.context_positions
    if i == 0 and j == 0:
        reason = _("both are [CLS], the label of a window that does not hold the answer; the decoder still "
                   "picks the best span of the paragraph's pieces")
    elif i not in context or j not in context:
        reason = _("they are not both pieces of the paragraph (the question, [CLS] and [SEP] are never an "
                   "answer), so the decoder picks the best pair of paragraph pieces instead")
    elif j < i:
        reason = _("the end comes before the start, so they make no span: the decoder picks the best pair "
                   "with start ≤ end instead")
    elif j - i + 1 > max_answer_len:
        reason = _("a span of {n} pieces, longer than max_answer_len={max_answer_len}, so the decoder picks the "
                   "best shorter pair instead").format(n=j - i + 1, max_answer_len=max_answer_len)
    else:
        reason = _("together they make this window's best span")
    where = _('"{piece}" (position {position})')
    return _("Taken alone, the most probable start is {start} and the most probable end is {end}: {reason}.").format(
        start=where.format(piece=window.pieces[i], position=i), end=where.format(piece=window.pieces[j], position=j),
        reason=reason)


def span_data(model: SpanPredictor, tokenizer, question: str, context: str, max_len: int = 128, stride: int = 32,
              max_answer_len: int = 30, top: int = 5, max_question_len: int = MAX_QUESTION_LEN) -> dict:
    """What the widget shows for ``question`` on ``context``.

    ``question``, ``context``; ``windows``: :func:`~bertcourse.answer_spans.make_windows`'
    windows (``max_len``, ``stride``, ``max_question_len``); per window (lists, one entry per
    window, each a float array over the window's positions): ``start_logits``, ``end_logits``
    (the model's, computed in eval mode without gradients, the windows batched as
    :func:`~bertcourse.task_heads.predict_answers` batches them; the model's mode is given back)
    and ``start_probs``, ``end_probs`` (each head's softmax over all the window's positions,
    ``[CLS]`` and the question included: what :func:`~bertcourse.task_heads.span_loss`'s
    cross-entropies read for an unpadded window); ``answer``: the
    :class:`~bertcourse.answer_spans.Prediction` of
    :func:`~bertcourse.answer_spans.best_answer` over all the windows (text, window, start,
    end, score); ``candidates``: per window, its ``top`` best valid spans ``(start, end, score,
    text)``, best first (valid: both context pieces, ``start <= end``, at most
    ``max_answer_len`` pieces; ranked by ``best_span``'s rule, so that the answer's window's
    first candidate is the answer); ``alone``: per window, ``(start, end)``, the position of
    the highest start probability and that of the highest end probability, each taken on its
    own; ``notes``: per window, a sentence saying whether those two make a span (the end may
    come before the start, or sit on the question); ``message``: a line giving the answer."""
    _check_settings(model, tokenizer, max_len, stride, max_answer_len, top, max_question_len)
    check_text("question", question)
    check_text("context", context)
    windows = make_windows(tokenizer, question, context, max_len, stride, max_question_len)
    pad_id = special_ids(tokenizer)["[PAD]"]
    examples = [(torch.tensor(w.ids), torch.tensor(w.segments), 0, 0) for w in windows]
    batches = [collate_windows(examples[k:k + BATCH_SIZE], pad_id=pad_id) for k in range(0, len(examples), BATCH_SIZE)]
    starts, ends = [], []
    for batch in evaluation_batches(model, batches):
        start, end = model(batch["tokens"], segments=batch["segments"], valid_lens=batch["mask"])
        for r in range(len(start)):
            n = int(batch["mask"][r].sum())
            starts.append(start[r, :n].float().cpu())
            ends.append(end[r, :n].float().cpu())
    # the float32 logits, exactly as predict_answers hands them to best_answer: the same answer
    answer = best_answer(windows, starts, ends, context, max_answer_len=max_answer_len)
    start_logits = [s.double().numpy() for s in starts]
    end_logits = [e.double().numpy() for e in ends]
    start_probs = [torch.softmax(s.double(), 0).numpy() for s in starts]
    end_probs = [torch.softmax(e.double(), 0).numpy() for e in ends]
    alone = [(int(ps.argmax()), int(pe.argmax())) for ps, pe in zip(start_probs, end_probs)]
    message = _('answer: "{text}" (window {window} of {n}, pieces {start}-{end}, score {score})').format(
        text=" ".join(answer.text.split()), window=answer.window + 1, n=len(windows), start=answer.start,
        end=answer.end, score=f"{answer.score:.2f}")
    return {"question": question, "context": context, "windows": windows, "start_logits": start_logits,
            "end_logits": end_logits, "start_probs": start_probs, "end_probs": end_probs, "answer": answer,
            "candidates": [_ranked_spans(s, e, w, context, max_answer_len, top)
                           for s, e, w in zip(start_logits, end_logits, windows)],
            "alone": alone, "notes": [_note(w, a, max_answer_len) for w, a in zip(windows, alone)],
            "message": message}


def _nothing(question: str, context: str, message: str) -> dict:
    """The widget's state while there is nothing to predict (a box is blank): ``message`` only."""
    data = dict.fromkeys(KEYS)
    data.update(question=question, context=context, message=message)
    return data


def _chars_in(text: str, width: int) -> int:
    """How many characters of ``text`` fill ``width`` Latin characters: a Chinese character is
    about two wide (the Chinese edition's notes, a paragraph typed in Chinese)."""
    wide = sum(unicodedata.east_asian_width(c) in "WF" for c in text)
    return max(1, width * len(text) // (len(text) + wide)) if text else width


def _short(text: str, width: int = 70) -> str:
    """``text`` on one line (a paragraph typed in the box may hold line breaks), cut to ``width``."""
    text = " ".join(text.split())
    n = _chars_in(text, width)
    return text if len(text) <= n else text[:n - 1] + "…"


def _wrap(text: str, width: int) -> str:
    """``text`` in lines of about ``width`` Latin characters."""
    return textwrap.fill(text, _chars_in(text, width))


def draw_spans(data: dict, window: int | None = None) -> Figure:
    """Window ``window`` (an index into ``data["windows"]``; None: the one the answer comes
    from) of :func:`span_data`'s ``data``.

    One axes per row of at most ``ROW_PIECES`` pieces (``fig.axes[:-1]``, the window's
    positions in order, wrapped): the start probabilities as bars up (``containers[0]``) and
    the end probabilities as bars down (``containers[1]``, heights ``-p``), blue and orange on
    the paragraph's pieces and grey on ``[CLS]``, the question and ``[SEP]`` (their labels grey
    and italic too: never part of an answer); the window's best span shaded (the answer in the
    answer's window; a patch with gid ``"span"``); a triangle (gids ``"alone start"``, ``"alone
    end"``) over the most probable start and under the most probable end, each taken alone;
    position numbers every 10 pieces on top. Last axes (``fig.axes[-1]``, texts only): the
    answer, the window's note on the two heads taken alone, and its candidates (rank, pieces,
    score, text; the answer in bold)."""
    check_keys("data", data, KEYS, "span_data()")
    windows = data["windows"]
    if windows is None:
        return draw_message(data["message"])
    answer = data["answer"]
    if window is None:
        window = answer.window
    check_int("window", window, low=0, high=len(windows) - 1)
    win = windows[window]
    pieces, n = list(win.pieces), len(win)
    ps = np.asarray(data["start_probs"][window], dtype=float)
    pe = np.asarray(data["end_probs"][window], dtype=float)
    in_context = np.zeros(n, dtype=bool)
    in_context[win.context_start:n - 1] = True
    candidates = data["candidates"][window]
    is_answer = window == answer.window
    shaded = candidates[0][:2]       # in the answer's window: the answer (best_span's pick, as candidates rank)
    alone_start, alone_end = data["alone"][window]
    message = _wrap(data["message"], 140)
    note = _wrap(data["notes"][window], 150)
    lines = 3 + message.count("\n") + note.count("\n") + len(candidates)
    # rows of equal length: 128 positions make rows of 43, not 48 + 48 + 32
    rows = -(-n // ROW_PIECES)
    per_row = -(-n // rows)
    fig = Figure(figsize=(11, 2.3 * rows + 0.24 * lines + 1.0))
    axes = fig.subplots(rows + 1, 1, squeeze=False,
                        gridspec_kw={"height_ratios": [2.3] * rows + [0.24 * lines]})[:, 0]
    top = 1.15 * max(ps.max(), pe.max())
    for r, ax in enumerate(axes[:-1]):
        a, b = r * per_row, min(n, (r + 1) * per_row)
        xs = np.arange(a, b)
        ctx = in_context[a:b]
        ax.bar(xs, ps[a:b], width=0.8, color=[START_COLOUR if c else NEVER_COLOUR for c in ctx])
        ax.bar(xs, -pe[a:b], width=0.8, color=[END_COLOUR if c else NEVER_COLOUR for c in ctx])
        ax.axhline(0, color="0.3", linewidth=0.6)
        if shaded[0] < b and shaded[1] >= a:
            ax.axvspan(max(shaded[0], a) - 0.5, min(shaded[1], b - 1) + 0.5, color=SPAN_COLOUR, alpha=0.5,
                       zorder=0, gid="span")
        if a <= alone_start < b:
            ax.plot([alone_start], [ps[alone_start] + 0.05 * top], marker="v", color=ALONE_COLOURS[0],
                    linestyle="none", markersize=7, gid="alone start")
        if a <= alone_end < b:
            ax.plot([alone_end], [-pe[alone_end] - 0.05 * top], marker="^", color=ALONE_COLOURS[1],
                    linestyle="none", markersize=7, gid="alone end")
        ax.set_xlim(a - 0.5, a + per_row - 0.5)
        ax.set_ylim(-top, top)
        ax.set_xticks(xs, pieces[a:b], rotation=90, fontsize=7)
        for k, label in zip(xs, ax.get_xticklabels()):
            if not in_context[k]:
                label.set_color("0.5")
                label.set_fontstyle("italic")
        # the bars down are end probabilities: positive numbers
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, pos: f"{abs(y):.2f}"))
        ax.tick_params(axis="y", labelsize=7)
        ax.set_ylabel(_("probability"), fontsize=8)
        numbers = ax.secondary_xaxis("top")
        numbers.set_xticks([k for k in xs if k % 10 == 0])
        numbers.tick_params(labelsize=6, length=2)
    axes[-2].set_xlabel(_("the window's word pieces (numbers on top: their positions)"), fontsize=8)
    handles = [Patch(facecolor=START_COLOUR, label=_("start probability (bars up)")),
               Patch(facecolor=END_COLOUR, label=_("end probability (bars down)")),
               Patch(facecolor=NEVER_COLOUR, label=_("[CLS], the question, [SEP]: never in an answer")),
               Patch(facecolor=SPAN_COLOUR, alpha=0.5,
                     label=_("the answer") if is_answer else _("this window's best span (another window's scores "
                                                               "higher)")),
               Line2D([], [], marker="v", linestyle="none", color=ALONE_COLOURS[0],
                      label=_("most probable start, taken alone")),
               Line2D([], [], marker="^", linestyle="none", color=ALONE_COLOURS[1],
                      label=_("most probable end, taken alone"))]
    axes[0].legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.12), ncol=3, fontsize=8,
                   frameon=False)
    fig.suptitle(_("window {k} of {n}: the probability that the answer starts (up) or ends (down) at each "
                   "piece").format(k=window + 1, n=len(windows)), fontsize=10)
    ax = axes[-1]
    ax.axis("off")

    def write(x, y, text, **style):
        # in axes coordinates, left out of tight_layout: a long line must not squeeze the bars
        ax.text(x, y, text, fontsize=8, va="center", transform=ax.transAxes, **style).set_in_layout(False)

    step = 1 / lines
    y = 1 - step * (0.5 + message.count("\n") / 2)
    write(0, y, message, fontweight="bold")
    y -= step * (1.5 + (message.count("\n") + note.count("\n")) / 2)
    write(0, y, note)
    y -= step * (1.5 + note.count("\n") / 2)
    columns = (0.0, 0.03, 0.12, 0.2)
    for x, title in zip(columns, ("#", _("pieces"), _("score"), _("text"))):
        write(x, y, title, color="0.35")
    for rank, (s, e, score, text) in enumerate(candidates, 1):
        y -= step
        bold = "bold" if is_answer and rank == 1 else "normal"
        for x, cell in zip(columns, (str(rank), f"{s}-{e}", f"{score:.2f}", _short(text, 110))):
            write(x, y, cell, fontweight=bold)
    fig.tight_layout()
    return fig


def _has_pieces(tokenizer, text: str) -> bool:
    """Whether ``text`` has a word piece (the normaliser drops zero-width and control characters)."""
    return sum(hf_tokenizer(tokenizer).encode(text, add_special_tokens=False).attention_mask) > 0


class SpanExplorer(FigureWidget):
    """A menu of ``examples`` (``(question, context)`` pairs), a question box and a paragraph
    box -> the start and end probabilities of every piece of a window, the answer shaded, and
    the window's best spans. With a paragraph of several windows, the window menu shows each
    (it opens on the one the answer comes from).

    Choosing an example copies it into the boxes; editing a box leaves the example; a new
    question or paragraph shows the answer's window again. ``state`` holds :func:`span_data`'s
    keys plus ``example`` (the index into ``examples``, or :data:`TYPE_YOUR_OWN`) and ``window``
    (the window drawn; None while a box is blank).

    ``max_len``, ``stride``, ``max_answer_len``: :func:`span_data`'s. A typed question is cut to
    at most 64 pieces, fewer where ``max_len`` needs it: each window keeps more than ``stride``
    pieces of the paragraph, whatever is typed.
    """

    def __init__(self, model: SpanPredictor, tokenizer, examples: list, max_len: int = 128, stride: int = 32,
                 max_answer_len: int = 30):
        _check_settings(model, tokenizer, max_len, stride, max_answer_len, 1, MAX_QUESTION_LEN)
        _check_examples(examples)
        # make_windows needs room for more than `stride` context pieces after the question, [CLS]
        # and two [SEP]: cut the question to what leaves it, so no typed question fails
        room = max_len - stride - 4
        if room < 1:
            raise ValueError(f"max_len={max_len} leaves no room for a question and more than stride={stride} "
                             f"paragraph pieces per window ([CLS] and two [SEP] included): max_len must be at "
                             f"least stride + 5 = {stride + 5}, or stride smaller")
        self.model, self.tokenizer, self.examples = model, tokenizer, [tuple(pair) for pair in examples]
        self.settings = {"max_len": max_len, "stride": stride, "max_answer_len": max_answer_len,
                         "max_question_len": min(MAX_QUESTION_LEN, room)}
        self._shown = None          # the window chosen in the menu; None: the answer's
        style, wide = {"description_width": "90px"}, W.Layout(width="680px")
        options = [(_("(type your own question and paragraph below)"), TYPE_YOUR_OWN)]
        for i, (question, _context) in enumerate(self.examples):
            options.append((f"{i + 1}. {_short(question)}", i))
        question, context = self.examples[0] if self.examples else ("", "")
        self.example = W.Dropdown(options=options, value=0 if self.examples else TYPE_YOUR_OWN,
                                  description=_("examples"), style=style, layout=wide)
        self.question = W.Text(value=question, description=_("question"), continuous_update=False, style=style,
                               layout=wide)
        self.context = W.Textarea(value=context, description=_("paragraph"), continuous_update=False, style=style,
                                  layout=W.Layout(width="680px", height="140px"))
        self.window = W.Dropdown(options=[(_("window {k} of {n}").format(k=1, n=1), 0)], value=0,
                                 description=_("window"), style=style, layout=W.Layout(width="380px"))
        self.info = W.HTML()
        super().__init__([self.example, self.question, self.context, self.window])
        self.widget = W.VBox([self.example, self.question, self.context, self.window, self.info, self.output])

    def link(self, change) -> None:
        owner = change["owner"]
        if owner is self.window:
            self._shown = self.window.value
            return
        self._shown = None                          # a new question or paragraph: the answer's window
        if owner is self.example:
            if self.example.value != TYPE_YOUR_OWN:
                self.question.value, self.context.value = self.examples[self.example.value]
        elif self.example.value != TYPE_YOUR_OWN \
                and (self.question.value, self.context.value) != self.examples[self.example.value]:
            self.example.value = TYPE_YOUR_OWN      # the boxes no longer hold the chosen example

    def compute(self) -> dict:
        question, context = self.question.value, self.context.value
        if not question.strip() or not context.strip():
            data = _nothing(question, context, _("type a question and a paragraph"))
        elif not _has_pieces(self.tokenizer, context):
            data = _nothing(question, context, _("the paragraph has no word pieces: the tokenizer drops all of "
                                                 "its characters"))
        else:
            data = span_data(self.model, self.tokenizer, question, context, **self.settings)
        shown = None
        if data["windows"] is not None:
            keep = self._shown is not None and self._shown < len(data["windows"])
            shown = self._shown if keep else data["answer"].window
        data.update(example=self.example.value, window=shown)
        return data

    def draw(self, state: dict) -> Figure:
        return draw_spans(state, state["window"])

    def update(self) -> None:
        super().update()
        self._list_windows()
        state = self.state
        note = "" if state["window"] is None else "<br>" + html.escape(state["notes"][state["window"]])
        if state["windows"]:
            # the paragraph's size: what a typed change to the paragraph always changes, even where the
            # window drawn (and so the figure) stays the same
            last = state["windows"][-1]
            pieces = last.first_piece + len(last) - 1 - last.context_start
            note += "<br>" + html.escape(_("the paragraph: {pieces} pieces, {n} windows").format(
                pieces=pieces, n=len(state["windows"])))
        self.info.value = f"<b>{html.escape(state['message'])}</b>{note}"

    def _list_windows(self) -> None:
        """The window menu: one entry per window of the paragraph, the one drawn selected;
        disabled with a single window (or none). Setting it here does not redraw."""
        windows = self.state["windows"]
        self._linking = True        # FigureWidget's guard: a change made here is not a learner's change
        try:
            self.window.disabled = windows is None or len(windows) == 1
            if windows is None:
                return
            n, answer = len(windows), self.state["answer"].window
            options = tuple(((_("window {k} of {n} (the answer's)") if k == answer else _("window {k} of {n}"))
                             .format(k=k + 1, n=n), k) for k in range(n))
            if tuple(self.window.options) != options:
                self.window.options = options
            self.window.value = self.state["window"]
        finally:
            self._linking = False

"""Chapter 4 widget: the BERT input explorer.

Type sentence A (and, optionally, sentence B) and see what BERT's encoder receives: the
WordPiece tokens of the course tokenizer wrapped as ``[CLS] A [SEP]`` or
``[CLS] A [SEP] B [SEP]``, their ids, their segment ids (0 for ``[CLS]``, A and the first
``[SEP]``; 1 for B and the last ``[SEP]``) and their positions — as a table whose columns
are coloured by segment — plus the shape of each of the three embeddings and of their sum
for a tiny :class:`~bertcourse.bert.BERTEncoder` configuration.

Pure functions compute what is shown (:func:`describe_input`, :func:`embedding_shapes`,
:func:`embedding_parts`); :func:`draw_input_table` and :func:`draw_embedding_sum` draw it;
:class:`InputExplorer` wires two text boxes to them.
"""
from __future__ import annotations

import ipywidgets as W
import matplotlib
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from .._checks import check_positive_int, check_tensor, shape_str
from ..bert import BERTConfig, BERTEncoder, get_config, get_tokens_and_segments
from ..data import SPECIAL_TOKENS, get_tokenizer, truncate_pair
from ..i18n import gettext as _, gettext_noop as N_
from . import FigureWidget
from .drawing import draw_message

EMPTY_TEXT = N_("Type sentence A (it is empty now); sentence B is optional.")

__all__ = ["EXAMPLE_A", "EXAMPLE_B", "SEGMENT_COLORS", "COLUMNS", "describe_input",
           "embedding_shapes", "embedding_parts", "draw_input_table", "draw_embedding_sum",
           "InputExplorer"]

EXAMPLE_A = "every morning she goes to the bank."
EXAMPLE_B = "gristfouka lives in a small town on the bank of a river."

SEGMENT_COLORS = ("#9ecae1", "#fdbe85")    # segment 0 (sentence A): blue, 1 (sentence B): orange
COLUMNS = 16                                # tokens per line of the table
ROWS = ("position", "token", "id", "segment")
ROW_LABELS = {"position": N_("position"), "token": N_("token"), "id": N_("id"), "segment": N_("segment")}


# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------

def _check_tokenizer(tokenizer) -> None:
    if not (hasattr(tokenizer, "tokenize") and hasattr(tokenizer, "vocab")):
        raise TypeError(f"tokenizer must be a WordPieceTokenizer (bertcourse.data.get_tokenizer()), "
                        f"got {type(tokenizer).__name__}")


def describe_input(tokenizer, text_a: str, text_b: str | None = None,
                   max_len: int | None = None) -> dict:
    """What BERT receives for one text or a text pair.

    ``text_a`` is WordPiece-tokenized with ``tokenizer`` (and so is ``text_b`` unless it is
    None or holds no token, which means a single text), then wrapped by
    :func:`bertcourse.bert.get_tokens_and_segments`. With ``max_len``, a pair is cut with
    :func:`bertcourse.data.truncate_pair` and a single text keeps its first
    ``max_len - 2`` tokens, so that the result has at most ``max_len`` tokens.

    Returns a dict with ``tokens``, ``segments``, ``positions`` (``0 .. n-1``) and ``ids``
    (four lists of length ``n``), plus ``tokens_a``, ``tokens_b`` (None for a single text)
    and ``num_truncated`` (how many WordPiece tokens were cut).
    """
    _check_tokenizer(tokenizer)
    if not isinstance(text_a, str):
        raise TypeError(f"text_a must be a str, got {type(text_a).__name__}")
    if text_b is not None and not isinstance(text_b, str):
        raise TypeError(f"text_b must be a str or None, got {type(text_b).__name__}")
    if max_len is not None:
        check_positive_int("max_len", max_len)
        if max_len < 3:
            raise ValueError(f"max_len must be >= 3 ([CLS], [SEP] and [SEP] take 3), got {max_len}")
    tokens_a = tokenizer.tokenize(text_a)
    if not tokens_a:
        raise ValueError(f"text_a must contain at least one token, got {text_a!r}")
    tokens_b = tokenizer.tokenize(text_b) if text_b is not None else []
    tokens_b = tokens_b or None                     # an empty sentence B means "single text"
    before = len(tokens_a) + len(tokens_b or [])
    if max_len is not None:
        if tokens_b is None:
            tokens_a = tokens_a[:max_len - 2]
        else:
            tokens_a, tokens_b = truncate_pair(tokens_a, tokens_b, max_len)
    tokens, segments = get_tokens_and_segments(tokens_a, tokens_b)
    return {"tokens": tokens, "segments": segments, "positions": list(range(len(tokens))),
            "ids": tokenizer.vocab.to_ids(tokens), "tokens_a": tokens_a, "tokens_b": tokens_b,
            "num_truncated": before - len(tokens_a) - len(tokens_b or [])}


def embedding_shapes(config: BERTConfig, seq_len: int, batch: int = 1) -> dict:
    """Shapes in :meth:`BERTEncoder.embed` for ``batch`` sequences of ``seq_len`` tokens.

    Returns ``{name: (table_shape, output_shape)}`` for ``token``, ``segment``,
    ``position`` (the first ``seq_len`` rows of the table, broadcast over the batch) and
    ``sum`` (token + segment + position, then layer norm; no table: ``None``).
    """
    if not isinstance(config, BERTConfig):
        raise TypeError(f"config must be a BERTConfig (bertcourse.bert.get_config), "
                        f"got {type(config).__name__}")
    check_positive_int("seq_len", seq_len)
    check_positive_int("batch", batch)
    if seq_len > config.max_len:
        raise ValueError(f"seq_len must be <= max_len={config.max_len} (the position table has "
                         f"{config.max_len} rows), got {seq_len}")
    h = config.num_hiddens
    return {"token": ((config.vocab_size, h), (batch, seq_len, h)),
            "segment": ((config.num_segments, h), (batch, seq_len, h)),
            "position": ((config.max_len, h), (seq_len, h)),
            "sum": (None, (batch, seq_len, h))}


def embedding_parts(encoder: BERTEncoder, tokens: torch.Tensor, segments: torch.Tensor) -> dict:
    """The three embeddings of one sequence, their sum and the normalised sum.

    ``tokens`` and ``segments``: ``(seq,)`` integer tensors. Returns ``(seq, num_hiddens)``
    tensors ``token``, ``segment``, ``position``, ``sum`` and ``normed`` (the layer norm of
    the sum, which is what :meth:`BERTEncoder.embed` returns in eval mode). No gradients.
    """
    if not isinstance(encoder, BERTEncoder):
        raise TypeError(f"encoder must be a BERTEncoder, got {type(encoder).__name__}")
    check_tensor("tokens", tokens, ndim=1, expected="(seq,)", floating=False)
    check_tensor("segments", segments, ndim=1, expected=f"{shape_str(tokens)} like tokens", floating=False)
    if segments.shape != tokens.shape:
        raise ValueError(f"segments must have the shape of tokens {shape_str(tokens)}, got shape "
                         f"{shape_str(segments)}")
    encoder.check_inputs(tokens[None], segments[None])      # ids and length in range
    n = tokens.shape[0]
    with torch.no_grad():
        parts = {"token": encoder.token_embedding(tokens),
                 "segment": encoder.segment_embedding(segments),
                 "position": encoder.pos_embedding.weight[:n]}
        parts["sum"] = parts["token"] + parts["segment"] + parts["position"]
        parts["normed"] = encoder.embedding_norm(parts["sum"])
    return {k: v.detach().clone() for k, v in parts.items()}


# ---------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------

def _check_description(desc: dict) -> int:
    if not isinstance(desc, dict) or not all(k in desc for k in ("tokens", "segments", "positions", "ids")):
        raise TypeError("desc must be the dict returned by describe_input (keys tokens, segments, "
                        "positions, ids)")
    n = len(desc["tokens"])
    if n == 0:
        raise ValueError("desc must hold at least one token, got none")
    lengths = {k: len(desc[k]) for k in ("segments", "positions", "ids")}
    if any(v != n for v in lengths.values()):
        raise ValueError(f"desc's lists must all have {n} entries like tokens, got {lengths}")
    return n


def _shape_text(shape) -> str:
    return str(tuple(shape))


def draw_input_table(desc: dict, shapes: dict | None = None, title: str = "") -> Figure:
    """The input as a table: one column per token (``COLUMNS`` per line), rows *position*,
    *token*, *id* and *segment*; every cell of a column has its segment's colour
    (``SEGMENT_COLORS``). Special tokens are bold, ``##`` pieces italic.

    ``shapes`` (from :func:`embedding_shapes`) adds one line per embedding below the table.
    Every cell's rectangle and text have the gid ``"<row>:<i>"`` (e.g. ``"token:3"``) and
    each shape line the gid ``"shape:<name>"``, so tests can find them.
    """
    n = _check_description(desc)
    lines = -(-n // COLUMNS)
    block = len(ROWS) + 0.6                       # rows of one line of the table + a gap
    table_h = 0.36 * block * lines
    shapes_h = 0.28 * (len(shapes) + 1) if shapes else 0.0
    fig = Figure(figsize=(12, table_h + shapes_h + 0.9))
    fig.subplots_adjust(left=0.01, right=0.99, top=1 - 0.55 / fig.get_figheight(),
                        bottom=(shapes_h + 0.15) / fig.get_figheight())
    ax = fig.add_subplot()
    ax.set_xlim(-1.7, COLUMNS + 0.05)
    ax.set_ylim(block * lines, -0.05)
    ax.axis("off")
    for line in range(lines):
        for r, row in enumerate(ROWS):
            ax.text(-0.1, line * block + r + 0.5, _(ROW_LABELS[row]), ha="right", va="center", fontsize=9,
                    color="0.3", gid=f"label:{row}:{line}")
    for i in range(n):
        line, c = divmod(i, COLUMNS)
        seg = desc["segments"][i]
        color = SEGMENT_COLORS[seg] if seg in (0, 1) else "0.85"
        token = desc["tokens"][i]
        values = {"position": str(desc["positions"][i]), "token": token, "id": str(desc["ids"][i]),
                  "segment": str(seg)}
        for r, row in enumerate(ROWS):
            y = line * block + r
            ax.add_patch(Rectangle((c + 0.03, y + 0.04), 0.94, 0.92, facecolor=color,
                                   edgecolor="white", linewidth=1, gid=f"{row}:{i}"))
            style = dict(fontsize=9, color="0.35")
            if row == "token":
                style = dict(fontsize=min(10.0, 75.0 / max(len(token), 1)), color="black",
                             fontweight="bold" if token in SPECIAL_TOKENS else "normal",
                             fontstyle="italic" if token.startswith("##") else "normal")
            ax.text(c + 0.5, y + 0.5, values[row], ha="center", va="center", gid=f"{row}:{i}",
                    **style)
    handles = [Patch(facecolor=SEGMENT_COLORS[0], label=_("segment 0: [CLS], sentence A, first [SEP]"))]
    if 1 in desc["segments"]:
        handles.append(Patch(facecolor=SEGMENT_COLORS[1], label=_("segment 1: sentence B, last [SEP]")))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, fontsize=9,
              frameon=False, borderaxespad=0.2)
    if title:
        ax.set_title(title, loc="right", fontsize=10)
    if shapes:
        # an explicit family gets no fallback: add the ones set_language("zh") registers (its CJK font)
        fallbacks = [f for f in matplotlib.rcParams["font.family"] if f not in ("sans-serif", "monospace")]
        names = {"token": _("token embedding"), "segment": _("segment embedding"),
                 "position": _("position embedding"), "sum": _("sum, layer norm")}
        for k, (name, (table, out)) in enumerate(shapes.items()):
            table_text = (_("table {shape}").format(shape=_shape_text(table)) if table is not None
                          else _("token + segment + position"))
            note = _("  (rows 0..n-1, broadcast over the batch)") if name == "position" else ""
            text = f"{names.get(name, name):19s} {table_text:27s} -> {_shape_text(out)}{note}"
            fig.text(0.02, (shapes_h - 0.28 * (k + 1) + 0.1) / fig.get_figheight(), text,
                     family=["monospace", *fallbacks], fontsize=9, gid=f"shape:{name}")
    return fig


def draw_embedding_sum(tokens: list, parts: dict) -> Figure:
    """Heatmaps of the token, segment and position embeddings of one sequence and their
    sum (and the layer-normed sum, if ``parts`` has ``normed``), stacked top to bottom:
    one row per token, one column per hidden unit.

    ``parts``: ``(seq, num_hiddens)`` tensors as returned by :func:`embedding_parts`.
    ``fig.axes[k].images[0]`` holds panel ``k``'s values. Each panel has its own colour
    scale (symmetric around 0), because the tables start at very different scales.
    """
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"tokens must be a list of str, got {type(tokens).__name__}")
    names = [k for k in ("token", "segment", "position", "sum", "normed") if k in parts]
    missing = {"token", "segment", "position", "sum"} - set(names)
    if missing:
        raise ValueError(f"parts must have the keys token, segment, position and sum, "
                         f"missing {sorted(missing)}")
    n = len(tokens)
    for k in names:
        check_tensor(f"parts[{k!r}]", parts[k], ndim=2, expected=f"(seq={n}, num_hiddens)", floating=True)
        if parts[k].shape[0] != n or parts[k].shape[1] != parts["token"].shape[1]:
            raise ValueError(f"parts[{k!r}] must have shape (seq={n}, num_hiddens="
                             f"{parts['token'].shape[1]}), got shape {shape_str(parts[k])}")
    titles = {"token": _("token embedding  (one row per token id: a repeated token repeats its row)"),
              "segment": _("+ segment embedding  (only two different rows: A and B)"),
              "position": _("+ position embedding  (a different row for every position)"),
              "sum": _("= their sum"),
              "normed": _("layer norm of the sum = BERTEncoder.embed(...)")}
    row_h = max(1.0, 0.11 * n + 0.5)
    height = row_h * len(names) + 0.5
    fig = Figure(figsize=(11, height))
    # fixed margins rather than tight_layout, which is slow with ten axes
    fig.subplots_adjust(left=0.08, right=0.93, top=1 - 0.3 / height, bottom=0.45 / height, hspace=0.4)
    axes = fig.subplots(len(names), 1, sharex=True)
    for ax, k in zip(axes, names):
        values = parts[k].detach().cpu().numpy()
        vmax = float(abs(values).max()) or 1.0
        im = ax.imshow(values, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto",
                       interpolation="nearest")
        ax.set_yticks(range(n), tokens, fontsize=7)
        ax.set_title(titles[k], fontsize=9, loc="left")
        fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
    axes[-1].set_xlabel(_("hidden unit"))
    return fig


# ---------------------------------------------------------------------------------------
# The widget
# ---------------------------------------------------------------------------------------

class InputExplorer(FigureWidget):
    """Two text boxes (sentence A, optional sentence B) -> the token table and the shapes.

    ``state`` keys: ``tokens``, ``segments``, ``positions``, ``ids`` (lists, empty when
    sentence A is empty), ``tokens_a``, ``tokens_b``, ``num_truncated``, ``shapes`` (from
    :func:`embedding_shapes`, or None) and ``message``.
    """

    def __init__(self, text_a: str = EXAMPLE_A, text_b: str = "", tokenizer=None,
                 config: BERTConfig | None = None):
        if tokenizer is None:
            tokenizer = get_tokenizer()
        _check_tokenizer(tokenizer)
        if config is None:
            config = get_config("tiny", vocab_size=len(tokenizer.vocab))
        if not isinstance(config, BERTConfig):
            raise TypeError(f"config must be a BERTConfig, got {type(config).__name__}")
        if config.vocab_size < len(tokenizer.vocab):
            raise ValueError(f"config.vocab_size must be >= the tokenizer's {len(tokenizer.vocab)} "
                             f"tokens, got {config.vocab_size}")
        self.tokenizer, self.config = tokenizer, config
        style = {"description_width": "90px"}
        wide = W.Layout(width="720px")
        self.text_a = W.Text(value=text_a, description=_("sentence A"), continuous_update=False,
                             style=style, layout=wide)
        self.text_b = W.Text(value=text_b, description=_("sentence B"), continuous_update=False,
                             placeholder=_("(optional: leave empty for a single text)"),
                             style=style, layout=wide)
        self.info = W.HTML()
        super().__init__([self.text_a, self.text_b])
        self.widget = W.VBox([self.text_a, self.text_b, self.info, self.output])

    def compute(self) -> dict:
        empty = {"tokens": [], "segments": [], "positions": [], "ids": [], "tokens_a": [],
                 "tokens_b": None, "num_truncated": 0, "shapes": None}
        if not self.tokenizer.tokenize(self.text_a.value):
            return {**empty, "message": _(EMPTY_TEXT)}
        state = describe_input(self.tokenizer, self.text_a.value, self.text_b.value,
                               max_len=self.config.max_len)
        n = len(state["tokens"])
        state["shapes"] = embedding_shapes(self.config, n)
        pieces = sum(t.startswith("##") for t in state["tokens"])
        if state["tokens_b"] is None:
            message = _("single text: [CLS] A [SEP] = {n} tokens, segment ids all 0").format(n=n)
        else:
            last_a = len(state["tokens_a"]) + 1          # the first [SEP]
            message = _("text pair: [CLS] A [SEP] B [SEP] = {n} tokens; segment 0 for positions 0..{last_a}, "
                        "segment 1 for {first_b}..{last}").format(n=n, last_a=last_a, first_b=last_a + 1, last=n - 1)
        message += (_("; {n} WordPiece continuation piece (##)") if pieces == 1 else
                    _("; {n} WordPiece continuation pieces (##)")).format(n=pieces)
        if state["num_truncated"]:
            message += _(". Too long for max_len={max_len}: {n} tokens were cut").format(
                max_len=self.config.max_len, n=state["num_truncated"])
        state["message"] = message + _(".")
        return state

    def draw(self, state: dict) -> Figure:
        if not state["tokens"]:
            return draw_message(_(EMPTY_TEXT))
        c = self.config
        return draw_input_table(state, state["shapes"],
                                title=_("tiny BERTEncoder: vocab {vocab}, hidden {hidden}, max_len {max_len}").format(
                                    vocab=c.vocab_size, hidden=c.num_hiddens, max_len=c.max_len))

    def update(self) -> None:
        super().update()
        self.info.value = f"<b>{self.state['message']}</b>"

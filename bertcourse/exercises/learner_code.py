"""The learner's function as the checker reads it: is it the untouched starter, and what did it raise?

:func:`is_stub` tells the starter (a body of ``...``, ``pass``, ``return None`` or ``raise
NotImplementedError(...)``) from real code by its bytecode. :func:`raised_message` turns an
exception the learner's code raised into the failed check's message; :func:`shape_message`
does it for a shape or dtype error (:func:`is_shape_error`) in the exercise's terms: the
arguments by name with their shapes and dtypes, and the shape the result must have.
:func:`own_assert` finds the line of a failed ``assert`` of the learner's own, which
:func:`error_note` quotes. :func:`raised_alike` decides whether a diagnosis that raises
made the learner's mistake.
"""
from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import linecache
import numbers
import pathlib
import re
from typing import Sequence

import torch

from ..i18n import gettext as _

__all__ = ["argument_names", "code_of", "describe_error", "error_note", "innermost_frame", "is_shape_error",
           "is_stub", "own_assert", "raised_alike", "raised_message", "shape_message"]

# A starter stub's whole body: `...`, `pass`, `return None`, a docstring, or
# `raise NotImplementedError(<text>)`; nothing that reads an argument or computes.
_STUB_OPS = {"RESUME", "NOP", "CACHE", "EXTENDED_ARG", "LOAD_CONST", "RETURN_VALUE", "RETURN_CONST",
             "LOAD_GLOBAL", "LOAD_NAME", "PUSH_NULL", "PRECALL", "CALL", "CALL_FUNCTION", "KW_NAMES",
             "RAISE_VARARGS", "POP_TOP", "COPY_FREE_VARS", "MAKE_CELL"}

# the words of torch's (and the package's) errors about shapes and dtypes that do not fit
# (a number too large for the dtype: "value cannot be converted to type c10::Half without overflow";
# ~ on a float tensor: "~ (operator.invert) is only implemented on integer and Boolean-type tensors")
_SHAPE_WORDS = re.compile(r"size|shape|dimension|dtype|scalar type|broadcast|out of bounds|not implemented for '"
                          r"|without overflow|only implemented on integer and Boolean|used as indices", re.IGNORECASE)

# where torch and this package live: an AssertionError raised there is not the learner's own assert
_LIBRARIES = tuple(pathlib.Path(path).resolve().parent for path in (torch.__file__, pathlib.Path(__file__).parent))


def code_of(answer):
    fn = answer
    while isinstance(fn, functools.partial):
        fn = fn.func
    with contextlib.suppress(ValueError):
        fn = inspect.unwrap(fn)
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    return code if inspect.iscode(code) else None


def is_stub(answer) -> bool:
    """Whether ``answer`` is an untouched starter: its body does nothing but ``...``,
    ``pass``, ``return None`` or ``raise NotImplementedError(...)``."""
    code = code_of(answer)
    if code is None:
        return False
    for ins in dis.get_instructions(code):
        if ins.opname not in _STUB_OPS:
            return False
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval != "NotImplementedError":
            return False
        if ins.opname in ("LOAD_CONST", "RETURN_CONST") and not (
                ins.argval is None or ins.argval is Ellipsis or isinstance(ins.argval, str)):
            return False
    return True


def innermost_frame(error: BaseException):
    tb = error.__traceback__
    if tb is None:
        return None, None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame, tb.tb_lineno


def own_assert(e: BaseException) -> tuple[int, str] | None:
    """``(line, source)`` of the learner's own ``assert`` statement that raised ``e``, or
    ``None`` when ``e`` is no AssertionError or was raised inside torch or this package.
    ``source`` is the line's text (empty when it cannot be read)."""
    if not isinstance(e, AssertionError):
        return None
    frame, line = innermost_frame(e)
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    with contextlib.suppress(OSError, ValueError):
        if any(pathlib.Path(filename).resolve().is_relative_to(root) for root in _LIBRARIES):
            return None
    return line, linecache.getline(filename, line, frame.f_globals).strip()


def describe_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def error_note(e: BaseException) -> str:
    """What to add to "your code raised ..." for the exceptions that need explaining."""
    if isinstance(e, SystemExit):
        return _(" (exit() and sys.exit() end the program; return the result instead)")
    if isinstance(e, NotImplementedError):
        frame, line = innermost_frame(e)
        place = _(" in `{name}` (line {line})").format(name=frame.f_code.co_name, line=line) if frame else ""
        return _(" — this is not the untouched starter: it was raised{place} while your code ran. "
                 "If it is a leftover `raise NotImplementedError` line, delete it; if a function "
                 "you call raised it, that operation is not available for these inputs.").format(place=place)
    if (mine := own_assert(e)) is not None:
        line, source = mine
        if source.startswith("assert"):
            return _(" — your own assert failed, on line {line}: `{source}` does not hold for this "
                     "input.").format(line=line, source=source)
        return _(" — raised by your own code, on line {line}.").format(line=line)
    return ""


def raised_message(where: str, e: BaseException) -> str:
    return _("on {where}, your code raised {error}{note}").format(where=where, error=describe_error(e), note=error_note(e))


def is_shape_error(e: BaseException) -> bool:
    """Whether ``e`` says that shapes or dtypes do not fit (a broadcast, an index, a view, a kernel)."""
    if isinstance(e, NotImplementedError):          # torch's "... not implemented for 'Long'" only
        return "not implemented for '" in str(e)
    return isinstance(e, (RuntimeError, IndexError, ValueError, TypeError)) and bool(_SHAPE_WORDS.search(str(e)))


def argument_names(functions: Sequence, n: int) -> list[str]:
    """The names of ``n`` positional arguments: the first function's signature that has them."""
    for function in functions:
        with contextlib.suppress(TypeError, ValueError):
            names = [p.name for p in inspect.signature(function).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(names) >= n:
                return names[:n]
    return [_("argument {i}").format(i=i + 1) for i in range(n)]


def _describe_value(name: str, value) -> str:
    if isinstance(value, torch.Tensor):
        return _("{name}: shape {shape}, {dtype}").format(
            name=name, shape=tuple(value.shape), dtype=str(value.dtype).removeprefix("torch."))
    if value is None or isinstance(value, (numbers.Number, str)):
        return f"{name} = {value!r:.40}"
    return f"{name}: {type(value).__name__}"


def shape_message(where: str, e: BaseException, names: list, args: tuple, expected=None) -> str:
    """A shape or dtype error in the exercise's terms: what the function got (``args`` by
    ``names``), what it must return (``expected``, the reference's result, when known)."""
    result = ""
    if isinstance(expected, torch.Tensor):
        result = (_(" It must return a single number, a tensor of shape (), {dtype}.") if expected.dim() == 0 else
                  _(" It must return a tensor of shape {shape}, {dtype}.")).format(
            shape=tuple(expected.shape), dtype=str(expected.dtype).removeprefix("torch."))
    return _("on {where}, the shapes or dtypes in your code do not fit together. Your function got {inputs}."
             "{result} (The error: {error})").format(
        where=where, inputs=_("; ").join(_describe_value(n, a) for n, a in zip(names, args)), result=result,
        error=describe_error(e))


# a size or a shape in parentheses, as torch names an operand's in a broadcast: "(2)", "(2, 3, 4)"
_SIZES = re.compile(r"\((\d+(?:, \d+)*)\)")


def _failing_operation(e: BaseException) -> str | None:
    """The name of the bytecode instruction that raised ``e`` in its innermost Python frame
    (``COMPARE_OP`` for ``<``, ``BINARY_OP`` for ``@`` or ``*``, ``BINARY_SUBSCR`` for an index,
    ``CALL`` for a call such as ``masked_fill``), or None when it cannot be found."""
    tb = e.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return next((ins.opname for ins in dis.get_instructions(tb.tb_frame.f_code) if ins.offset == tb.tb_lasti), None)


def raised_alike(a: BaseException, b: BaseException) -> bool:
    """The same kind of exception with the same message. The sizes torch names in parentheses
    may come in another order when the same operation raised both (``x < y`` and ``y > x``:
    torch names the operands' sizes in the order the code passed them); everything else keeps
    its order, a shape in brackets included (``[1, 2], [2, 3]`` is not ``[2, 1], [3, 2]``), and
    the same sizes raised by another operation (a comparison, ``masked_fill``) are another mistake."""
    if type(a) is not type(b):
        return False
    if str(a) == str(b):
        return True
    return (_SIZES.sub("()", str(a)) == _SIZES.sub("()", str(b))
            and sorted(_SIZES.findall(str(a))) == sorted(_SIZES.findall(str(b)))
            and _failing_operation(a) is not None and _failing_operation(a) == _failing_operation(b))

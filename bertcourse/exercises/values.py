"""Comparing a learner's plain values (numbers, strings, lists, tuples, dicts) without
trusting the answer's own ``__eq__``.

``got == expected`` asks ``got`` first: an object whose ``__eq__`` always says True (or a
subclass of ``int`` or ``str`` that does) would pass every case of a check. So ``got`` must
be a plain built-in value where a plain value is expected, and of the expected type
otherwise; only then is ``==`` asked.
"""
from __future__ import annotations

__all__ = ["is_plain", "plain_equal"]

_PLAIN = (bool, int, float, complex, str, bytes, type(None))


def is_plain(x) -> bool:
    """True for built-in values (exact types, not subclasses) and lists, tuples and dicts of them."""
    if type(x) in _PLAIN:
        return True
    if type(x) in (list, tuple):
        return all(is_plain(v) for v in x)
    if type(x) is dict:
        return all(is_plain(k) and is_plain(v) for k, v in x.items())
    return False


def plain_equal(got, expected) -> bool:
    """``got == expected`` for a plain ``got`` (see the module's docstring); False otherwise,
    and False when the comparison itself fails or does not give a bool."""
    if not (is_plain(got) if is_plain(expected) else type(got) is type(expected)):
        return False
    try:
        same = got == expected
        return same if isinstance(same, bool) else False
    except Exception:
        return False

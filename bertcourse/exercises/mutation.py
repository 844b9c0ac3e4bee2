"""Did a learner's answer change its arguments in place?

The checker gives every call fresh copies of its inputs and keeps pristine ones;
:func:`changed_arguments` compares the two after the call (tensors, modules — weights,
mode and settings, but not the attention weights a forward pass keeps for display — and
containers), and :func:`in_place_detail` turns the result into advice for the learner.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import numbers

import torch

from ..i18n import gettext as _, gettext_noop as N_

__all__ = ["changed_arguments", "in_place_detail"]


def _same(a, b, depth: int = 0) -> bool:
    """Deep equality of a pristine argument ``a`` and the copy ``b`` the answer was given."""
    if depth > 8:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype or b.is_meta:
            return False
        if torch.equal(a, b):
            return True
        if a.is_floating_point() or a.is_complex():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return False
    if isinstance(a, torch.nn.Module):
        return _same_module(a, b, depth)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (numbers.Number, str, bytes, type(None), range, frozenset, set)):
        return a == b
    if hasattr(a, "__dict__") and not callable(a):
        va, vb = vars(a), vars(b)
        return va.keys() == vb.keys() and all(_same(va[k], vb[k], depth + 1) for k in va)
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name), depth + 1) for f in dataclasses.fields(a))
    try:
        return bool(a == b)
    except Exception:
        return True


def _same_module(a: torch.nn.Module, b: torch.nn.Module, depth: int) -> bool:
    """Same layers, weights, buffers, train/eval modes and settings (a layer's eps, a
    config). What a forward pass records for looking at later (the course's attention
    keeps its last weights: a tensor, None before the first call) is not a change."""
    ma, mb = dict(a.named_modules()), dict(b.named_modules())
    if ma.keys() != mb.keys():
        return False
    for name, sub in ma.items():
        other = mb[name]
        if type(sub) is not type(other) or sub.training != other.training:
            return False
        after = vars(other)
        for k, v in vars(sub).items():
            if k.startswith("_") or v is None or isinstance(v, (torch.Tensor, torch.nn.Module)):
                continue
            if k not in after or not _same(v, after[k], depth + 1):
                return False
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(_same(sa[k], sb[k], depth + 1) for k in sa)


def _kind(x) -> str:
    if isinstance(x, torch.Tensor):
        return "tensor"
    if isinstance(x, torch.nn.Module):
        return "module"
    if isinstance(x, (list, dict, set)):
        return type(x).__name__
    if isinstance(x, tuple):
        return "tuple"
    return "object"


def _argument_names(answer, n: int) -> list:
    try:
        params = list(inspect.signature(answer).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(n):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(_("argument {i}").format(i=i + 1))
    return names


def changed_arguments(answer, pristine: tuple, given: tuple) -> list:
    changed = [i for i, (a, b) in enumerate(zip(pristine, given)) if not _same(a, b)]
    if not changed:
        return []
    names = _argument_names(answer, len(pristine))
    return [(names[i], _kind(pristine[i])) for i in changed]


# marked here, translated when the message is built (N_: see bertcourse.i18n)
_ADVICE = {
    "tensor": N_("Compute new tensors instead of changing the ones you are given: masked_fill instead "
                 "of masked_fill_, x = x * s instead of x *= s, or start from {name}.clone()."),
    "list": N_("Work on a copy (list({name})) instead of changing the list you are given."),
    "dict": N_("Work on a copy (dict({name})) instead of changing the dict you are given."),
    "set": N_("Work on a copy (set({name})) instead of changing the set you are given."),
    "module": N_("Use the module as it is: read its layers and weights, but do not change them, "
                 "replace them, or switch it with train() / eval()."),
    "tuple": N_("Something inside the tuple {name} changed: compute new values instead."),
    "object": N_("Read its attributes; do not assign to them."),
}
_KIND = {"tensor": N_("tensor"), "list": N_("list"), "dict": N_("dict"), "set": N_("set"),
         "module": N_("module"), "tuple": N_("tuple"), "object": N_("object")}


def _join(words: list) -> str:
    return words[0] if len(words) == 1 else _(", ").join(words[:-1]) + _(" and ") + words[-1]


def in_place_detail(changed: list) -> str:
    """"your code changed its argument `x` in place, ...", with advice for each kind."""
    names = _join([f"`{name}`" for name, _ in changed])
    if len(changed) == 1:
        what = _("its argument {names} in place, so the caller's {kind} is no longer what it was").format(
            names=names, kind=_(_KIND[changed[0][1]]))
    else:
        what = _("its arguments {names} in place, so the caller's values are no longer what they were").format(names=names)
    first_of_kind: dict = {}
    for name, kind in changed:
        first_of_kind.setdefault(kind, name)
    advice = " ".join(_(_ADVICE[kind]).format(name=name) for kind, name in first_of_kind.items())
    return _("your code changed {what}. {advice}").format(what=what, advice=advice)

"""What an exercise asks the learner not to call ("without nn.LayerNorm", "don't call
truncate_pair"): while the learner's code runs, each forbidden function raises the check's
own failure, which names it.

A forbidden function is ``(owner, attribute, shown)``: the module or class that defines it,
the attribute's name there, and how the learner would write it (``"F.cross_entropy"``). The
learner's own names for it are refused too: a global of the notebook (``from
torch.nn.functional import cross_entropy``) or a name in the answer's closure. Everything is
put back afterwards. The checker's reference runs outside, and an answer that is the
package's own code (a reference, in the tests) is left alone: either may use the function.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterable, Sequence

__all__ = ["check_forbidden", "forbidding"]


def check_forbidden(forbidden) -> bool:
    """Whether ``forbidden`` is a list of ``(module or class, attribute it defines, shown)``."""
    return isinstance(forbidden, Sequence) and all(
        isinstance(f, tuple) and len(f) == 3 and isinstance(f[1], str) and isinstance(f[2], str)
        and f[1] in getattr(f[0], "__dict__", {}) for f in forbidden)


@contextlib.contextmanager
def forbidding(forbidden: Sequence[tuple], functions: Iterable[Callable], refusal: Callable[[str], Exception]):
    """While the block runs, calling a function of ``forbidden`` raises ``refusal(shown)``.
    ``functions`` are the learner's (the answer and, when a checker wrapped it, the original):
    their globals and closures are searched for the learner's own names of the function."""
    functions = list(functions)
    if not forbidden or all((getattr(f, "__module__", None) or "").startswith("bertcourse.") for f in functions):
        yield                                  # the package's own code may use the package
        return
    name_spaces = [vars(sys.modules["__main__"])] + [f.__globals__ for f in functions if hasattr(f, "__globals__")]
    cells = [c for f in functions for c in (getattr(f, "__closure__", None) or ())]
    undo = []                                  # functions that put things back, in reverse order
    try:
        for owner, attribute, shown in forbidden:
            original = owner.__dict__[attribute]

            def refuse(*args, _shown=shown, **kwargs):
                raise refusal(_shown)
            setattr(owner, attribute, refuse)
            undo.append(lambda owner=owner, attribute=attribute, original=original:
                        setattr(owner, attribute, original))
            for space in name_spaces:
                for name, value in list(space.items()):
                    if value is original:
                        space[name] = refuse
                        undo.append(lambda space=space, name=name, original=original:
                                    space.__setitem__(name, original))
            for cell in cells:
                with contextlib.suppress(ValueError):          # an empty cell
                    if cell.cell_contents is original:
                        cell.cell_contents = refuse
                        undo.append(lambda cell=cell, original=original: setattr(cell, "cell_contents", original))
        yield
    finally:
        for put_back in reversed(undo):
            put_back()

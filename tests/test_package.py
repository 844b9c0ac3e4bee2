"""The package's shape: imports run one way, no module reaches into another's private names,
and no module grows into a grab bag.

Layers: the core modules (``bertcourse/*.py``) import only each other; ``exercises`` import
the core (and their own ``core``); ``widgets`` import the core and the shared drawing helpers
(``widgets/__init__.py`` and ``widgets/drawing.py``), never a sibling widget.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "bertcourse"
MODULES = sorted(p for p in PACKAGE.rglob("*.py"))
SHARED_WIDGET_MODULES = {"widgets", "widgets.drawing"}      # the package itself and its helpers


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)            # "" for bertcourse/__init__.py, "widgets.nsp", "pretrain"


def imports_of(path: pathlib.Path, source: str | None = None):
    """``(imported module relative to bertcourse, [names])`` for every import of bertcourse code
    in the module at ``path`` (or in ``source``, read as if it were that module)."""
    name = module_name(path)
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".") if name else []
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if source is None else source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "bertcourse" or node.module.startswith("bertcourse.")):
                target = node.module[len("bertcourse."):] if node.module != "bertcourse" else ""
            else:
                continue
            for n in (a.name for a in node.names):       # "from . import drawing" names a module
                sub = PACKAGE.joinpath(*filter(None, target.split(".")), n)
                if sub.with_suffix(".py").is_file() or sub.is_dir():
                    out.append((".".join(filter(None, [target, n])), []))
                else:
                    out.append((target, [n]))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("bertcourse."):
                    out.append((a.name[len("bertcourse."):], []))
    return out


def layer(module: str) -> str:
    top = module.split(".")[0]
    return top if top in ("widgets", "exercises") else "core"


def test_the_package_has_the_modules_this_test_reads():
    names = {module_name(p) for p in MODULES}
    assert {"attention", "bert", "training", "pretrain", "widgets", "widgets.drawing", "exercises.core"} <= names


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) or "__init__" for p in MODULES])
def test_imports_run_one_way(path):
    me = module_name(path)
    for target, names in imports_of(path):
        if layer(me) == "core":
            assert layer(target) == "core", f"core module {me} imports {target}: core never imports widgets or exercises"
        elif layer(me) == "exercises":
            assert layer(target) != "widgets", f"{me} imports {target}: exercises import the core only"
        else:   # a widget
            assert layer(target) != "exercises", f"{me} imports {target}"
            if layer(target) == "widgets" and me not in SHARED_WIDGET_MODULES:
                assert target in SHARED_WIDGET_MODULES, (
                    f"{me} imports the sibling widget {target}: move what it needs to the core or to "
                    "widgets/drawing.py")


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) or "__init__" for p in MODULES])
def test_no_private_names_across_modules(path):
    me = module_name(path)
    for target, names in imports_of(path):
        if target == me:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{me} imports private name(s) {private} from {target or 'bertcourse'}: make them public or move them"


def test_the_checker_catches_what_it_should():
    """The rules above are not vacuous: a core module importing a widget, an exercise importing
    a widget and a private import across modules are all seen."""
    fake = PACKAGE / "fake_core_module.py"
    found = imports_of(fake, "from .widgets.nsp import draw_pair\nfrom .transformer import _cached_attention\n")
    assert found == [("widgets.nsp", ["draw_pair"]), ("transformer", ["_cached_attention"])]
    assert layer(module_name(fake)) == "core" and layer("widgets.nsp") == "widgets"
    found = imports_of(PACKAGE / "exercises" / "ch99.py", "from ..widgets import drawing\nfrom .core import Exercise\n")
    assert found == [("widgets.drawing", []), ("exercises.core", ["Exercise"])]


def test_modules_stay_small():
    sizes = {module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES}
    assert sizes["pretrain"] <= 450, f"pretrain.py has {sizes['pretrain']} lines; chapter 7 reads it"
    too_big = {m: n for m, n in sizes.items() if n > 700 and m != "corpus"}
    assert not too_big, f"modules over 700 lines (split them by job): {too_big}"

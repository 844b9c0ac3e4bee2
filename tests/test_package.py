"""The package's shape: imports run one way through the layers that CONTRIBUTING.md declares,
there is no import cycle, no module reaches into another's private names, no module grows into a
grab bag, no function hides an import of the course's own code, and only a layer's own methods
read its sub-layers' parameters (attention's ``W_q``, the block's ``ffn``, ...).

The layer table is read from CONTRIBUTING.md ("Layers: imports run one way"), so the rule is
written once. Every import of bertcourse code counts, at the top of a module or inside a function.
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
    return ".".join(parts)            # "" for bertcourse/__init__.py, "widgets.nsp", "pretrain.__main__"


def imports_of(path: pathlib.Path, source: str | None = None):
    """``(imported module relative to bertcourse, [names])`` for every import of bertcourse code
    in the module at ``path`` (or in ``source``, read as if it were that module), wherever it
    stands: at the top or inside a function."""
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


# --- the layers, from CONTRIBUTING.md ------------------------------------------------------

def read_layers(text: str | None = None) -> list[tuple[str, list[str]]]:
    """``[(layer, [module patterns])]`` in build order, from CONTRIBUTING.md's layer table."""
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8") if text is None else text
    section = text.split("## Layers: imports run one way", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    return [(row.split("|")[1].strip(), [m.strip().strip("`") for m in row.split("|")[2].split(",")])
            for row in rows]


LAYERS = read_layers()


def layer_of(module: str, layers=None) -> int:
    """The row of ``module``'s layer (0 = foundations); the package's ``__init__`` is a
    foundation, a package's parts (``pretrain.x``) share its layer unless listed."""
    layers = LAYERS if layers is None else layers
    if module == "":
        return 0
    for i, (_, patterns) in enumerate(layers):
        for p in patterns:
            if module == p or (p.endswith(".*") and module.startswith(p[:-1])):
                return i
    top = module.split(".")[0]
    if top != module and not module.endswith("__main__"):
        return layer_of(top, layers)
    raise KeyError(module)


def layer_violations(me: str, imports, layers=None) -> list[str]:
    """The imports of ``me`` that reach a layer below its own (a later row of the table)."""
    layers = LAYERS if layers is None else layers
    mine = layer_of(me, layers)
    return [f"{me} ({layers[mine][0]}) imports {target} ({layers[layer_of(target, layers)][0]}), a layer "
            f"below it: move the shared code up, or {me} down" for target, _ in imports
            if target != me and layer_of(target, layers) > mine]


def find_cycle(graph: dict) -> list[str] | None:
    """One import cycle of ``graph`` (module -> set of modules it imports), or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def import_graph() -> dict:
    """module -> the course modules it imports (a package's own ``__init__`` excluded: importing
    ``bertcourse.x`` runs ``bertcourse/__init__.py`` first, which imports nothing)."""
    return {module_name(p): {t for t, _ in imports_of(p) if t and t != module_name(p)} for p in MODULES}


# Third-party packages that may be imported inside a function: measured heavy (at least 20 MB
# or 0.5 s for a notebook, benchmarks/import_costs.py) or optional extras. Each such line says
# "# lazy: ..." why.
LAZY_OK = {"pandas", "matplotlib", "transformers", "datasets"}


def function_level_imports(path: pathlib.Path, source: str | None = None) -> list[tuple[int, str, str]]:
    """``(line, top-level package or "bertcourse", source line)`` of every import inside a function."""
    text = path.read_text(encoding="utf-8") if source is None else source
    lines = text.splitlines()
    out = set()
    for fn in ast.walk(ast.parse(text)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom):
                    own = node.level or (node.module or "").split(".")[0] == "bertcourse"
                    top = "bertcourse" if own else node.module.split(".")[0]
                elif isinstance(node, ast.Import):
                    top = node.names[0].name.split(".")[0]
                else:
                    continue
                out.add((node.lineno, top, lines[node.lineno - 1]))
    return sorted(out)


# --- the tests --------------------------------------------------------------------------------

def test_the_package_has_the_modules_this_test_reads():
    names = {module_name(p) for p in MODULES}
    assert {"attention", "bert", "training", "pretrain", "widgets", "widgets.drawing", "exercises.core"} <= names


def test_every_module_has_a_layer_and_every_listed_module_exists():
    assert [name for name, _ in LAYERS][:3] == ["foundations", "model", "data"], LAYERS
    unplaced = []
    for p in MODULES:
        try:
            layer_of(module_name(p))
        except KeyError:
            unplaced.append(module_name(p))
    assert not unplaced, f"modules missing from CONTRIBUTING.md's layer table: {unplaced}"
    names = {module_name(p) for p in MODULES}
    listed = [p for _, patterns in LAYERS for p in patterns if not p.endswith(".*")]
    assert [p for p in listed if p not in names] == [], "the layer table names modules that do not exist"


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) or "__init__" for p in MODULES])
def test_imports_run_one_way(path):
    me = module_name(path)
    found = imports_of(path)
    assert layer_violations(me, found) == []
    if me.startswith("widgets") and me not in SHARED_WIDGET_MODULES:
        for target, _ in found:
            if target.startswith("widgets"):
                assert target in SHARED_WIDGET_MODULES, (
                    f"{me} imports the sibling widget {target}: move what it needs to the core or to "
                    "widgets/drawing.py")


def test_there_is_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) or "__init__" for p in MODULES])
def test_imports_inside_functions_are_only_lazy_heavy_packages(path):
    for line, top, text in function_level_imports(path):
        where = f"{module_name(path)}:{line}: {text.strip()}"
        assert top != "bertcourse", f"{where}: import the course's own modules at the top of the module"
        assert top in LAZY_OK, f"{where}: {top} is not heavy (benchmarks/import_costs.py): import it at the top"
        assert "# lazy:" in text, f"{where}: say why it is imported here ('# lazy: ...')"


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) or "__init__" for p in MODULES])
def test_no_private_names_across_modules(path):
    me = module_name(path)
    for target, names in imports_of(path):
        if target == me:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{me} imports private name(s) {private} from {target or 'bertcourse'}: make them public or move them"


# --- sub-layers' parameters ---------------------------------------------------------------------

EXEMPT_FROM_SUBLAYER_RULE = ("widgets", "exercises")   # they set weights by hand to teach


def sublayer_names() -> set[str]:
    """The attributes under which attention and the encoder and decoder blocks hold their parts
    with parameters (``W_q``, ..., ``addnorm1``, ``ffn``, ``dense1``, ``ln``), read from small
    instances of the model's classes, so that a renamed or new part is covered too."""
    from bertcourse.transformer import DecoderBlock, EncoderBlock
    names = set()
    for block in (EncoderBlock(8, 16, 2, 0.0), DecoderBlock(8, 16, 2, 0.0)):
        for module in block.modules():
            names |= {name for name, child in module.named_children() if any(True for _ in child.parameters())}
    # A block's attention also holds its attention maps, which the analysis reads
    # (analysis.attention_maps); its parameters are covered by W_q, W_k, W_v and W_o.
    return names - {"attention"}


def sublayer_reads(path: pathlib.Path, names: set[str], source: str | None = None) -> list[tuple[int, bool, str]]:
    """``(line, inside a class, expression)`` of every read of a ``names`` attribute of something
    other than ``self`` (``blk.ffn``, ``mha.W_q``) in the module at ``path`` (or in ``source``)."""
    found = []

    def visit(node, in_class: bool):
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.Attribute) and child.attr in names
                    and not (isinstance(child.value, ast.Name) and child.value.id == "self")):
                found.append((child.lineno, in_class, ast.unparse(child)))
            visit(child, in_class or isinstance(child, ast.ClassDef))
    visit(ast.parse(path.read_text(encoding="utf-8") if source is None else source), False)
    return found


def sublayer_rule_violations(me: str, reads) -> list[str]:
    """Reads of a sub-layer that the rule forbids in module ``me``: any outside the model layer,
    and the model layer's outside its classes (the layers' own methods may read them)."""
    if me.split(".")[0] in EXEMPT_FROM_SUBLAYER_RULE:
        return []
    model = LAYERS[layer_of(me)][0] == "model"
    return [f"{me}:{line}: {expr} reads a sub-layer's parameters outside the layer's own methods: "
            "make it a method of that layer" for line, in_class, expr in reads if not (model and in_class)]


def test_only_the_layers_own_methods_read_their_sub_layers():
    names = sublayer_names()
    assert {"W_q", "W_k", "W_v", "W_o", "addnorm1", "addnorm2", "ffn", "dense1", "dense2", "ln"} <= names
    violations = [v for p in MODULES for v in sublayer_rule_violations(module_name(p), sublayer_reads(p, names))]
    assert not violations, "\n".join(violations)


def test_the_sub_layer_rule_catches_a_free_function():
    names = sublayer_names()
    free = "def qkv(mha, x):\n    return mha.W_q(x), blk.ffn.dense1.weight\n"
    assert [expr for _, _, expr in sublayer_reads(PACKAGE / "fake.py", names, free)] == \
           ["mha.W_q", "blk.ffn.dense1", "blk.ffn"]
    assert len(sublayer_rule_violations("training", sublayer_reads(PACKAGE / "training.py", names, free))) == 3
    assert len(sublayer_rule_violations("transformer", sublayer_reads(PACKAGE / "transformer.py", names, free))) == 3
    method = "class Block:\n    def fused(self, x):\n        return self.ffn.dense1(x), other.W_o(x)\n"
    reads = sublayer_reads(PACKAGE / "transformer.py", names, method)
    assert [expr for _, _, expr in reads] == ["self.ffn.dense1", "other.W_o"]
    assert sublayer_rule_violations("transformer", reads) == []          # the model's own classes
    assert len(sublayer_rule_violations("finetune", reads)) == 2         # a task's class may not
    assert sublayer_rule_violations("widgets.attention", sublayer_reads(PACKAGE / "x.py", names, free)) == []


def test_the_rules_catch_a_wrong_import():
    """Not vacuous: the model importing the command line inside a function, a widget importing an
    exercise, a cycle, a module missing from the table, a light package imported in a function
    and a private name across modules are all caught."""
    bert = PACKAGE / "bert.py"
    wrong = "def f():\n    from .pretrain import pretrain\n    return pretrain\n"
    assert layer_violations("bert", imports_of(bert, wrong)) == [
        "bert (model) imports pretrain (tasks), a layer below it: move the shared code up, or bert down"]
    assert layer_violations("pretrain.__main__", imports_of(PACKAGE / "pretrain" / "__main__.py",
                                                             "from ..cli import run_cli\n")) == []
    assert layer_violations("widgets.nsp", imports_of(PACKAGE / "widgets" / "nsp.py", "from ..exercises import ch06\n"))
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    with pytest.raises(KeyError):
        layer_of("speedups")                       # a module nobody placed in the table
    table = "## Layers: imports run one way\n\n| layer | modules |\n|---|---|\n| base | `x` |\n| top | `y`, `z.*` |\n"
    assert read_layers(table) == [("base", ["x"]), ("top", ["y", "z.*"])]
    assert layer_of("z.w", read_layers(table)) == 1
    lazy = function_level_imports(bert, "def f():\n    import tokenizers\n    from .data import x\n")
    assert [top for _, top, _ in lazy] == ["tokenizers", "bertcourse"]
    found = imports_of(PACKAGE / "fake.py", "from .widgets.nsp import draw_pair\nfrom .transformer import _check_residual\n")
    assert found == [("widgets.nsp", ["draw_pair"]), ("transformer", ["_check_residual"])]
    found = imports_of(PACKAGE / "exercises" / "ch99.py", "from ..widgets import drawing\nfrom .core import Exercise\n")
    assert found == [("widgets.drawing", []), ("exercises.core", ["Exercise"])]


def test_modules_stay_small():
    sizes = {module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES}
    assert sizes["pretrain"] <= 450, f"pretrain has {sizes['pretrain']} lines; chapter 7 reads it"
    too_big = {m: n for m, n in sizes.items() if n > 700 and m != "corpus"}
    assert not too_big, f"modules over 700 lines (split them by job): {too_big}"


# --- one home per concept (CONTRIBUTING.md, "Where each concept lives") --------------------

ROOT = PACKAGE.parent
WHERE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split("## Where each concept lives", 1)[1]
WHERE = WHERE.split("\n## ", 1)[0]
INDEX, LOSS_TABLE = WHERE.split("**Losses and accuracies", 1)
LOSS_CALLS = {"cross_entropy", "CrossEntropyLoss", "nll_loss"}


def table_rows(text: str) -> list[list[str]]:
    """The cells of a markdown table's body rows (header and rule left out)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("|---")]
    return rows[1:]


def defined_names(path: pathlib.Path) -> set[str]:
    """Top-level functions, classes and assignments of a file, and ``Class.method``."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def module_file(module: str) -> pathlib.Path:
    """``"finetune"`` -> bertcourse/finetune/__init__.py, ``"bert"`` -> bertcourse/bert.py."""
    base = PACKAGE.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def loss_sites(module: str, source: str) -> list[str]:
    """``module.Function`` (or ``module.Class.method``) around every cross-entropy call in ``source``;
    a call inside a nested function counts for the function that holds it."""
    found = []

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = where if where and not isinstance(node, ast.ClassDef) else where + [child.name]
            if isinstance(child, ast.Call):
                func = child.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name in LOSS_CALLS:
                    found.append(".".join([module] + (where or ["<module>"])))
            visit(child, inner)

    visit(ast.parse(source), [])
    return found


def test_the_concept_index_names_files_functions_tests_and_chapters_that_exist():
    rows = table_rows(INDEX)
    assert len(rows) >= 50, f"the concept index has {len(rows)} rows"
    notebooks = ROOT / "notebooks"
    for concept, where, test, chapter in rows:
        path, name = (part.strip("`") for part in where.split("` `"))
        file = PACKAGE / path
        assert file.is_file(), f"{concept}: no file bertcourse/{path}"
        assert name in defined_names(file), f"{concept}: bertcourse/{path} defines no {name}"
        test_file, test_name = test.strip("`").split("::")
        assert (ROOT / "tests" / test_file).is_file(), f"{concept}: no tests/{test_file}"
        assert test_name in defined_names(ROOT / "tests" / test_file), f"{concept}: no {test_name} in tests/{test_file}"
        assert len(list(notebooks.glob(f"{chapter}_*.ipynb"))) == 1, f"{concept}: no chapter {chapter}"


def test_every_cross_entropy_sits_in_a_listed_loss_function():
    listed = {cells[0].strip("`") for cells in table_rows(LOSS_TABLE)}
    for entry in listed:                    # every listed function exists
        module, _, qualname = entry.partition(".")
        assert module_file(module).is_file() and qualname in defined_names(module_file(module)), \
            f"CONTRIBUTING.md lists {entry}, which does not exist"
    sites = [site for p in MODULES if not module_name(p).startswith("exercises")
             for site in loss_sites(module_name(p), p.read_text(encoding="utf-8"))]
    assert len(sites) >= 5, sites
    unlisted = sorted(set(sites) - listed)
    assert not unlisted, (f"cross-entropy computed outside the loss functions of CONTRIBUTING.md's list: "
                          f"{unlisted} (call the loss function of that head, or add a loss function to the list)")
    # not vacuous: a cross-entropy in another function, method or at module level is found
    fake = ("import torch.nn.functional as F\nclass Head:\n    def forward(self, x, y):\n"
            "        def inner():\n            return F.cross_entropy(x, y)\n        return inner()\n"
            "loss = F.nll_loss(1, 2)\n")
    assert loss_sites("finetune", fake) == ["finetune.Head.forward", "finetune.<module>"]

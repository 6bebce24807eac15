"""The house: dspsim's rooms (its subpackages and top modules) in layers, read from the imports themselves (every
``import`` statement, at module level or inside a function). No module imports one of a higher layer, none of a
room beside it in the same layer, and no chain of imports comes back to where it started (docs/design.md)."""
import ast
import pathlib

import pytest

import dspsim

PACKAGE = pathlib.Path(dspsim.__file__).parent

#: Lowest first. A room may import its own modules and any room of a lower layer; ``dspsim`` is the package's
#: facade (its ``__init__``: the public API), which the tools above it use.
LAYERS = (
    ("_errors", "_io", "_jit", "_bits", "dtypes", "oracle", "interpreters"),
    ("fixedpoint",),
    ("accumulator",),
    ("engines",),
    ("requant",),
    ("simd",),
    ("quantize",),
    ("qparams",),
    ("observers", "qtensor"),
    ("kernels", "dsp"),
    ("catalog",),
    ("graph",),
    ("tflite", "onnx"),
    ("load",),
    ("dspsim",),
    ("harness",),
    ("frontend",),
    ("bench",),
    ("cli", "__main__"),
)
LAYER = {room: k for k, rooms in enumerate(LAYERS) for room in rooms}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "dspsim"


def _imports(module: str, path: pathlib.Path) -> set:
    """The dspsim modules ``module`` imports (``from pkg import name`` counts ``pkg.name`` where that is a module,
    else ``pkg``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "dspsim":
                continue
            subs = {f"{name}.{a.name}" for a in node.names} & set(MODULES)
            out |= subs
            if len(subs) < len(node.names) and name in MODULES:
                out.add(name)
    out.discard(module)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_room_has_a_layer():
    assert {_room(m) for m in MODULES} <= set(LAYER)


def _upward(graph):
    bad = []
    for a, targets in graph.items():
        for b in sorted(targets):
            ra, rb = _room(a), _room(b)
            if ra != rb and LAYER[rb] >= LAYER[ra]:
                bad.append(f"{a} -> {b}")
    return bad


def test_no_module_imports_a_higher_or_sibling_room():
    assert _upward(GRAPH) == []


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_chain_of_imports_comes_back():
    assert _cycles(GRAPH) == []


def test_the_oracle_and_the_interpreters_import_nothing_of_dspsim():
    for m, targets in GRAPH.items():
        if _room(m) in ("oracle", "interpreters"):
            assert {_room(t) for t in targets} <= {_room(m)}, m


@pytest.mark.parametrize("graph, finds", [
    ({"dspsim.kernels.a": {"dspsim.catalog.b"}, "dspsim.catalog.b": set()}, "upward"),
    ({"dspsim.tflite.a": {"dspsim.onnx.b"}, "dspsim.onnx.b": set()}, "upward"),
    ({"dspsim.kernels.a": {"dspsim.kernels.b"}, "dspsim.kernels.b": {"dspsim.kernels.a"}}, "cycle"),
])
def test_the_checks_find_what_they_look_for(graph, finds):
    assert (_upward(graph) if finds == "upward" else _cycles(graph)) != []

"""The package layering of DESIGN.md, checked on the source: every import of a MICA module goes to a lower
layer (never up, never sideways into a sibling of the same layer), no MICA import hides inside a function,
and every package imports on its own in a fresh interpreter."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mica

ROOT = Path(mica.__file__).parent

#: Layers, lowest first: a module may import modules of its own package and of lower layers only.
LAYERS = [
    {"errors", "progress"},
    {"targets", "saved"},
    {"affine"},
    {"ops", "codeprint"},
    {"meshir"},
    {"tiling"},
    {"comm"},
    {"lower"},
    {"emit_c", "emit_csl", "emit_metalium"},
    {"native_sim", "testing"},
    {"emit"},
    {"pipeline"},
    {"cli", "fuzz", "models"},
    {"__init__", "__main__"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _unit(parts: tuple[str, ...]) -> str:
    """The layer unit of module ``mica.<parts>``: its top-level package or module name."""
    return parts[0] if parts else "__init__"


def _imports(path: Path):
    """(line, imported module parts under mica, inside a function?) for every MICA import in ``path``."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    package = rel[:-1]
    tree = ast.parse(path.read_text(), str(path))
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    inside = {id(c) for f in funcs for c in ast.walk(f) if c is not f}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base, parts = package[: len(package) - node.level + 1], (node.module or "").split(".")
            elif node.module and node.module.split(".")[0] == "mica":
                base, parts = (), node.module.split(".")[1:]
            else:
                continue
            parts = [p for p in parts if p]
            if parts:
                yield node.lineno, base + tuple(parts), id(node) in inside
            else:               # ``from . import ops``: each name is a module of the package
                for a in node.names:
                    yield node.lineno, base + (a.name,), id(node) in inside
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "mica":
                    yield node.lineno, tuple(a.name.split(".")[1:]), id(node) in inside


def _sources():
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_unit_has_a_layer():
    units = {_unit(p.relative_to(ROOT).with_suffix("").parts) for p in _sources()}
    assert units <= set(RANK), f"put {sorted(units - set(RANK))} in a layer of tests/test_layers.py"


def test_imports_go_down_the_layers():
    bad = []
    for path in _sources():
        me = _unit(path.relative_to(ROOT).with_suffix("").parts)
        for line, mod, _ in _imports(path):
            other = _unit(mod)
            if other == me or other not in RANK:
                continue
            if RANK[other] >= RANK[me]:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {me} imports mica.{'.'.join(mod)} "
                           f"({other} is {'above' if RANK[other] > RANK[me] else 'beside'} it)")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_no_mica_import_inside_a_function():
    bad = [f"{path.relative_to(ROOT)}:{line}: mica.{'.'.join(mod)}"
           for path in _sources() for line, mod, inside in _imports(path) if inside]
    assert not bad, "imports placed in functions:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", sorted(p.parent.name for p in ROOT.glob("*/__init__.py")))
def test_package_imports_alone(package):
    done = subprocess.run([sys.executable, "-c", f"import mica.{package}"], capture_output=True, text=True,
                          cwd=ROOT.parent)
    assert done.returncode == 0, done.stderr[-2000:]

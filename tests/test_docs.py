"""The API reference (docs/, Sphinx autodoc over the docstrings) builds with warnings as errors, documents the
public entry points and every module of the documented packages; the package ships its ``py.typed`` marker.

Sphinx comes with the ``test`` extra; without it these tests fail rather than skip."""

import importlib.metadata
import importlib.resources
import importlib.util
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import mica

ROOT = Path(__file__).resolve().parent.parent
#: Packages with a page of their own under docs/api/ (every module of each is documented there).
PACKAGES = ["affine", "tiling", "comm", "meshir", "lower", "emit_c", "emit_csl", "emit_metalium", "native_sim",
            "fuzz"]
#: Modules documented on the top-level page (docs/api/mica.rst) or on a page of their own.
MODULES = ["mica", "mica.ops", "mica.targets", "mica.errors", "mica.testing", "mica.tiling.plans",
           "mica.codeprint.half"]


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    """The built HTML: {page path relative to the output folder: text}."""
    assert importlib.util.find_spec("sphinx") is not None, \
        "sphinx is not installed: pip install -e '.[test]' (or '.[docs]') to build the API reference"
    out = tmp_path_factory.mktemp("docs") / "html"
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(ROOT / "docs"), str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"sphinx-build -W failed:\n{done.stdout[-4000:]}{done.stderr[-8000:]}"
    return {str(p.relative_to(out)): p.read_text(encoding="utf-8") for p in out.rglob("*.html")}


def test_docs_build_and_document_the_entry_points(html):
    page = html["api/mica.html"]
    for anchor in ["mica.compile_affine", "mica.CompiledProgram", "mica.CompiledProgram.run",
                   "mica.CompiledProgram.emit", "mica.Schedule", "mica.Schedule.to_json",
                   "mica.tiling.plans.cannon", "mica.ops.matmul", "mica.targets.get_target",
                   "mica.errors.MicaError"]:
        assert f'id="{anchor}"' in page, f"{anchor} is not documented in api/mica.html"
    assert 'id="mica.affine.from_c.from_c"' in html["api/affine.html"]
    assert 'id="mica.testing.run_c"' in html["api/testing.html"]
    assert "api/mica.html" in html["index.html"]


def test_docs_cover_every_module(html):
    text = "\n".join(html.values())
    wanted = list(MODULES)
    for name in PACKAGES:
        package = importlib.import_module(f"mica.{name}")
        wanted += [package.__name__] + [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)
                                        if m.name != "__main__"]
    missing = [m for m in wanted if f'id="module-{m}"' not in text]
    assert not missing, f"modules missing from docs/api/*.rst: {missing}"


def test_py_typed_ships():
    assert importlib.resources.files(mica).joinpath("py.typed").is_file()
    if sys.version_info >= (3, 11):
        import tomllib
        with open(ROOT / "pyproject.toml", "rb") as f:
            assert "py.typed" in tomllib.load(f)["tool"]["setuptools"]["package-data"]["mica"]
    # An installed (non-editable) distribution lists it among its files, i.e. the wheel carried it.
    try:
        dist = importlib.metadata.distribution("mica")
    except importlib.metadata.PackageNotFoundError:
        return
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if not direct.get("dir_info", {}).get("editable"):
        assert "mica/py.typed" in {str(f).replace("\\", "/") for f in dist.files or ()}, \
            "the installed mica has no py.typed: check [tool.setuptools.package-data] in pyproject.toml"

"""Sphinx configuration of MICA's API reference (built from the docstrings).

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install ".[docs]"`` first);
tests/test_docs.py builds it the same way, warnings as errors.
"""

import sys
from pathlib import Path

# Document the source tree next to this folder, not whichever mica happens to be installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mica  # noqa: E402

project = "MICA"
author = "MICA developers"
copyright = "MICA developers"
release = version = mica.__version__

extensions = ["sphinx.ext.autodoc"]

# Unresolved references to private or third-party names (islpy, numpy) are not errors; every other
# warning is (-W).
nitpicky = False

autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
add_module_names = False
# `single backticks` in a docstring are code.
default_role = "code"

exclude_patterns = ["_build"]
templates_path = []
html_theme = "alabaster"
html_static_path = []
html_theme_options = {"nosidebar": False, "page_width": "1100px", "body_max_width": "none"}
html_show_sourcelink = False

"""Sphinx configuration of the popejoan docs: Markdown pages (MyST), the furo theme, the API from docstrings.

Build with ``python -m sphinx -W --keep-going -n -b html docs docs/_build/html`` (``tests/test_docs.py``
does, then checks every internal link of the result).  The environment page and the layers table are
generated at build time from their sources (``_ext/popejoan_docs.py``); nothing generated is checked in.
"""

from __future__ import annotations

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext"), str(ROOT / "tests")]

import popejoan_env  # noqa: E402  (after the path: the docs describe this checkout, not an installed copy)

project = "popejoan"
author = "the popejoan authors"
copyright = "the popejoan authors"  # noqa: A001  (Sphinx's name for it)
release = version = popejoan_env.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "popejoan_docs"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext", "screenshots"]
root_doc = "index"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
"""Headings down to ``####`` get a slug, so pages can link ``page.md#a-heading``."""

html_theme = "furo"
html_title = f"popejoan {release}"
html_static_path: list[str] = []

default_role = "code"
"""Single backticks in docstrings are code, as in the rest of the package's docstrings."""
add_module_names = False
"""Signatures show `Deal.play`, not the full dotted path: the page heading already names the module."""
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
"""Each object is documented once, in the module that defines it (a package's re-exports are not repeated)."""

nitpicky = True
nitpick_ignore_regex = [
    # Types of other projects: without network access there is no intersphinx inventory for them.  Every
    # reference into popejoan_env must still resolve.  (``nn`` is ``torch.nn`` as a mocked torch names it.)
    ("py:.*", r"(numpy|np|collections|typing|os|pathlib|gymnasium|pettingzoo|torch|stable_baselines3|sb3_contrib"
              r"|ray|argparse|types|fastapi|starlette|concurrent|io|enum|dataclasses|tqdm|matplotlib|contextvars"
              r"|pyspiel|open_spiel|threadpoolctl|nn|torchrl|tensordict|pydantic|multiprocessing)(\..*)?"),
    ("py:.*", r"(Any|Callable|Iterable|Iterator|Sequence|Mapping|NamedTuple|Path|Generator|ndarray)"),
    # A private class in the signature of ``play_deals`` (the worker function of the process pool): private
    # names are not documented, so there is nothing to link to.
    ("py:class", r"popejoan_env\.tournament\.runner\._Runner"),
    # A dataclass signature holding both a ``<factory>`` default and a string default with commas (the training
    # commands' ``Args``: ``opponents="stops_first:0.5,pool_hunter:0.2,..."``) is split at those commas by
    # Sphinx's fallback signature parser, which then takes the pieces for types: numbers are never our types.
    ("py:class", r"[0-9.']+"),
    # ``cards.CardMask`` is int: a NamedTuple's field annotations reach Sphinx as that name (``players.stops.Run``),
    # where every signature shows int.
    ("py:class", r"CardMask"),
    # The type variable of ``training.common.parse_flags`` (the dataclass it fills): not a documented object.
    ("py:class", r"popejoan_env\.training\.common\.A"),
]

autodoc_mock_imports = ["pyspiel", "open_spiel", "ray", "torch", "stable_baselines3", "sb3_contrib", "threadpoolctl",
                        "torchrl", "tensordict"]
"""What only the API pages import, from the extras ``openspiel``, ``ray``, ``train`` and ``marl``: mocked, so the
site builds from the ``docs`` extra alone (``tests/test_docs.py`` builds it with every other extra's packages
unimportable)."""

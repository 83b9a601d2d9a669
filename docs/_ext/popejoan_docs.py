"""The docs' generated parts, made at build time from their one source (never a checked-in copy).

* A page whose source starts with ``<!-- page-from-docstring: MODULE -->`` is replaced by MODULE's docstring
  (the environment page: PettingZoo's format, written once in ``popejoan_env/envs/pettingzoo_aec.py``).
* A line ``<!-- table: NAME -->`` is replaced by the table ``TABLES[NAME]`` writes (the layers of the package, the
  observation's layouts, the extras of ``pyproject.toml`` with the comment above each).
* Docstrings are written in Markdown where they hold a table; autodoc reads reStructuredText, so their pipe
  tables become ``list-table`` directives, and the env module's docstring (the environment page itself) is
  not repeated in the API reference.
"""

from __future__ import annotations

import importlib
import pathlib
import re
from collections.abc import Callable
from typing import Any

from sphinx.application import Sphinx


def _layers() -> str:
    from test_architecture import layers_table  # tests/ is on the path (conf.py): LAYERS is the source

    return layers_table()


def _observation_layout() -> str:
    from popejoan_env.observation import layout_table

    return layout_table() + "\n"


def _state_layout() -> str:
    from popejoan_env.observation import STATE_LAYOUT, layout_table

    return layout_table(STATE_LAYOUT) + "\n"


PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"


def _unquoted(text: str) -> str:
    """A TOML line with its strings and its comment taken out (what is left holds its brackets)."""
    return re.sub(r"#.*", "", re.sub(r'"[^"]*"', '""', text))


def extras(text: str) -> list[tuple[str, str, list[str]]]:
    """Every extra of a ``pyproject.toml`` text, in its order: (name, purpose, requirements).  The purpose is the
    comment right above the extra, from the line ``# NAME: ...`` on; an extra without one is refused by name."""
    section = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not section:
        raise ValueError("pyproject.toml has no [project.optional-dependencies] table")
    out: list[tuple[str, str, list[str]]] = []
    comments: list[str] = []
    lines = iter(section.group(1).splitlines())
    for line in lines:
        if line.startswith("#"):
            comments.append(line.lstrip("#").strip())
            continue
        start = re.match(r"([A-Za-z0-9_.-]+)\s*=\s*\[", line)
        if not start:
            comments = []
            continue
        name, body = start.group(1), line[start.end():]
        while "]" not in _unquoted(body):
            body += "\n" + next(lines)
        own = [k for k, comment in enumerate(comments) if comment.startswith(f"{name}:")]
        if not own:
            raise ValueError(f"the extra {name!r} has no comment '# {name}: what it is for' right above it "
                             "in pyproject.toml")
        purpose = " ".join(comments[own[-1]:])[len(name) + 1:].strip()
        out.append((name, purpose, re.findall(r'"([^"]+)"', re.sub(r"#.*", "", body))))
        comments = []
    return out


def _extras() -> str:
    rows = ["| extra | what it is for | what it installs |", "|---|---|---|"]
    for name, purpose, requirements in extras(PYPROJECT.read_text(encoding="utf-8")):
        installs = ", ".join(f"`{r}`" for r in requirements)
        rows.append(f"| `{name}` | {purpose.replace('|', chr(92) + '|')} | {installs} |")
    return "\n".join(rows) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "layers": _layers,                          # tests/test_architecture.py: LAYERS
    "observation-layout": _observation_layout,  # popejoan_env/observation.py: LAYOUT
    "state-layout": _state_layout,              # popejoan_env/observation.py: STATE_LAYOUT
    "extras": _extras,                          # pyproject.toml: [project.optional-dependencies]
}
"""The generated tables: marker name -> the function that writes the table from its source."""

PAGE = re.compile(r"\A<!-- page-from-docstring: ([\w.]+) -->\n")
TABLE = re.compile(r"^<!-- table: ([\w-]+) -->$", re.M)


def generate(text: str) -> str:
    """A page's source with its markers replaced by what their sources write."""
    page = PAGE.match(text)
    if page:
        doc = importlib.import_module(page.group(1)).__doc__
        if not doc:
            raise ValueError(f"{page.group(1)} has no docstring to make a page of")
        text = doc.strip() + "\n"

    def table(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"unknown generated table {name!r}; known: {', '.join(sorted(TABLES))}")
        return TABLES[name]()

    return TABLE.sub(table, text)


CARD_LINK = re.compile(r"\]\((?:\.\./)+models/([\w-]+)/MODEL_CARD\.md")


def site_links(text: str, docname: str) -> str:
    """Links to a model card as GitHub follows them (``../models/X/MODEL_CARD.md``) made links to the site's page
    of that card (``models/X.md``, which includes it), from a page ``docname`` deep."""
    up = "../" * docname.count("/")
    return CARD_LINK.sub(lambda m: f"]({up}models/{m.group(1)}.md", text)


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    source[0] = site_links(generate(source[0]), docname)


def _generated_pages(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Pages with generated parts are read again on every build: their sources change outside ``docs/``."""
    return [name for name in env.found_docs
            if PAGE.match(text := pathlib.Path(env.doc2path(name)).read_text()) or TABLE.search(text)]


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def markdown_tables_to_rst(lines: list[str]) -> list[str]:
    """Docstring lines with each Markdown pipe table (header, ``|---|`` rule, rows) as a ``list-table``."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        is_table = (lines[i].lstrip().startswith("|") and i + 1 < len(lines)
                    and re.fullmatch(r"\s*\|[\s:|-]+\|\s*", lines[i + 1]) is not None)
        if not is_table:
            # ``|x|`` in prose (an absolute value) would be a reStructuredText substitution
            out.append(re.sub(r"(?<![\\`|])\|(\w[^|`]*?)\|(?![_|])", r"\\|\1\\|", lines[i]))
            i += 1
            continue
        rows = [_cells(lines[i])]
        i += 2
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            rows.append(_cells(lines[i]))
            i += 1
        out += ["", ".. list-table::", "   :header-rows: 1", ""]
        for row in rows:
            out += [f"   * - {row[0]}"] + [f"     - {cell}" for cell in row[1:]]
        out.append("")
    return out


def _process_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what == "module" and name == "popejoan_env.envs.pettingzoo_aec":
        lines[:] = ["The PettingZoo AEC environment.  This module's docstring is the "
                    ":doc:`environment page </environment>`; its classes and functions follow."]
        return
    lines[:] = markdown_tables_to_rst(lines)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the generators with Sphinx."""
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _generated_pages)
    app.connect("autodoc-process-docstring", _process_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

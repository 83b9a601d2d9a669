"""The code blocks of the docs pages, as the site renders them, with the markers that say how each is checked.

Read by ``tests/test_doc_blocks.py``.  A block is what MyST renders as code: a fenced block (its language the
first word after the fence) or an indented one; MyST directives (```` ```{toctree} ````) are not code.  The HTML
comments right before a block are its markers:

* ``<!-- NAME -->`` (lowercase words joined by ``-``): a test that names the block runs it and checks its output;
* ``<!-- not-run: REASON -->``: not run, for the reason given (a picture of a file tree, a placeholder path ...);
* ``<!-- flags-only: REASON -->``: a shell block whose commands of ours are only read by their argument parsers
  (a training run of minutes, a server that waits);
* ``<!-- file: PATH -->``: the contents of a file the reader saves as PATH (the blocks after it on the page can use
  it).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

from markdown_it import MarkdownIt

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def pages() -> list[pathlib.Path]:
    """Every page whose code blocks are checked: the docs site's Markdown, the README and the model cards."""
    docs = [p for p in sorted(DOCS.rglob("*.md")) if "_build" not in p.parts]
    return docs + [ROOT / "README.md"] + sorted(ROOT.glob("models/*/MODEL_CARD.md"))


MARKER = re.compile(r"<!--\s*(.*?)\s*-->", re.S)
NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
KINDS = ("not-run", "flags-only", "file")
"""Markers that take a text after a colon."""


@dataclasses.dataclass(frozen=True)
class Block:
    """One code block of a page."""

    page: pathlib.Path
    line: int  # 1-based line of the opening fence
    lang: str  # "" for a fence without a language; "indented" for an indented block
    code: str
    markers: tuple[str, ...]  # the HTML comments right before it, in order

    @property
    def where(self) -> str:
        """``page:line``, as a test names the block."""
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    def marked(self, kind: str) -> str | None:
        """The text of the block's ``<!-- kind: text -->`` marker, or None."""
        for marker in self.markers:
            head, _, text = marker.partition(":")
            if head.strip() == kind:
                return text.strip()  # "" for a marker without its text: refused by the tests
        return None

    @property
    def names(self) -> list[str]:
        """The names a test knows the block by (``<!-- NAME -->``)."""
        return [m for m in self.markers if NAME.fullmatch(m) and m not in KINDS]


def blocks(page: pathlib.Path) -> list[Block]:
    """The code blocks of a page, with their markers."""
    text = page.read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").parse(text)
    out = []
    for k, token in enumerate(tokens):
        if token.type not in ("fence", "code_block") or token.info.startswith("{"):
            continue
        markers: list[str] = []
        j = k - 1
        while j >= 0 and tokens[j].type == "html_block" and not MARKER.sub("", tokens[j].content).strip():
            markers[:0] = MARKER.findall(tokens[j].content)
            j -= 1
        lang = token.info.split()[0] if token.type == "fence" and token.info.strip() else ""
        out.append(Block(page, token.map[0] + 1 if token.map else 0,
                         lang if token.type == "fence" else "indented", token.content, tuple(markers)))
    return out


def all_blocks() -> list[Block]:
    """The code blocks of every checked page."""
    return [block for page in pages() for block in blocks(page)]


@dataclasses.dataclass(frozen=True)
class Inline:
    """One inline code span of a page (`` `like this` ``), outside code blocks."""

    page: pathlib.Path
    line: int  # 1-based first line of the paragraph, table or list item that holds it
    code: str

    @property
    def where(self) -> str:
        """``page:line``, as a test names the span."""
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"


def inline_spans(page: pathlib.Path) -> list[Inline]:
    """The inline code spans of a page, in order."""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    return [Inline(page, token.map[0] + 1 if token.map else 0, child.content)
            for token in tokens if token.type == "inline"
            for child in token.children or [] if child.type == "code_inline"]


def all_inline_spans() -> list[Inline]:
    """The inline code spans of every checked page."""
    return [span for page in pages() for span in inline_spans(page)]

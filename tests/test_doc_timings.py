"""A time on a docs page says how it was measured: the command that ran and the date, near it.

The form (docs/speed.md, "How times are written"): the time, then in the same paragraph (or table row, or the
caption right above the table) the command in backticks (or the code block the paragraph follows) and the date as
YYYY-MM-DD, e.g. "took 31 s (`popejoan evaluate shipped --quick`, 2026-12-04, the shared 2-core machine at load 5)".

A time is a number with a unit of seconds, minutes or hours, or "about a minute" / "half an hour" and the like.  Not times of a
run, so not checked: a value given to a flag (`--minutes 4`), a time after "for", "after", "within", "every",
"under", "past" or "up to" (a budget, a limit or a goal), a table row of a limit (its constant first), and headings
(their section holds the figure).
Milliseconds and microseconds are speeds of one decision or step, read with the table they belong to.

``UNDATED`` is how many paragraphs of each page still lack their command or date: the test fails when a page has
more (a time added without them) and when it has fewer (lower the count, so it only goes down).
"""

from __future__ import annotations

import re

import pytest

from doc_blocks import ROOT, pages

UNDATED: dict[str, int] = {
    "docs/training.md": 37,
    "docs/batch.md": 1,
    "docs/openspiel.md": 4,
    "docs/players.md": 1,
    "docs/ray.md": 6,
    "docs/small_game.md": 1,
    "docs/speed.md": 1,
    "docs/tests.md": 1,
    "docs/views.md": 1,
    "models/round1/MODEL_CARD.md": 6,
    "models/round2/MODEL_CARD.md": 7,
}
"""Paragraphs with a time but no command or date, page by page (a page not listed has none): most were measured
before the pages said when, and their dates are not all known."""

DURATION = re.compile(
    r"(?<![\w.,-])(?:~\s?)?\d(?:[\d,.]*\d)?(?:¾|½|¼)?\s?(?:s|sec|seconds?|min|minutes?|h|hours?)\b"
    r"(?:\s\d+\s?s\b)?"
    r"|\babout (?:a|an|half a|half an) (?:minute|hour)\b|\bhalf an hour\b")
NOT_A_RUN = re.compile(r"(?:\bfor|\bafter|\bwithin|\bevery|\bunder|\bpast|\bup to|--[\w-]+[ =]?)\s*(?:about\s|~)?$",
                       re.I)
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
COMMAND = re.compile(r"`(?:popejoan|python3?) [^`]+`")
CODE_SPAN = re.compile(r"`[^`]*`")
LIMIT = re.compile(r"\|\s*`[A-Z][A-Z_]+`")
"""A table row that starts with a constant's name: a limit and its value (docs/reliability.md), not a run."""


def units(text: str) -> list[tuple[int, str, str]]:
    """(line, unit, context) for every paragraph, list item or table row of a page: the unit's own text, and what
    lies around it (a table's caption, the code block a paragraph follows or introduces)."""
    lines = text.splitlines()
    out: list[tuple[int, str, str]] = []
    blocks: list[tuple[int, int, str]] = []  # (first, last, kind) of each paragraph-like block
    k = 0
    while k < len(lines):
        if lines[k].lstrip().startswith(("```", "~~~")):
            fence = lines[k].lstrip()[:3]
            end = k + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence):
                end += 1
            blocks.append((k, end, "code"))
            k = end + 1
            continue
        if not lines[k].strip() or lines[k].lstrip().startswith(("#", "<!--", "!")):
            k += 1
            continue
        start = k
        kind = "table" if lines[k].lstrip().startswith("|") else "text"
        while k < len(lines) and lines[k].strip() and not lines[k].lstrip().startswith(("```", "~~~")) \
                and (lines[k].lstrip().startswith("|") == (kind == "table")):
            k += 1
        blocks.append((start, k - 1, kind))
    for n, (first, last, kind) in enumerate(blocks):
        if kind == "code":
            continue
        body = lines[first:last + 1]
        before = blocks[n - 1] if n else None
        after = blocks[n + 1] if n + 1 < len(blocks) else None
        around = []
        for other in (before, after):
            if other and (other[2] == "code" or (kind == "table" and other is before)):
                around.append("\n".join(lines[other[0]:other[1] + 1]))
        if kind == "table":
            caption = "\n".join(around)
            out += [(first + 1 + i, row, caption) for i, row in enumerate(body) if not LIMIT.match(row)]
        else:
            # a list is several units: each item with its continuation lines
            items: list[tuple[int, list[str]]] = []
            for i, line in enumerate(body):
                if re.match(r"\s*(?:[*-]|\d+\.)\s", line) or not items:
                    items.append((first + 1 + i, [line]))
                else:
                    items[-1][1].append(line)
            out += [(line, "\n".join(item), "\n".join(around)) for line, item in items]
    return out


def times(unit: str) -> list[str]:
    """The times of runs in a unit's text (inline code taken out first: a command's own numbers are not times)."""
    text = CODE_SPAN.sub(lambda m: " " * len(m.group()), unit)
    return [m.group().strip() for m in DURATION.finditer(text) if not NOT_A_RUN.search(text[:m.start()][-40:])]


def undated(page_text: str) -> list[tuple[int, list[str]]]:
    """(line, times) of each unit of a page with a time but without a command or a date near it."""
    out = []
    for line, unit, context in units(page_text):
        found = times(unit)
        near = unit + "\n" + context
        if found and not (DATE.search(near) and (COMMAND.search(near) or "```" in context)):
            out.append((line, found))
    return out


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_time_on_a_page_says_its_command_and_date(page) -> None:  # type: ignore[no-untyped-def]
    name = str(page.relative_to(ROOT))
    missing = undated(page.read_text(encoding="utf-8"))
    shown = "; ".join(f"line {line}: {', '.join(found)}" for line, found in missing)
    allowed = UNDATED.get(name, 0)
    assert len(missing) <= allowed, f"{name}: times without their command and date (YYYY-MM-DD) near them: {shown}"
    assert len(missing) == allowed, (f"{name} has {len(missing)} undated times, not {allowed}: lower its count in "
                                     f"UNDATED ({shown})")


def test_a_time_is_found_and_its_command_and_date_are_looked_for_near_it() -> None:
    page = ("The run took 31 s.\n\nIt took 31 s (`popejoan evaluate shipped --quick`, 2026-12-04).\n\n"
            "```bash\npopejoan evaluate shipped --quick\n```\n\n(2 min 3 s here, 2026-12-04.)\n\n"
            "| run | time |\n|---|---|\n| a | 12 min 11 s |\n\n"
            "Games expire after 30 minutes; `popejoan exploit --minutes 4` trains for 4 minutes.\n\n"
            "* about a minute\n* nothing\n\n## Train in one minute\n")
    assert times("took 12 min 11 s, then ~2 min, 1¾ minutes, about a minute; 0.3 ms") == [
        "12 min 11 s", "~2 min", "1¾ minutes", "about a minute"]
    assert [line for line, _ in undated(page)] == [1, 13, 17]

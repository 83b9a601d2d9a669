"""Build the docs site as a venv holding only ``pip install -e ".[docs]"`` would: every installed package that
extra does not install (with its dependencies) is made unimportable first, then Sphinx runs on the arguments.

    python tests/docs_extra_only.py -W --keep-going -n -b html docs OUT

``tests/test_docs.py`` builds the site this way, so a page that needs another extra (torch, Ray, OpenSpiel ...)
fails the build unless ``docs/conf.py`` mocks it, as it would in a fresh venv, without installing one.
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata as metadata
import sys
from collections.abc import Sequence
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT = "popejoan"
EXTRAS = ("docs",)
ALWAYS = {"pip"}
"""What a fresh venv has before anything is installed in it."""


def installed_with(project: str = PROJECT, extras: Sequence[str] = EXTRAS) -> set[str]:
    """The distributions (canonical names) that ``pip install project[extras]`` brings in, as far as they are
    installed here: the project, its dependencies and theirs, with the extras each asks for."""
    found: set[str] = set(ALWAYS)
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(project, tuple(extras))]
    while todo:
        name, wanted = todo.pop()
        if (canonicalize_name(name), wanted) in seen:
            continue
        seen.add((canonicalize_name(name), wanted))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        found.add(canonicalize_name(name))
        for text in requires:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in wanted or ("",)):
                todo.append((requirement.name, tuple(sorted(requirement.extras))))
    return found


def unimportable(project: str = PROJECT, extras: Sequence[str] = EXTRAS) -> set[str]:
    """Top-level modules installed here by no distribution that ``pip install project[extras]`` installs."""
    allowed = installed_with(project, extras)
    return {module for module, dists in metadata.packages_distributions().items()
            if not any(canonicalize_name(d) in allowed for d in dists)}


class Unimportable(importlib.abc.MetaPathFinder):
    """A finder that refuses the modules of other distributions as if they were not installed."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        """Refuse an unimportable module; leave every other to the finders after this one."""
        if fullname.partition(".")[0] in self.modules:
            raise ModuleNotFoundError(f"No module named {fullname!r} (the docs extra does not install it)",
                                      name=fullname)


def main(argv: list[str]) -> int:
    """Sphinx's command line, with only the docs extra importable."""
    sys.meta_path.insert(0, Unimportable(unimportable()))
    from sphinx.cmd.build import main as sphinx

    return sphinx(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

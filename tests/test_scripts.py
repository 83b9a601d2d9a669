"""Every script of ``benchmarks/`` and ``training/`` imports: a module moved inside the package is caught here, not by
the first reader who runs the script (``bench_pimc.py`` still imported ``players.search`` after 0.3.0 moved it)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("training/*.py")])


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 15


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_script_imports(path: pathlib.Path) -> None:
    spec = importlib.util.spec_from_file_location(f"script_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # each runs its work only under __main__
    assert callable(getattr(module, "main", None)) or "run_command" in vars(module)

"""The engine is pure Python: importing it pulls in no numpy, gymnasium, pettingzoo, torch or SB3."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "gymnasium", "pettingzoo", "torch", "stable_baselines3", "sb3_contrib")
MODULES = (
    "popejoan_env", "popejoan_env.cards", "popejoan_env.errors", "popejoan_env.rules",
    "popejoan_env.engine", "popejoan_env.session", "popejoan_env.seat_view", "popejoan_env.checks",
    "popejoan_env.seats", "popejoan_env.record", "popejoan_env.render", "popejoan_env.inference",
    "popejoan_env.small_game",
)


@pytest.mark.parametrize("module", MODULES)
def test_engine_imports_no_heavy_packages(module: str) -> None:
    script = (
        f"import json, sys, importlib; importlib.import_module({module!r}); "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == [], f"{module} imports {out.stdout.strip()}"


def test_engine_plays_a_deal_without_numpy() -> None:
    """A deal from explicit cards plays out in a process that never imports numpy."""
    script = """
import sys
from popejoan_env.cards import CARD_NAMES, PACK
from popejoan_env.engine import Deal
from popejoan_env.session import Session
hands = [[CARD_NAMES[c] for c in PACK[k:40:4]] for k in range(4)]
deal = Session(players=4).next_deal(hands, [CARD_NAMES[c] for c in PACK[40:]])
while not deal.done:
    deal.play(deal.legal_actions()[0])
assert "numpy" not in sys.modules
print(deal.winner)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() in {"0", "1", "2", "3"}

"""An evaluation researchers can cite: one agent against a versioned panel on a frozen deal set.

``popejoan evaluate AGENT`` (or ``evaluate_agent`` from Python) plays the agent in duplicate, field
lineups, against every player of ``panel/2`` on the first 2,000 (``--quick``: 200) deals of
``popejoan-evalset/1``, and writes one report (``popejoan-evaluation/1``: text, JSON, Markdown) with the
margin per opponent and its 95% interval, the deal win rate, each side's counters and go-out rate, the
exact command, the versions and the deal set's SHA-256.  ``popejoan exploit AGENT`` measures how much one
seat wins by deviating from it (a lower bound of its exploitability); ``clairvoyant`` gives the upper end.  How
to read and quote the figures: ``docs/evaluation.md``.

| module | holds |
|---|---|
| ``dealset`` | the frozen deals: their card orders (package data), SHA-256, and the proof the tournament deals them |
| ``panel`` | ``panel/2``: the reference opponents, and narrowing them (``--opponents``) |
| ``runner`` | playing the blocks of deals against each opponent; the state file an interrupted run resumes from |
| ``resume`` | reading that state file, every block checked against the evaluation's plan and the game's bounds |
| ``variance`` | the control-variate estimator of the margins (narrower intervals at the same deals) |
| ``ratings`` | one rating per player from pairwise duplicate margins, with bootstrap intervals, and its chart |
| ``report`` | the report's dict (format versioned), its text and Markdown, and saving them atomically |
| ``aivat`` | the AIVAT-class corrections of ``--aivat``: the luck of the players' own random choices in a deal |
| ``command`` | ``popejoan evaluate``'s flags and run; ``evaluate_agent`` |
| ``exploit`` | ``popejoan exploit``: its flags, its two methods (the search best response, a PPO learner), the report |
| ``exploit_search`` | the search best response's gain deal by deal on the frozen deals, and on the small game |
| ``clairvoyant`` | the upper end: one seat that sees every hand and every later choice, its best line in each game |
| ``exploitability`` | exact best responses and NashConv on the small game |
| ``small_check`` | the search best response against the exact one, on the small game's deals |
"""

from __future__ import annotations

from popejoan_env.evaluate.command import evaluate_agent
from popejoan_env.evaluate.dealset import SHA256 as DEAL_SET_SHA256
from popejoan_env.evaluate.dealset import VERSION as DEAL_SET
from popejoan_env.evaluate.panel import PANEL
from popejoan_env.evaluate.panel import VERSION as PANEL_VERSION

__all__ = ["DEAL_SET", "DEAL_SET_SHA256", "PANEL", "PANEL_VERSION", "evaluate_agent"]

"""Command lines of the scripts (``training/``, ``benchmarks/``): refusals are one line and exit status 2 (stdlib only).

Kept out of ``checks`` so that importing the engine does not import argparse.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose every refusal is one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Print ``prog: error: message`` on one line and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.splitlines())}\n")

"""The organizers' guide figure: drawn by images/make_board_figure.py from the leaderboard's own
statistics, and the committed PNG is what the script draws."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_script():
    spec = importlib.util.spec_from_file_location("make_board_figure",
                                                  ROOT / "images" / "make_board_figure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_the_png_is_what_the_script_draws():
    pytest.importorskip("matplotlib")
    import matplotlib.image

    script = _load_script()
    board = script.simulate()
    # the simulation says what the guide says of it: equally good teams share a tier, a
    # minimum practical difference merges tiers, and the rank intervals hold each team's place
    assert board.plain.tier[0] == 1 and board.plain.tier.max() >= 3
    assert board.practical.tier.max() < board.plain.tier.max()
    places = np.arange(1, len(board.teams) + 1)
    assert (board.plain.rank_interval[:, 0] <= places).all()
    assert (places <= board.plain.rank_interval[:, 1]).all()
    drawn = script.render(board)
    saved = matplotlib.image.imread(script.OUT)
    assert saved.shape[:2] == drawn.shape[:2]
    difference = np.abs(saved[..., :3] * 255 - drawn[..., :3].astype(float))
    assert difference.mean() < 0.5, "images/board_tiers.png is stale: run " \
                                   "python images/make_board_figure.py"

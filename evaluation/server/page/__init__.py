"""The board as people see it: the board's and a team's HTML page, and the board as CSV.

It owns the Jinja2 templates (``templates/``), the cells' formatting, the chart of scores
against costs, the page of a team's standing, the robustness certificate's page, the
organizers' page of the workers' queue and the CSV downloads; each renders a ``Board`` or
``TeamStanding`` of ``evaluation.server.core`` (and the queue's views of
``evaluation.server.store``) and reads nothing else.
"""

from __future__ import annotations

from evaluation.server.page._board_page import render_board
from evaluation.server.page._csv import CARRY_AND_FACT_COLUMNS, STANDING_COLUMNS, board_csv
from evaluation.server.page._queue_page import render_queue
from evaluation.server.page._robustness_page import render_robustness, robustness_csv
from evaluation.server.page._team_page import render_team

__all__ = [
    "CARRY_AND_FACT_COLUMNS",
    "STANDING_COLUMNS",
    "board_csv",
    "render_board",
    "render_queue",
    "render_robustness",
    "render_team",
    "robustness_csv",
]

"""The leaderboard service: receives, checks, scores and ranks challenge submissions.

Optional: it needs the server extra (``evalrs-harness[server]``; ``make server`` in a clone:
FastAPI, uvicorn, SQLAlchemy, Alembic, Jinja2). Nothing else in the harness imports it; the
``serve``, ``admin`` and ``worker`` commands do, when they run. Its subpackages, each with its
public API in its ``__init__``:

* :mod:`evaluation.server.db`: the database (SQLAlchemy only): its engine, tables, migrations
  and write lock, the ``Database`` handle every transaction goes through, and the records that
  need no scoring: teams and their tokens, the organizers' tokens, the phases' reveals and
  publications, a team's rank, whether the database can take writes;
* :mod:`evaluation.server.core`: what the competition and a submission are: the competition
  file, a submission's and a reproduction report's schema, the scoring, the per-user values'
  checks, the board's data model (pydantic, NumPy);
* :mod:`evaluation.server.store`: the records that scoring makes: submissions, their receipts
  and views, per-user values, baselines, reproductions, the reproduction queue and final
  selections, and the rows of a phase's board;
* :mod:`evaluation.server.standings`: a board's paired statistics, computed by a background
  thread, and what a board request shows of them meanwhile;
* :mod:`evaluation.server.page`: the board and a team's page (Jinja2 templates, the chart) and
  the board as CSV;
* :mod:`evaluation.server.api`: the FastAPI app, its routers, dependencies and error handlers.

This package imports none of them: ``admin`` commands on teams and tokens import
``evaluation.server.db`` alone (SQLAlchemy) and start in well under a second, without the
web framework nor the scoring.
"""

__all__: list[str] = []

"""The leaderboard's data behind one object: ``Store`` gives each concern's functions a handle.

Each concern lives in its own module, as functions of a ``Database`` (the engine, the
competition, the clock, the write lock):

* ``_store_teams``, ``_store_auth``: teams and their tokens, the organizers' tokens, who holds
  a token;
* ``_store_submissions``: an upload checked, scored and stored once within the daily limit;
  ``_store_views``: its receipt, a submission's view and stored body;
* ``_store_board``, ``_store_ranking``, ``_store_reveals``: the board of a phase, a team's
  place on it, the phases whose private scores are revealed; ``_store_standings``: the
  board's paired statistics (tiers, rank intervals, win probabilities), cached per submission;
  ``_standings_worker``, ``_standings_now``: those computed by a background thread, and what
  a board request shows of them meanwhile;
* ``_store_reproductions``: the organizers' verdicts and the private scores they bring;
* ``_store_jobs``: the reproduction queue (jobs, leases, the workers' verdicts);
* ``_store_user_values``: each submission's per-user values and costs, uploaded or trusted;
* ``_store_baselines``: the reference runs pinned on every board;
* ``_store_readiness``: whether the database can take writes (read-only, full disk).

``Store`` is what the app and the ``admin`` command hold; its methods are those functions.
The concerns that score or parse submissions (they need NumPy, pandas and pydantic) are
imported when first used, so that an ``admin`` command on teams and tokens starts in well
under a second.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from evaluation.server import (
    _standings_worker,
    _store_auth,
    _store_ranking,
    _store_readiness,
    _store_reveals,
    _store_teams,
)
from evaluation.server._store_auth import AdminTokenInfo, Caller
from evaluation.server._store_session import Database
from evaluation.server._store_teams import TeamInfo

if TYPE_CHECKING:
    from evaluation.server._board import Board, TeamStanding
    from evaluation.server._store_finals import FinalMark
    from evaluation.server._store_jobs import JobView, Lease
    from evaluation.server._store_submissions import LimitReached
    from evaluation.server._store_user_values import UserValues
    from evaluation.server._store_views import OwnSubmission, Receipt, SubmissionView


class Store(Database):
    """The leaderboard's data: teams, tokens, submissions and the board of each phase.

    Built as a :class:`Database` (the engine, the competition, the clock); each method is one
    function of the concern module that holds it. ``standings_wait``: the most seconds a board
    waits for its statistics, computed in the background (``STANDINGS_WAIT_S``), when it has
    none yet or the wait is at least ``FRESH_WAIT_S``; ``standings_interval``: the least seconds
    between two computations of a board's statistics started for requests that do not wait
    (``STANDINGS_MIN_INTERVAL_S``).
    """

    standings_wait: float = _standings_worker.STANDINGS_WAIT_S
    standings_interval: float = _standings_worker.STANDINGS_MIN_INTERVAL_S

    # ------------------------------------------------------------------ teams and tokens

    def add_team(self, name: str, email: str) -> tuple[TeamInfo, str]:
        """A new team and its token (see ``_store_teams.add_team``)."""
        return _store_teams.add_team(self, name, email)

    def revoke_team(self, name: str) -> TeamInfo:
        """Revoke a team's token (see ``_store_teams.revoke_team``)."""
        return _store_teams.revoke_team(self, name)

    def new_team_token(self, name: str) -> tuple[TeamInfo, str]:
        """Give a team a new token (see ``_store_teams.new_team_token``)."""
        return _store_teams.new_team_token(self, name)

    def list_teams(self) -> list[TeamInfo]:
        """Every team, by id, with its number of submissions."""
        return _store_teams.list_teams(self)

    def create_admin_token(self) -> str:
        """Create an organizer's token and return it (only its hash is stored)."""
        return _store_auth.create_admin_token(self)

    def list_admin_tokens(self) -> list[AdminTokenInfo]:
        """Every organizer's token (never the token itself), by id."""
        return _store_auth.list_admin_tokens(self)

    def revoke_admin_token(self, token_id: int) -> AdminTokenInfo:
        """Revoke an organizer's token (see ``_store_auth.revoke_admin_token``)."""
        return _store_auth.revoke_admin_token(self, token_id)

    def authenticate(self, token: str | None) -> Caller | None:
        """Who holds ``token`` (see ``_store_auth.authenticate``)."""
        return _store_auth.authenticate(self, token)

    # ------------------------------------------------------------------ submissions

    def submit(self, team_id: int, body: bytes, idempotency_key: str | None = None) -> Receipt:
        """Check, score and store a team's submission (see ``_store_submissions.submit``)."""
        from evaluation.server import _store_submissions
        return _store_submissions.submit(self, team_id, body, idempotency_key)

    def check_before_body(self, team_id: int, idempotency_key: str | None = None
                          ) -> LimitReached | None:
        """Refuse an upload that would be refused anyway before its body is read (see
        ``_store_submissions.check_before_body``)."""
        from evaluation.server import _store_submissions
        return _store_submissions.check_before_body(self, team_id, idempotency_key)

    def refuse_unless_stored(self, team_id: int, body: bytes, refusal: LimitReached) -> None:
        """At the daily limit: raise ``refusal`` unless ``body`` repeats a stored run."""
        from evaluation.server import _store_submissions
        _store_submissions.refuse_unless_stored(self, team_id, body, refusal)

    def get_submission(self, submission_id: int, caller: Caller) -> SubmissionView | None:
        """A submission, when ``caller`` may see it (see ``_store_views.get_submission``)."""
        from evaluation.server import _store_views
        return _store_views.get_submission(self, submission_id, caller)

    def payload(self, submission_id: int, caller: Caller) -> str | None:
        """The body of a submission as stored, for an organizer; else None."""
        from evaluation.server import _store_views
        return _store_views.payload(self, submission_id, caller)

    # ------------------------------------------------------------------ the board

    def board(self, phase_name: str | None = None, *, admin: bool = False,
              standings: bool = False) -> Board:
        """The board of a phase (see ``_store_board.board``); with ``standings``, its paired
        statistics too, the latest computed in the background (see
        ``_standings_now.board_now``): waits ``standings_wait`` seconds at most for them
        (when it waits: see ``_standings_worker``)."""
        from evaluation.server import _store_board
        board = _store_board.board(self, phase_name, admin=admin)
        if not standings:
            return board
        from evaluation.server import _standings_now, _store_standings
        return _standings_now.board_now(self, board, _store_standings.StoreValues(self),
                                        self.standings_wait, self.standings_interval)

    def team_standing(self, team: str, phase_name: str | None = None, *,
                      admin: bool = False) -> TeamStanding | None:
        """A team's page: its row, win probabilities and place on the Pareto front (see
        ``_standings_now.team_now``, from the latest statistics as ``board`` shows them);
        None when the team is not on the board."""
        from evaluation.server import _standings_now, _store_board, _store_standings
        board = _store_board.board(self, phase_name, admin=admin)
        return _standings_now.team_now(self, board, team, _store_standings.StoreValues(self),
                                       self.standings_wait, self.standings_interval)

    def stop_standings(self) -> None:
        """Stop the thread that computes the boards' statistics, if there is one (the next
        board that needs them starts it again)."""
        _standings_worker.stop_standings(self)

    def _rank(self, phase: str, team_id: int) -> int | None:
        """The place of a team on a phase's board by public score (None: no submission)."""
        return _store_ranking.rank(self, phase, team_id)

    def reveal_phase(self, phase_name: str) -> tuple[datetime, bool]:
        """Reveal a phase's private scores (see ``_store_reveals.reveal_phase``)."""
        return _store_reveals.reveal_phase(self, phase_name)

    def mark_final(self, team_id: int, submission_id: int, final: bool = True) -> FinalMark:
        """Mark or unmark a final selection (see ``_store_finals.mark_final``)."""
        from evaluation.server import _store_finals
        return _store_finals.mark_final(self, team_id, submission_id, final)

    def own_submissions(self, team_id: int, phase: str | None = None) -> list[OwnSubmission]:
        """A team's submissions (of one phase, or all), newest first (see
        ``_store_views.own_submissions``)."""
        from evaluation.server import _store_views
        return _store_views.own_submissions(self, team_id, phase)

    def reveal_warnings(self, phase_name: str) -> list[str]:
        """Why revealing a phase now may be a mistake (see ``_store_reveals.reveal_warnings``)."""
        return _store_reveals.reveal_warnings(self, phase_name)

    def publish_phase(self, phase_name: str) -> tuple[datetime, bool]:
        """Publish a phase's public scores (see ``_store_reveals.publish_phase``)."""
        return _store_reveals.publish_phase(self, phase_name)

    def publications(self) -> dict[str, datetime]:
        """``{phase: published_at}`` of the published phases."""
        return _store_reveals.publications(self)

    def publish_warnings(self, phase_name: str) -> list[str]:
        """Why publishing a phase now may be a mistake (``_store_reveals.publish_warnings``)."""
        return _store_reveals.publish_warnings(self, phase_name)

    def phase_names(self) -> list[str]:
        """The phases (see ``_store_reveals.phase_names``)."""
        return _store_reveals.phase_names(self)

    def reveals(self) -> dict[str, datetime]:
        """``{phase: revealed_at}`` of the revealed phases."""
        return _store_reveals.reveals(self)

    # ------------------------------------------------------------------ reproductions

    def record_reproduction(self, submission_id: int, body: bytes) -> dict:
        """Store a reproduction's verdict (see ``_store_reproductions.record_reproduction``)."""
        from evaluation.server import _store_reproductions
        return _store_reproductions.record_reproduction(self, submission_id, body)

    def claim_job(self, body: bytes) -> Lease | None:
        """Claim the next reproduction job (see ``_store_jobs.claim``)."""
        from evaluation.server import _store_jobs
        return _store_jobs.claim(self, body)

    def heartbeat_job(self, job_id: int, body: bytes) -> Lease:
        """Extend a claimed job's lease (see ``_store_jobs.heartbeat``)."""
        from evaluation.server import _store_jobs
        return _store_jobs.heartbeat(self, job_id, body)

    def finish_job(self, job_id: int, body: bytes) -> JobView:
        """Finish a claimed job (see ``_store_jobs.finish``)."""
        from evaluation.server import _store_jobs
        return _store_jobs.finish(self, job_id, body)

    def retry_job(self, job_id: int) -> JobView:
        """Queue a failed job again (see ``_store_jobs.retry``)."""
        from evaluation.server import _store_jobs
        return _store_jobs.retry(self, job_id)

    def queue_selections(self, phase_name: str) -> list[int]:
        """Queue the jobs of a phase's final selections, the implicit ones of teams that
        marked none included (see ``_store_finals.queue_selections``)."""
        from evaluation.server import _store_finals
        return _store_finals.queue_selections(self, phase_name)

    def jobs(self, phase: str | None = None, state: str | None = None) -> list[JobView]:
        """The reproduction jobs, oldest first (see ``_store_jobs.jobs``)."""
        from evaluation.server import _store_jobs
        return _store_jobs.jobs(self, phase, state)

    def job_counts(self) -> dict[str, dict[str, int]]:
        """``{phase: {state: jobs}}`` (see ``_store_jobs.job_counts``)."""
        from evaluation.server import _store_jobs
        return _store_jobs.job_counts(self)
    # ------------------------------------------------------------------ per-user values

    def user_scores(self, submission_id: int, *, private: bool = False) -> UserValues | None:
        """A submission's per-user values and costs, trusted ones first (see
        ``_store_user_values.user_scores``); None when it has none."""
        from evaluation.server import _store_user_values
        return _store_user_values.user_scores(self, submission_id, private=private)

    def phase_user_values(self, phase: str | None, submission_ids: Iterable[int], *,
                          private: bool = False) -> dict[int, UserValues]:
        """``user_scores`` of many submissions of a phase, in one query (see
        ``_store_user_values.phase_user_values``)."""
        from evaluation.server import _store_user_values
        return _store_user_values.phase_user_values(self, phase, submission_ids,
                                                    private=private)

    # ------------------------------------------------------------------ readiness

    def readiness(self) -> list[str]:
        """What keeps the database from taking uploads (see ``_store_readiness.problems``);
        empty when it is ready."""
        return _store_readiness.problems(self)

    # ------------------------------------------------------------------ baselines

    def pin_baselines(self) -> list[tuple[str, str, int]]:
        """Pin the competition's baselines on every board (see ``_store_baselines``)."""
        from evaluation.server import _store_baselines
        return _store_baselines.pin_baselines(self)

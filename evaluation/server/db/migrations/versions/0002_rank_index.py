"""An index for a team's rank: submissions by team, phase and leaderboard score.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # the rank of an upload asks, for each other team, whether it has a better submission:
    # a seek to the scores at least as high as the team's best
    op.create_index(op.f("ix_submissions_team_id_phase_leaderboard_score"), "submissions",
                    ["team_id", "phase", "leaderboard_score"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_submissions_team_id_phase_leaderboard_score"),
                  table_name="submissions")

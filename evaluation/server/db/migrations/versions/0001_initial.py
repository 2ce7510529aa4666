"""Teams, submissions and admin tokens.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "admin_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_admin_tokens_token_hash")),
    )
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("is_baseline", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_teams")),
        sa.UniqueConstraint("name", name=op.f("uq_teams_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_teams_token_hash")),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("run_id", sa.String(length=128), nullable=False),
        sa.Column("body_sha256", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("phase1_score", sa.Double(), nullable=False),
        sa.Column("leaderboard_score", sa.Double(), nullable=False),
        sa.Column("interval_low", sa.Double(), nullable=False),
        sa.Column("interval_high", sa.Double(), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("num_folds", sa.Integer(), nullable=False),
        sa.Column("claimed_score", sa.Double(), nullable=True),
        sa.Column("flagged", sa.Boolean(), nullable=False),
        sa.Column("reproduction", sa.String(length=20), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"],
                                name=op.f("fk_submissions_team_id_teams"), ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submissions")),
        sa.UniqueConstraint("team_id", "phase", "run_id",
                            name=op.f("uq_submissions_team_id_phase_run_id")),
    )
    op.create_index(op.f("ix_submissions_phase_team_id"), "submissions",
                    ["phase", "team_id"], unique=False)
    op.create_index(op.f("ix_submissions_team_id_phase_submitted_at"), "submissions",
                    ["team_id", "phase", "submitted_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_submissions_team_id_phase_submitted_at"), table_name="submissions")
    op.drop_index(op.f("ix_submissions_phase_team_id"), table_name="submissions")
    op.drop_table("submissions")
    op.drop_table("teams")
    op.drop_table("admin_tokens")

"""Reproductions, private scores and phase reveals.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

#: The submissions' private scores (None until the organizers reproduce on the private folds).
_PRIVATE_COLUMNS = ("private_phase1_score", "private_leaderboard_score",
                    "private_interval_low", "private_interval_high")


def upgrade() -> None:
    # batch mode: SQLite cannot add several columns in one ALTER, Alembic copes either way
    with op.batch_alter_table("submissions") as batch:
        for name in _PRIVATE_COLUMNS:
            batch.add_column(sa.Column(name, sa.Double(), nullable=True))
        batch.add_column(sa.Column("private_tests", sa.JSON(), nullable=True))
    op.create_table(
        "reproductions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("fingerprint_matches", sa.Boolean(), nullable=False),
        sa.Column("harness_version", sa.String(length=64), nullable=True),
        sa.Column("table", sa.JSON(), nullable=False),
        sa.Column("log_tail", sa.Text(), nullable=False),
        sa.Column("private_fold_tests", sa.JSON(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_reproductions_submission_id_submissions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reproductions")),
    )
    op.create_index(op.f("ix_reproductions_submission_id_recorded_at"), "reproductions",
                    ["submission_id", "recorded_at"], unique=False)
    op.create_table(
        "phase_reveals",
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("phase", name=op.f("pk_phase_reveals")),
    )


def downgrade() -> None:
    op.drop_table("phase_reveals")
    op.drop_index(op.f("ix_reproductions_submission_id_recorded_at"), table_name="reproductions")
    op.drop_table("reproductions")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("private_tests")
        for name in reversed(_PRIVATE_COLUMNS):
            batch.drop_column(name)

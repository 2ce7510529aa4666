"""Predictions uploads and scoring jobs: the board's numbers are the organizers' own.

A submission now carries its run's predictions (``predictions``, one row per submission),
which a scoring job on the job queue scores with the organizers' data: a job has a ``kind``
("reproduce" or "score", one of each kind per submission at most), and a submission says
whether its numbers were ``computed`` by the organizers (a scoring job, or a pinned baseline)
or are a team's claim.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

#: The board's index (0007), which now starts its order with ``computed``.
OLD_BOARD = ["phase", "team_id", "leaderboard_score", "phase1_score", "submitted_at"]
NEW_BOARD = ["phase", "team_id", "computed", "leaderboard_score", "phase1_score",
             "submitted_at"]

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a column added in place: recreating ``submissions`` would drop the board's triggers
    op.add_column("submissions", sa.Column("computed", sa.Boolean(), nullable=False,
                                           server_default=sa.false()))
    # the rows so far are the teams' own numbers (claims), but the organizers' baselines
    op.execute("UPDATE submissions SET computed = true WHERE team_id IN "
               "(SELECT id FROM teams WHERE is_baseline = true)")
    op.drop_index(op.f("ix_submissions_" + "_".join(OLD_BOARD)), table_name="submissions")
    op.create_index(op.f("ix_submissions_" + "_".join(NEW_BOARD)), "submissions", NEW_BOARD,
                    unique=False)
    with op.batch_alter_table("reproduction_jobs") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False,
                                   server_default="reproduce"))
        batch.drop_constraint(op.f("uq_reproduction_jobs_submission_id"), type_="unique")
        batch.create_unique_constraint(op.f("uq_reproduction_jobs_submission_id_kind"),
                                       ["submission_id", "kind"])
    op.create_table(
        "predictions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("body_sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_predictions_submission_id_submissions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_predictions")),
        sa.UniqueConstraint("submission_id", name=op.f("uq_predictions_submission_id")),
    )


def downgrade() -> None:
    op.drop_table("predictions")
    op.execute("DELETE FROM reproduction_jobs WHERE kind <> 'reproduce'")
    with op.batch_alter_table("reproduction_jobs") as batch:
        batch.drop_constraint(op.f("uq_reproduction_jobs_submission_id_kind"), type_="unique")
        batch.create_unique_constraint(op.f("uq_reproduction_jobs_submission_id"),
                                       ["submission_id"])
        batch.drop_column("kind")
    op.drop_index(op.f("ix_submissions_" + "_".join(NEW_BOARD)), table_name="submissions")
    op.create_index(op.f("ix_submissions_" + "_".join(OLD_BOARD)), "submissions", OLD_BOARD,
                    unique=False)
    op.drop_column("submissions", "computed")

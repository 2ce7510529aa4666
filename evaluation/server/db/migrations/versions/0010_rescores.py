"""Re-scoring after a harness fix, and fair quotas.

A phase's scored submissions may be scored again under a new harness version (``admin
rescore``): a ``rescores`` row is the batch, a ``rescore_results`` row one submission's new
numbers, kept pending until the organizers apply the batch; a job of kind "rescore" scores
it (``reproduction_jobs.rescore_id`` names its batch). A submission says which harness
version scored its numbers (``harness_version``) and keeps the numbers of the version before
(``previous_*``) until the organizers drop them. A job's ``cause`` says whose reason made it
fail ("platform" or "team"): a submission that failed for the platform's reason does not count
against its team's daily limit.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

#: The columns added to ``submissions`` (in place: recreating it would drop the board's
#: triggers).
SUBMISSION_COLUMNS: tuple[tuple[str, sa.types.TypeEngine], ...] = (
    ("harness_version", sa.String(length=64)),
    ("previous_harness_version", sa.String(length=64)),
    ("previous_leaderboard_score", sa.Double()),
    ("previous_phase1_score", sa.Double()),
)


def upgrade() -> None:
    for name, kind in SUBMISSION_COLUMNS:
        op.add_column("submissions", sa.Column(name, kind, nullable=True))
    op.add_column("reproduction_jobs", sa.Column("cause", sa.String(length=16), nullable=True))
    op.add_column("reproduction_jobs", sa.Column("rescore_id", sa.Integer(), nullable=True))
    op.create_table(
        "rescores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("harness_version", sa.String(length=64), nullable=False),
        sa.Column("jobs", sa.Integer(), nullable=False),
        sa.Column("reproductions", sa.Integer(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dropped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rescores")),
    )
    op.create_index(op.f("ix_rescores_phase"), "rescores", ["phase"], unique=False)
    op.create_table(
        "rescore_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rescore_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("harness_version", sa.String(length=64), nullable=True),
        sa.Column("phase1_score", sa.Double(), nullable=False),
        sa.Column("leaderboard_score", sa.Double(), nullable=False),
        sa.Column("interval_low", sa.Double(), nullable=False),
        sa.Column("interval_high", sa.Double(), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("num_folds", sa.Integer(), nullable=False),
        sa.Column("flagged", sa.Boolean(), nullable=False),
        sa.Column("run_hash", sa.String(length=64), nullable=False),
        sa.Column("k", sa.Integer(), nullable=True),
        sa.Column("n_users", sa.JSON(), nullable=True),
        sa.Column("users_sha256", sa.JSON(), nullable=True),
        sa.Column("blob", sa.LargeBinary(), nullable=True),
        sa.Column("old_harness_version", sa.String(length=64), nullable=True),
        sa.Column("old_phase1_score", sa.Double(), nullable=True),
        sa.Column("old_leaderboard_score", sa.Double(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["rescore_id"], ["rescores.id"],
                                name=op.f("fk_rescore_results_rescore_id_rescores"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_rescore_results_submission_id_submissions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rescore_results")),
        sa.UniqueConstraint("rescore_id", "submission_id",
                            name=op.f("uq_rescore_results_rescore_id_submission_id")),
    )


def downgrade() -> None:
    op.drop_table("rescore_results")
    op.drop_index(op.f("ix_rescores_phase"), table_name="rescores")
    op.drop_table("rescores")
    op.execute("DELETE FROM reproduction_jobs WHERE kind = 'rescore'")
    with op.batch_alter_table("reproduction_jobs") as batch:
        batch.drop_column("rescore_id")
        batch.drop_column("cause")
    for name, _ in reversed(SUBMISSION_COLUMNS):
        op.drop_column("submissions", name)

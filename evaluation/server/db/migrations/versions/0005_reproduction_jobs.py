"""The reproduction workers' queue: one job per submission to reproduce.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reproduction_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_id", sa.String(length=64), nullable=True),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_reproduction_jobs_submission_id_submissions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reproduction_jobs")),
        sa.UniqueConstraint("submission_id", name=op.f("uq_reproduction_jobs_submission_id")),
    )
    op.create_index(op.f("ix_reproduction_jobs_state_id"), "reproduction_jobs",
                    ["state", "id"], unique=False)
    op.create_index(op.f("ix_reproduction_jobs_phase_state"), "reproduction_jobs",
                    ["phase", "state"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_reproduction_jobs_phase_state"), table_name="reproduction_jobs")
    op.drop_index(op.f("ix_reproduction_jobs_state_id"), table_name="reproduction_jobs")
    op.drop_table("reproduction_jobs")

"""Per-user values and costs of submissions (uploaded, or trusted from a reproduction).

Revision ID: 0006
Revises: 0004
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_values",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("trusted", sa.Boolean(), nullable=False),
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("run_hash", sa.String(length=64), nullable=False),
        sa.Column("k", sa.Integer(), nullable=True),
        sa.Column("n_users", sa.JSON(), nullable=True),
        sa.Column("users_sha256", sa.JSON(), nullable=True),
        sa.Column("blob", sa.LargeBinary(), nullable=True),
        sa.Column("blob_sha256", sa.String(length=64), nullable=True),
        sa.Column("costs", sa.JSON(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_user_values_submission_id_submissions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_values")),
    )
    op.create_index(op.f("ix_user_values_submission_id_recorded_at"), "user_values",
                    ["submission_id", "recorded_at"], unique=False)
    op.create_index(op.f("ix_user_values_phase_run_hash"), "user_values",
                    ["phase", "run_hash"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_user_values_phase_run_hash"), table_name="user_values")
    op.drop_index(op.f("ix_user_values_submission_id_recorded_at"), table_name="user_values")
    op.drop_table("user_values")

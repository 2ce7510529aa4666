"""Each reproduced submission's results under the competition's declared alternative
protocols: per-user values (or the reason it could not run) and cost.

Revision ID: 0014
Revises: 0009
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # no board_changes trigger: a reproduction writes its results in the transaction that
    # records its verdict, which changes the board already
    op.create_table(
        "robustness_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("protocol", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("k", sa.Integer(), nullable=True),
        sa.Column("n_users", sa.JSON(), nullable=True),
        sa.Column("users_sha256", sa.JSON(), nullable=True),
        sa.Column("blob", sa.LargeBinary(), nullable=True),
        sa.Column("blob_sha256", sa.String(length=64), nullable=True),
        sa.Column("cost", sa.JSON(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"],
                                name=op.f("fk_robustness_results_submission_id_submissions"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_robustness_results")),
    )
    op.create_index(op.f("ix_robustness_results_submission_id_protocol_recorded_at"),
                    "robustness_results", ["submission_id", "protocol", "recorded_at"])
    op.create_index(op.f("ix_robustness_results_phase_protocol"), "robustness_results",
                    ["phase", "protocol"])


def downgrade() -> None:
    op.drop_index(op.f("ix_robustness_results_phase_protocol"),
                  table_name="robustness_results")
    op.drop_index(op.f("ix_robustness_results_submission_id_protocol_recorded_at"),
                  table_name="robustness_results")
    op.drop_table("robustness_results")

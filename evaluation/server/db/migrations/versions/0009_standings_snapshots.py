"""The last statistics computed of each board, shown at once after a restart.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # not among the tables a board reads (no board_changes trigger): writing the statistics
    # computed of a board changes no board
    op.create_table(
        "standings_snapshots",
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("revealed", sa.Boolean(), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("phase", "revealed", name=op.f("pk_standings_snapshots")),
    )


def downgrade() -> None:
    op.drop_table("standings_snapshots")

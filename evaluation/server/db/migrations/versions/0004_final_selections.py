"""Final selections (when a team marked a submission as final) and phase publications.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("final_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "phase_publications",
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("phase", name=op.f("pk_phase_publications")),
    )


def downgrade() -> None:
    op.drop_table("phase_publications")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("final_at")

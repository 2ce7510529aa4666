"""Phases that carry over and fact sheets: a carried submission names the one it came from,
a final selection keeps its fact sheet, and each carry is recorded once.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

#: The columns added to ``submissions`` (in place: recreating the table would drop the
#: board's triggers), and their types.
COLUMNS = (
    ("carried_from", sa.Integer),
    ("carried_phase", lambda: sa.String(length=80)),
    ("fact_description", sa.Text),
    ("fact_code_url", lambda: sa.String(length=500)),
    ("fact_commit", lambda: sa.String(length=40)),
    ("fact_sheet_at", lambda: sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("submissions", sa.Column(name, kind(), nullable=True))
    # not a table the board reads: the carried rows themselves change the board
    op.create_table(
        "phase_carries",
        sa.Column("phase", sa.String(length=80), nullable=False),
        sa.Column("source", sa.String(length=80), nullable=False),
        sa.Column("rule", sa.String(length=16), nullable=False),
        sa.Column("carried", sa.Integer(), nullable=False),
        sa.Column("carried_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("phase", name=op.f("pk_phase_carries")),
    )


def downgrade() -> None:
    op.drop_table("phase_carries")
    # the carried rows go with the columns that say what they are (and what hangs on them,
    # whether or not the database enforces the foreign keys)
    carried = "SELECT id FROM submissions WHERE carried_from IS NOT NULL"
    for table in ("reproduction_jobs", "reproductions", "user_values", "predictions"):
        op.execute(f"DELETE FROM {table} WHERE submission_id IN ({carried})")
    op.execute("DELETE FROM submissions WHERE carried_from IS NOT NULL")
    for name, _ in reversed(COLUMNS):
        op.drop_column("submissions", name)

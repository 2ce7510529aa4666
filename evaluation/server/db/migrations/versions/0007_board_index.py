"""The board: an index for each team's best submission, and a counter of the board's changes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COLUMNS = ["phase", "team_id", "leaderboard_score", "phase1_score", "submitted_at"]
#: The tables a board reads: a change of any of them changes the board.
BOARD_TABLES = ("submissions", "teams", "phase_reveals", "phase_publications",
                "user_values")
EVENTS = ("INSERT", "UPDATE", "DELETE")


def upgrade() -> None:
    # the board reads each team's best submission, count and last time from this index alone:
    # a submission's row holds its body, which SQLite would otherwise read past for every row
    op.create_index(op.f("ix_submissions_" + "_".join(COLUMNS)), "submissions", COLUMNS,
                    unique=False)
    op.create_table(
        "board_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_board_changes")),
    )
    op.execute("INSERT INTO board_changes (id, version) VALUES (1, 0)")
    if op.get_bind().dialect.name == "sqlite":
        # every write, from any process or tool, raises the version in its own transaction
        # (SQLite has one writer at a time: the row costs no waiting)
        for table in BOARD_TABLES:
            for event in EVENTS:
                op.execute(f"CREATE TRIGGER board_change_{table}_{event.lower()} AFTER {event} "
                           f"ON {table} BEGIN UPDATE board_changes SET version = version + 1 "
                           f"WHERE id = 1; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in BOARD_TABLES:
            for event in EVENTS:
                op.execute(f"DROP TRIGGER IF EXISTS board_change_{table}_{event.lower()}")
    op.drop_table("board_changes")
    op.drop_index(op.f("ix_submissions_" + "_".join(COLUMNS)), table_name="submissions")

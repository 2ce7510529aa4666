"""The leaderboard database's Alembic migrations (run by ``evaluation.server.db.upgrade``)."""

"""The leaderboard database's Alembic migrations (run by ``evaluation.server.upgrade``)."""

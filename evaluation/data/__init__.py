"""Datasets in the EvalRS schema: tables, sources, validation."""

from evaluation.data._parquet import read_tables, write_tables
from evaluation.data._schema import validate_tables
from evaluation.data._sources import load_source, source_options
from evaluation.data._synthetic import synthetic_tables
from evaluation.data._tables import (
    EVENT_COLUMNS,
    TRACK_COLUMNS,
    USER_COLUMNS,
    Tables,
    TrackVectors,
)

__all__ = [
    "EVENT_COLUMNS",
    "TRACK_COLUMNS",
    "Tables",
    "TrackVectors",
    "USER_COLUMNS",
    "load_source",
    "read_tables",
    "source_options",
    "synthetic_tables",
    "validate_tables",
    "write_tables",
]

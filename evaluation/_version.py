"""The harness version; part of every run hash."""

__version__ = "0.1.0"

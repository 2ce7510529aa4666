"""The lock held while the harness builds a Python syntax tree in a thread.

CPython 3.11 can fail with ``SystemError: AST constructor recursion depth mismatch`` when two
threads build syntax trees (``ast``) at the same time. The harness builds them in threads when
it reads a participant's file and when NumPy parses an array file's header
(``ast.literal_eval``), so both hold this lock. It imports nothing, so that any layer may use it.
"""

from __future__ import annotations

import threading

#: One syntax tree built at a time in this process, for CPython 3.11's sake.
SYNTAX_TREES = threading.Lock()

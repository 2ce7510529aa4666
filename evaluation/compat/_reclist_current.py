"""``reclist.current`` of reclist 0.x: the process-wide object holding the path of the report
a RecList run writes."""

from __future__ import annotations


class Current:
    """Holds ``report_path`` (``None`` until a reclist 0.x RecList wrote a report)."""

    def __init__(self) -> None:
        self._report_path: str | None = None

    @property
    def report_path(self) -> str | None:
        return self._report_path


#: The one instance reclist 0.x shared.
current = Current()

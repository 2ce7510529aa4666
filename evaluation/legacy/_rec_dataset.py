"""``RecDataset``: the 2022 container of one fold's frames, which 2022 RecLists read."""

from __future__ import annotations

from typing import Any


class RecDataset:
    """The 2022 ``RecDataset``: a fold's frames under the 2022 attribute names.

    ``load(x_train=..., x_test=..., y_test=..., users=..., items=...)`` sets them, as the
    2022 runner did; ``x_train``, ``x_test``, ``y_test`` and ``catalog`` read them back.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._x_train: Any = None
        self._y_train: Any = None
        self._x_test: Any = None
        self._y_test: Any = None
        self._catalog: dict[str, Any] = {}
        if kwargs:
            self.load(**kwargs)

    def load(self, **kwargs: Any) -> None:
        """Keep the fold's frames: ``x_train``, ``x_test``, ``y_test``, ``users``, ``items``."""
        self._x_train = kwargs.get("x_train")
        self._y_train = kwargs.get("y_train")
        self._x_test = kwargs.get("x_test")
        self._y_test = kwargs.get("y_test")
        self._catalog = {"users": kwargs.get("users"), "items": kwargs.get("items")}

    @property
    def x_train(self) -> Any:
        return self._x_train

    @property
    def y_train(self) -> Any:
        return self._y_train

    @property
    def x_test(self) -> Any:
        return self._x_test

    @property
    def y_test(self) -> Any:
        return self._y_test

    @property
    def catalog(self) -> dict[str, Any]:
        return self._catalog

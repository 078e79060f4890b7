"""An open store read by index or in its own order, as a format read case times it.

A sequential round starts a new iteration (after the round's own preparation: evicting the
page cache, or dropping a client's cache); a round that reads past the end starts a new epoch
(a calibrated round may read the store more than once). Shared by the local and S3 read cases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class StoreReads:
    def __init__(
        self,
        order: str,
        open_reader: Callable[[], Any],
        prepare_round: Callable[[Any], None] = lambda reader: None,
    ) -> None:
        self.order = order
        self._open = open_reader
        self._prepare_round = prepare_round
        self.reader: Any = None
        self.it: Any = None

    def reopen(self) -> None:
        self.reader = self._open()

    def close_reader(self) -> None:
        self.reader.close()

    def stop_iteration(self) -> None:
        iterator, self.it = self.it, None
        if iterator is not None and hasattr(iterator, "close"):
            iterator.close()  # releases a generator's cursor or file before the reader closes

    def before_round(self) -> None:
        self.stop_iteration()
        self._prepare_round(self.reader)
        if self.order == "sequential":
            self.it = iter(self.reader)

    def close(self) -> None:
        self.stop_iteration()
        self.reader.close()

    def get(self, i: int) -> Any:
        return self.reader[i]

    def step(self, _: int) -> Any:
        try:
            return next(self.it)
        except StopIteration:  # a new epoch
            self.stop_iteration()
            self.it = iter(self.reader)
            return next(self.it)

    def fetch(self) -> Callable[[int], Any]:
        """What a round calls per item: the next record in order, or the record at an index."""
        return self.step if self.order == "sequential" else self.get

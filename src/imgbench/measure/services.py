"""Session services: something a case needs that outlives it (an S3 server), owned by the runner.

A case names the services it needs (``Case.services``, e.g. ``("s3",)``). The runner (the pytest
session) starts each service on the first case that needs it and stops it when the session
ends; the case gets a picklable *handle* (``ctx.services[name]``; in a worker fork too, through
its job), and its row gets the handle's ``columns()`` (e.g. the endpoint it used).

* a service that cannot exist here (its program is not installed) raises
  :class:`ServiceUnavailableError`: the case is a skipped row with that reason;
* a service that failed to start, or was lost during the session, raises anything else: the
  case is a failed row with that one line, and so is every later case that needs it (a service
  is started once per session, never restarted), while every finished row stays.

Adding a service: a class with ``acquire() -> handle``, ``check()`` (raise when lost) and
``stop()``, and one entry in :data:`SERVICES`.

A *variant* of a service is named ``"base@variant"`` (e.g. ``"s3@rtt50ms-unlimited"``: the
session's S3 server behind a shaped network path): the runner starts the base service first and
asks it for ``variant(name) -> Service``; the variant shares what the base started, and is
stopped before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from imgbench.attrs import load_attr

SERVICES: dict[str, str] = {
    "s3": "imgbench.objectstore.session:S3Service",
}


class ServiceUnavailableError(RuntimeError):
    """The service cannot run here (e.g. its program is missing): cases skip with the reason."""


class Service(Protocol):
    def acquire(self) -> Any:
        """The handle cases use (picklable, with ``columns() -> dict`` for the row); starts the
        service on first use. Raises ServiceUnavailableError, or the reason it cannot serve."""

    def check(self) -> None:
        """Raise the one-line reason if the service started and is gone."""

    def stop(self) -> None: ...


def _load(name: str) -> Service:
    if name not in SERVICES:
        raise ValueError(f"unknown service {name!r}; known: {sorted(SERVICES)}")
    service: Service = load_attr(SERVICES[name])()
    return service


class Services:
    """The session's services, each started on first use and stopped with the session."""

    def __init__(self) -> None:
        self._started: dict[str, Service] = {}
        self._handles: dict[str, Any] = {}  # the last handle each service gave

    def get(self, name: str) -> Service:
        if name not in self._started:
            base, at, variant = name.partition("@")
            if at:
                parent = self.get(base)
                if not hasattr(parent, "variant"):
                    raise ValueError(f"service {base!r} has no variants (asked for {name!r})")
                self._started[name] = parent.variant(variant)
            else:
                self._started[name] = _load(name)
        return self._started[name]

    def handles(self, names: tuple[str, ...]) -> dict[str, Any]:
        """A handle per service named; raises as :meth:`Service.acquire` does."""
        for name in names:
            self._handles[name] = self.get(name).acquire()
        return {name: self._handles[name] for name in names}

    def last_handles(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The handles these services gave earlier in the session (for a failed case's row:
        the endpoint a lost server had)."""
        return {name: self._handles[name] for name in names if name in self._handles}

    def lost(self, names: tuple[str, ...]) -> str | None:
        """The reason one of these services (already started) is gone, or None."""
        for name in names:
            service = self._started.get(name)
            if service is None:
                continue
            try:
                service.check()
            except Exception as exc:
                return str(exc) or type(exc).__name__
        return None

    def stop(self) -> None:
        started, self._started = self._started, {}
        self._handles.clear()
        errors: list[BaseException] = []
        for service in reversed(list(started.values())):  # a variant before its base
            try:
                service.stop()
            except Exception as exc:  # every service is stopped; the first error is raised
                errors.append(exc)
        if errors:
            raise errors[0]


def row_columns(handles: Mapping[str, Any]) -> dict[str, Any]:
    """The row columns the handles fill (``columns()`` of each)."""
    columns: dict[str, Any] = {}
    for handle in handles.values():
        if hasattr(handle, "columns"):
            columns.update(handle.columns())
    return columns

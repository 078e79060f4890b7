"""The measuring engine, free of pytest and typer (docs/architecture.md).

Entry points: :class:`imgbench.measure.settings.Settings` (every control, resolved once by
``imgbench.controls.resolve``) and :class:`imgbench.measure.manager.Manager` (``measure(case) ->
Measurement | Skipped | Failed``). Stage code raises :mod:`imgbench.measure.errors`' ``Skip``
and ``CaseFailed``. Nothing is imported here, so that a light module (``errors``) stays light.
"""

"""The ``sdckit`` command line: one module per command (``risk``, ``protect``, ``table``).

:mod:`sdckit.cli.app` holds the :class:`typer.Typer` application and ``main()``, the console
entry point.  Every command reports an :class:`~sdckit.errors.SdcError` as one line on standard
error and exits with status 2 (see :mod:`sdckit.cli._common`).
"""

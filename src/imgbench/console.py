"""The terminal every command prints to, and the one way a command fails: one clear line, no traceback."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console()
err = Console(stderr=True)


def fail(message: object, code: int = 2) -> typer.Exit:
    """Print ``error: message`` on stderr and return the Exit to raise (exit 2: unusable input)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)

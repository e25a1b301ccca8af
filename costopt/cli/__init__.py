"""Command line of costopt: one module per group of commands, mounted by `main.py`.

`app` (the whole Typer app, every command mounted) is built on first use; `main` mounts only the
module of the command being run, so a command imports only what it needs.
"""

from __future__ import annotations

from typing import Any

from costopt.cli.main import main

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from costopt.cli.main import build_app

        return build_app()
    raise AttributeError(f"module 'costopt.cli' has no attribute {name!r}")

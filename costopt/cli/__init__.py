"""Command line of costopt: one module per group of commands, mounted by `main.py`."""

from .main import app, main

__all__ = ["app", "main"]

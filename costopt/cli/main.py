"""The `costopt` command: mounts each command module's Typer on one app and runs it.

Every user error (`CostoptError`) becomes one line on stderr and exit code 2; an infeasible request
exits 1 after showing the nearest feasible design; a command-line usage error (unknown option, bad
value) is one line on stderr and exit code 2, and under `--format json` the same as JSON on stdout.
`--format json` prints JSON only.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

try:  # typer up to 0.2x depends on click; later releases carry their own copy of it
    from click import Context
    from click.exceptions import UsageError
except ImportError:  # pragma: no cover - depends on the installed typer
    from typer._click import Context
    from typer._click.exceptions import UsageError

from .. import __version__
from . import accuracy, bom, catalog, design, profile, purchasing
from .common import one_line

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Choose the GPU cluster to buy or rent for data-parallel training: predict, price, solve.")
for _module in (design, bom, purchasing, accuracy, profile):
    app.add_typer(_module.app)
app.add_typer(catalog.app, name="catalog")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"costopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Optional[bool] = typer.Option(None, "--version", callback=_show_version, is_eager=True,
                                                 help="Print the version and exit.")) -> None:
    """Choose the GPU cluster to buy or rent for data-parallel training: predict, price, solve."""


def _wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for `--format json` (read before parsing, for usage errors)."""
    for i, a in enumerate(argv):
        if a == "--format" and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
        if a == "--format=json":
            return True
    return False


def _plain_flags(command, name: str = "costopt") -> None:
    """Flags (`--timings`, `--help`, `--price-cut/--no-price-cut`) take no value: show no type for them in
    the help (typer would print `<bool>` beside each). Sets the public `metavar` of our own options."""
    ctx = Context(command, info_name=name)
    for param in list(getattr(command, "params", [])) + [command.get_help_option(ctx)]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub_name, sub in (getattr(command, "commands", None) or {}).items():
        _plain_flags(sub, sub_name)


def main(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors become one line (`error: ...`) instead of a boxed panel."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(app)
    _plain_flags(command)
    try:
        code = command.main(args=args, prog_name="costopt", standalone_mode=False)
    except UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:  # `costopt` alone prints the help
            typer.echo(exc.ctx.get_help())
            sys.exit(2)
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        msg = one_line(exc.format_message())
        typer.echo(f"error: {msg}{where}", err=True)
        if _wants_json(args):
            typer.echo(json.dumps({"error": msg, "reason": "usage", "exit_code": 2}, indent=2))
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

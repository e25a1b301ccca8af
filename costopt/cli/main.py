"""The `costopt` command: mounts each command module's Typer on one app and runs it.

Every user error (`CostoptError`) becomes one line on stderr and exit code 2; an infeasible request
exits 1 after showing the nearest feasible design; a command-line usage error (unknown option, bad
value) is one line on stderr and exit code 2. `--format json` prints JSON only.
"""

from __future__ import annotations

import sys

import typer

try:  # typer up to 0.2x depends on click; later releases carry their own copy of it
    from click.exceptions import UsageError
except ImportError:  # pragma: no cover - depends on the installed typer
    from typer._click.exceptions import UsageError

from . import accuracy, bom, catalog, design, profile, purchasing

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Choose the GPU cluster to buy or rent for data-parallel training: predict, price, solve.")
for _module in (design, bom, purchasing, accuracy, profile):
    app.add_typer(_module.app)
app.add_typer(catalog.app, name="catalog")


def main(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors become one line (`error: ...`) instead of a boxed panel."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="costopt", standalone_mode=False)
    except UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:  # `costopt` alone prints the help
            typer.echo(exc.ctx.get_help())
            sys.exit(2)
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        typer.echo(f"error: {exc.format_message()}{where}", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

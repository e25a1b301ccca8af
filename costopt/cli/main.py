"""The `costopt` command: mounts each command module's Typer on one app and runs it.

Every user error (`CostoptError`) becomes one line on stderr and exit code 2; an infeasible request
exits 1 after showing the nearest feasible design; a command-line usage error (unknown option, bad
value) is one line on stderr and exit code 2, and under `--format json` the same as JSON on stdout.
`--format json` prints JSON only.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import MutableMapping
from typing import Optional

import typer

try:  # typer releases that carry their own copy of click raise its classes, even when click is installed too
    from typer._click import Context
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - depends on the installed typer: older ones depend on click
    from click import Context
    from click.exceptions import UsageError

import importlib

from costopt.core.version import __version__
from costopt.cli.common import one_line

# Command modules in help order, and the commands each one defines: a run imports only the module of
# its command (the help and unknown commands mount them all).
_MODULES = ("design", "bom", "purchasing", "sweep", "accuracy", "profile", "catalog")
_COMMANDS = {
    "solve": "design", "predict": "design", "models": "design", "bom": "bom",
    "compare": "purchasing", "rent-vs-buy": "purchasing", "report": "purchasing", "export": "purchasing",
    "sweep": "sweep",
    "validate": "accuracy", "calibrate": "accuracy", "profile": "profile", "catalog": "catalog",
}
_HELP = "Choose the GPU cluster to buy or rent for data-parallel training: predict, price, solve."


# numpy's OpenBLAS starts a pool of worker threads (one per core) when numpy is imported, and they
# spin, waiting for work, on CPU time the command pays for. The commands do elementwise array work;
# their only BLAS calls (calibrate's least squares, a few dot products) are small. Measured on this
# project's 2-core machine, shared (2026-12-01, CPU of the process): the headline solve 0.40 -> 0.30 s,
# `import numpy` 0.15 -> 0.11 s, calibrate of 100,000 rows 42 -> 27 s (wall 54 -> 30 s); validate and
# a 3.5 M-design solve unchanged (6.7 s, 5.8 s). One thread also makes BLAS sums the same whatever the
# number of cores (calibrate's fits moved in the 11th digit). So the command line asks for one BLAS
# thread, unless the user chose a number (OpenBLAS reads OPENBLAS_NUM_THREADS, then GOTO_NUM_THREADS,
# then OMP_NUM_THREADS) or the command is `profile` (PyTorch may use OpenBLAS for a CPU profile).
# `import costopt` (the Python API) leaves the environment alone.
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread(environ: MutableMapping[str, str], command: str | None) -> bool:
    """Set OPENBLAS_NUM_THREADS=1 in `environ` unless a BLAS thread count is already set there or the
    command is `profile`. Returns whether it set it."""
    if command == "profile" or any(v in environ for v in _BLAS_THREAD_VARS):
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"costopt {__version__}")
        raise typer.Exit(0)


def _root(version: Optional[bool] = typer.Option(None, "--version", callback=_show_version, is_eager=True,
                                                 help="Print the version and exit.")) -> None:
    """Choose the GPU cluster to buy or rent for data-parallel training: predict, price, solve."""
    from costopt.core.checks import force_overwrite

    force_overwrite(False)  # each command starts without --force (a command that takes it sets it)


def build_app(modules: tuple[str, ...] = _MODULES) -> typer.Typer:
    """The `costopt` Typer app with the given command modules mounted (all by default)."""
    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help=_HELP)
    app.callback()(_root)
    for name in _MODULES:
        if name not in modules:
            continue
        module = importlib.import_module(f".{name}", __package__)
        if name == "catalog":
            app.add_typer(module.app, name="catalog")
        else:
            app.add_typer(module.app)
    return app


def _command_of(args: list[str]) -> str | None:
    """The first word of the command line that is not an option (the command, if it names one)."""
    return next((a for a in args if not a.startswith("-")), None)


def _modules_for(args: list[str]) -> tuple[str, ...]:
    """The command module the command line needs: the first word that names a command (none for
    `costopt --version`, which prints before any command is read)."""
    command = _command_of(args)
    if command is not None:
        return (_COMMANDS[command],) if command in _COMMANDS else _MODULES
    return () if "--version" in args else _MODULES


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


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so that `finally` blocks and temporary folders are cleaned
    up as for Ctrl-C (the default action would end the process on the spot)."""


def _raise_on(exc_type: type[BaseException]):
    """A signal handler that raises `exc_type` where the main thread is, held while a temporary file is being
    taken in charge (core/interrupts.py)."""
    def handler(signum, frame) -> None:
        from costopt.core.interrupts import deliver

        deliver(exc_type())
    return handler


# Exit codes beyond 0/1/2 (docs/commands.md): the shell's 128 + signal number.
EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_BROKEN_PIPE = 130, 143, 141


def _quiet_broken_pipe() -> None:
    """stdout was closed by its reader (`costopt ... | head -1`): nothing more can be shown. Point fd 1 at
    /dev/null so the interpreter's final flush does not fail again, and exit without a message."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def _is_broken_pipe(exc: BaseException | None) -> bool:
    import errno

    while exc is not None:
        if isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
            return True
        exc = exc.__context__
    return False


def main(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors become one line (`error: ...`) instead of a boxed panel. A closed
    stdout ends quietly (exit 141), Ctrl-C with exit 130, SIGTERM with exit 143 (temporary files removed;
    a solver child process ends with its parent, costopt/core/children.py)."""
    import signal

    try:
        signal.signal(signal.SIGTERM, _raise_on(Terminated))
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C as Python raises it, deferred alike
            signal.signal(signal.SIGINT, _raise_on(KeyboardInterrupt))
    except (ValueError, OSError):  # not the main thread (an embedding program): leave its handlers alone
        pass
    try:
        _main(argv)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except SystemExit as exc:
        if exc.code == 1 and _is_broken_pipe(exc.__context__):  # click turns EPIPE into exit 1
            _quiet_broken_pipe()
        raise
    except Terminated:
        try:
            sys.stderr.write("terminated\n")
        except OSError:
            pass
        sys.exit(EXIT_TERMINATED)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)


def _main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if "numpy" not in sys.modules:  # once numpy is loaded, the setting would only reach child processes
        one_blas_thread(os.environ, _command_of(args))
    command = typer.main.get_command(build_app(_modules_for(args)))
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
            # docs/commands.md: every exit-2 error under --format json says "reason": "input"
            typer.echo(json.dumps({"error": msg, "reason": "input", "exit_code": 2}, indent=2))
        sys.exit(2)
    except typer.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            typer.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        typer.echo("aborted", err=True)
        sys.exit(1)
    if code == EXIT_INTERRUPTED:  # typer turns Ctrl-C into Exit(130) itself, silently
        typer.echo("interrupted", err=True)
    sys.exit(code if isinstance(code, int) else 0)


def __getattr__(name: str):
    """`app`: the whole Typer app (every command mounted), built on first use."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

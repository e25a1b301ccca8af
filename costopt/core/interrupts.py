"""Signals that arrive while a temporary file or folder is being made wait until it is in someone's charge.

The command line turns SIGTERM into an exception and SIGINT into KeyboardInterrupt (cli/main.py), so that
`finally` blocks remove temporary files. One raised between `mkstemp`/`mkdtemp` returning and the code that
removes the file (the name not yet stored, the clean-up not yet set up) would leave it behind. Inside
`signals_held()` the CLI's handlers record the signal instead of raising (`deliver`); it is raised as the
outermost held block ends, where the clean-up is in place. Blocking the signal with the thread's mask would
not do: the process's other threads (BLAS, solver readers) still take it and Python runs the handler in the
main thread all the same.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

_held = 0
_pending: list[Callable[[], None]] = []


@contextmanager
def signals_held() -> Iterator[None]:
    """Defer what `deliver` is given until the outermost held block ends (then the first one given runs)."""
    global _held
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if _held == 0 and _pending:
            act = _pending[0]
            _pending.clear()
            act()


def deliver(act: Callable[[], None]) -> None:
    """Run `act` (it raises the signal's exception) now, or when the held block ends if one is open."""
    if _held:
        _pending.append(act)
        return
    act()

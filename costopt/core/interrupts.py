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
from typing import Iterator

_held = 0
_pending: BaseException | None = None  # the first signal's exception while held


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold what `deliver` is given until the outermost held block ends, then raise the first one."""
    global _held, _pending
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if _held == 0 and _pending is not None:
            exc, _pending = _pending, None
            raise exc


def deliver(exc: BaseException) -> None:
    """Raise `exc` (a signal's exception) now, or when the held block ends if one is open."""
    global _pending
    if _held:
        _pending = _pending or exc
        return
    raise exc

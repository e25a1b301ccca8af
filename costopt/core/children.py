"""Child processes (the CBC solver PuLP starts) end with their parent.

PuLP starts CBC with `subprocess.Popen` and waits; if costopt is killed (SIGKILL, or SIGTERM before
it could clean up), CBC would run on as an orphan, for up to its time limit, holding a core. On Linux
each child started through PuLP's CBC interface is given the parent-death signal SIGKILL
(`prctl(PR_SET_PDEATHSIG)`, set in the child between fork and exec): the kernel ends it when the
thread that started it exits, whatever the way. `cbc_dies_with_parent()` installs this once, for PuLP's
`coin_api` module only (its own view of `subprocess`; no other module's `Popen` changes). Elsewhere it
does nothing (the SIGTERM handler of the CLI still unwinds, and PuLP's wait ends with the child).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import types

PR_SET_PDEATHSIG = 1
_installed = False


def _pdeathsig_setter():
    """A preexec function for Popen that sets the parent-death signal, or None where it cannot be set."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, in the parent: the child only calls it
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl: end now
            os._exit(1)

    return preexec


def popen_dying_with_parent(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen`, with the child ended by the kernel when this process (thread) ends."""
    preexec = _pdeathsig_setter()
    if preexec is not None and kwargs.get("preexec_fn") is None:
        kwargs["preexec_fn"] = preexec
    return subprocess.Popen(*args, **kwargs)


def cbc_dies_with_parent() -> bool:
    """Make PuLP's CBC children end with costopt (idempotent). Returns whether it is in effect."""
    global _installed
    if _installed:
        return True
    if _pdeathsig_setter() is None:
        return False
    try:
        from pulp.apis import coin_api
    except ImportError:  # pragma: no cover - pulp is a dependency
        return False
    view = types.SimpleNamespace(**{k: getattr(subprocess, k) for k in dir(subprocess) if not k.startswith("__")})
    view.Popen = functools.wraps(subprocess.Popen)(popen_dying_with_parent)
    coin_api.subprocess = view
    _installed = True
    return True

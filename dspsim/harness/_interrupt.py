"""Ctrl-C that numba's compiler swallows, delivered again.

numba (``cache=True``) receives the object code of each compiled function through a ctypes
callback (``CPUCodeLibrary._object_compiled_hook``, numba/core/codegen.py). An exception raised
inside a ctypes callback cannot propagate: ctypes reports "Exception ignored on calling ctypes
callback function" through ``sys.unraisablehook`` and returns. A Ctrl-C that lands there is lost;
the library is left without its object code, and saving the cache then fails with
``RuntimeError: no compiled object yet for <Library ...>``, so the interruption either vanishes or
turns into an error of the case being run.

:class:`SwallowedInterrupts` records such KeyboardInterrupts while it is active; the run calls
:meth:`SwallowedInterrupts.check` between cases, which raises KeyboardInterrupt again, and
:func:`is_swallowed_interrupt` recognises numba's RuntimeError.
"""
from __future__ import annotations

import sys

_NUMBA_LOST_OBJECT = "no compiled object yet for <Library"


def is_swallowed_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is numba's error after a KeyboardInterrupt was swallowed by its compile callback."""
    return isinstance(exc, RuntimeError) and str(exc).startswith(_NUMBA_LOST_OBJECT)


class SwallowedInterrupts:
    """Context manager: records the KeyboardInterrupts that ``sys.unraisablehook`` receives.

    The hook itself only sets a flag: raising there, or signalling the main thread from there, is
    swallowed again (the hook runs inside the same callback)."""

    def __init__(self):
        self.seen = False
        self._previous = None

    def _hook(self, unraisable):
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            self.seen = True
            return
        self._previous(unraisable)

    def check(self):
        """Raise KeyboardInterrupt if one was swallowed since the block began."""
        if self.seen:
            raise KeyboardInterrupt("interrupted during a numba compile")

    def __enter__(self):
        self._previous = sys.unraisablehook
        sys.unraisablehook = self._hook
        return self

    def __exit__(self, *exc):
        sys.unraisablehook = self._previous
        return False

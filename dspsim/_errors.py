"""Every error of a public function names it: the decorator :func:`names_its_errors`.

The public wrappers validate their arguments and raise ``ValueError`` / ``TypeError`` messages that
start with the function's name and state the rule. What slips past their checks (a helper's own
message, ``float("bogus")``, numpy's "only 0-dimensional arrays can be converted", Python's
``OverflowError`` for a 2^63 passed where C needs a long, numba refusing an argument type) would
reach the user without the name. The decorator prefixes such errors with the function's name,
keeping their text, and turns the last two into ``ValueError`` / ``TypeError``, so that a caller
can catch bad input with ``except (ValueError, TypeError)``.
"""
from __future__ import annotations

import functools

import numpy as np


def _numba_typing_error():
    try:
        from numba.core.errors import TypingError
    except ImportError:  # pragma: no cover - numba is a dependency
        return ()
    return (TypingError,)


_TYPING = _numba_typing_error()


def names_its_errors(fn, name: str | None = None):
    """Decorate a public function: its ValueError / TypeError messages start with ``name`` (default
    ``fn.__name__``; a module's path where the name alone is ambiguous: ``dspsim.onnx.quantize_linear``)."""
    name = name or fn.__name__

    @functools.wraps(fn)
    def public(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            if str(exc).startswith(name):
                raise
            cls = TypeError if isinstance(exc, TypeError) else ValueError
            raise cls(f"{name}: {exc}") from exc
        except OverflowError as exc:
            raise ValueError(f"{name}: an argument is beyond the integer range it is held in ({exc})") from exc
        except _TYPING as exc:
            raise TypeError(f"{name}: an argument has a type the kernel does not take "
                            f"({str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__})") from exc

    return public


def check_flag(value, func: str, name: str) -> bool:
    """A boolean option: ``True``/``False`` (or numpy's, or the ints 0 and 1), else a TypeError naming ``func``."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return bool(value)
    raise TypeError(f"{func}: {name} must be a bool, got {value!r}"[:200])

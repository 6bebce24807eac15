"""Progress of a long run (``dspsim validate``'s samples, ``dspsim diagnose``'s variants), on stderr.

On a terminal, one line redrawn in place. Anywhere else (a CI log, ``nohup``, a pipe) a long run writes a plain
line each time another :data:`EVERY_PERCENT` % of the work is done or :data:`EVERY_SECONDS` seconds have passed
since the last line, and at the end, so that a log shows the run is alive without a line per step; a run shorter
than :data:`QUIET_SECONDS` writes nothing there.
"""
from __future__ import annotations

import sys
import time

from .safe_io import terminal_text

#: Off a terminal: a line each time this much more of the work is done...
EVERY_PERCENT = 10
#: ... or this many seconds have passed since the last line.
EVERY_SECONDS = 30.0
#: Off a terminal, nothing before this many seconds into the run (a short run leaves the log as it was).
QUIET_SECONDS = 10.0


class Progress:
    """``label: done/total unit, rate, ETA`` on ``stream`` (default stderr): redrawn in place on a terminal,
    elsewhere a plain line per :data:`EVERY_PERCENT` % or :data:`EVERY_SECONDS` s once :data:`QUIET_SECONDS`
    have passed. ``clock``: seconds (a test passes its own)."""

    def __init__(self, stream=None, label: str = "validate", unit: str = "samples", clock=time.perf_counter):
        self.stream = stream or sys.stderr
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label, self.clock = label, clock
        self.start(0, unit)

    def start(self, total: int, unit: str | None = None) -> None:
        """A run of ``total`` steps (counted in ``unit``; default: as before) begins."""
        self.total, self.done, self.what = total, 0, ""
        self.unit = unit or self.unit
        self.t0 = self.shown_at = self.clock()
        self.shown_percent = 0

    def update(self, n: int) -> None:
        """``n`` more steps are done."""
        self.done += n
        self._show()

    def __call__(self, i: int, n: int, what: str) -> None:
        """Step ``i`` of ``n`` begins, doing ``what`` (the ``progress(i, n, label)`` callback of
        :func:`dspsim.harness.diagnose.diagnose`; ``n`` may grow as the search goes)."""
        self.total, self.done, self.what = n, i, terminal_text(what, one_line=True)
        self._show()

    def _line(self) -> str:
        dt = self.clock() - self.t0
        rate = self.done / dt if dt > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        return (f"{self.label}: {self.done:,}/{self.total:,} {self.unit}  {rate:,.1f} {self.unit}/s  ETA {eta:,.0f} s"
                + (f"  {self.what}" if self.what else ""))

    def _show(self) -> None:
        end = self.done >= self.total
        if self.terminal:
            print(f"\r\033[K{self._line()}", end="\n" if end else "", file=self.stream, flush=True)
            return
        percent = 100 * self.done // self.total if self.total else 100
        now = self.clock()
        if now - self.t0 < QUIET_SECONDS:
            return
        if end or percent >= self.shown_percent + EVERY_PERCENT or now - self.shown_at >= EVERY_SECONDS:
            print(self._line(), file=self.stream, flush=True)
            self.shown_percent, self.shown_at = percent - percent % EVERY_PERCENT, now

"""dspsim.harness.progress: redrawn in place on a terminal; off a terminal, a long run writes a plain line per
10 % or per 30 s, a short one nothing."""
import io

from dspsim.harness import progress as pg


class _Tty(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _steps(lines):
    return [ln.split()[1] for ln in lines.splitlines()]


def test_a_terminal_gets_one_line_redrawn_with_rate_and_eta():
    tty = _Tty()
    p = pg.Progress(tty)
    p.start(10, "samples")
    p.update(4)
    p.update(6)
    text = tty.getvalue()
    assert text.count("\r\033[K") == 2 and "10/10 samples" in text and "samples/s" in text and "ETA" in text
    assert text.endswith("\n") and text.count("\n") == 1


def test_off_a_terminal_a_long_run_gets_a_line_per_ten_percent_and_at_the_end():
    log, clock = io.StringIO(), _Clock()
    p = pg.Progress(log, clock=clock)
    p.start(100, "samples")
    for _ in range(100):
        clock.t += 1  # 100 s in all: the first 10 s are quiet
        p.update(1)
    assert _steps(log.getvalue()) == [f"{k}/100" for k in range(10, 101, 10)]
    assert "\r" not in log.getvalue() and "\033" not in log.getvalue() and "1.0 samples/s" in log.getvalue()


def test_off_a_terminal_a_slow_run_gets_a_line_every_thirty_seconds():
    log, clock = io.StringIO(), _Clock()
    p = pg.Progress(log, clock=clock)
    p.start(1000, "streams")
    for _ in range(4):  # 1 step (0.1 %) per 20 s: no 10 % step, a line each 30 s
        clock.t += 20
        p.update(1)
    assert _steps(log.getvalue()) == ["2/1,000", "4/1,000"]


def test_off_a_terminal_a_short_run_writes_nothing():
    log, clock = io.StringIO(), _Clock()
    p = pg.Progress(log, clock=clock)
    p.start(6, "samples")
    for _ in range(3):
        clock.t += 3
        p.update(2)
    assert log.getvalue() == ""


def test_diagnose_variants_report_through_the_callback_with_their_label():
    log, clock = io.StringIO(), _Clock()
    p = pg.Progress(log, label="diagnose", unit="variants", clock=clock)
    for i in range(1, 21):
        clock.t += 1
        p(i, 20, f"accumulator={15 + i},wrap\n")
    lines = log.getvalue().splitlines()
    assert _steps(log.getvalue()) == ["10/20", "12/20", "14/20", "16/20", "18/20", "20/20"]
    assert lines[0].startswith("diagnose: 10/20 variants")
    assert lines[-1].endswith("accumulator=35,wrap\\n")  # one line: the label's newline is escaped

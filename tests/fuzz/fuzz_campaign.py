"""The long campaign of the mutation fuzzers (fuzz_tflite.py, fuzz_onnx.py): mutants in chunks, each chunk a
subprocess under a memory limit (``RLIMIT_AS``) and a hang limit, so that a crash (a signal, an abort), a blow-up
(the memory limit) or a hang is a defect signature too, naming its mutant; the campaign resumes after it.

A fuzzer's ``main(["SEED", "START", "N"])`` judges each mutant inside :func:`judging` (which prints
:func:`start_line` and ends the process with SIGALRM after :data:`HANG_LIMIT_S`: a hang inside a numba loop, which
no Python handler could interrupt) and prints :func:`print_verdict`'s line after: ``K, name, mutations, loaded,
ran, output elements, per-engine outcome, verdict`` (tab-separated).

The command (1 process; ``nice`` it on a shared host)::

    python tests/fuzz/fuzz_campaign.py tflite|onnx SEED N [START]

prints every defect signature, then one JSON line of totals: mutants, and per engine how many mutants it refused,
loaded and ran. The slow tests (``-m slow``) of test_fuzz_tflite.py and test_fuzz_onnx.py run it.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

FUZZ = os.path.dirname(os.path.abspath(__file__))
FUZZERS = {"tflite": "fuzz_tflite.py", "onnx": "fuzz_onnx.py"}
MEMORY_LIMIT = 4 << 30
HANG_LIMIT_S = 60.0  # per mutant: three engines load it and run it twice, on a shared host
CHUNK = 200


def start_line(k, name, what) -> str:
    """The line a fuzzer prints before it judges mutant ``k``: the one a crash leaves last."""
    return f"#{k}\t{name}\t{what}"


@contextlib.contextmanager
def judging(k, name, what, limit=HANG_LIMIT_S):
    """Print mutant ``k``'s start line; the process ends (SIGALRM, its default action) if the block outlasts
    ``limit`` seconds."""
    print(start_line(k, name, what), flush=True)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, int(limit)))
    try:
        yield
    finally:
        signal.alarm(0)


def print_verdict(k, name, what, bad, stats) -> None:
    """The line of mutant ``k``'s verdict (``stats``: loaded, ran, elements and engines, as the verdicts give)."""
    engines = ",".join(f"{e}={o}" for e, o in stats["engines"].items())
    print(f"{k}\t{name}\t{what}\t{stats['loaded']}\t{stats['ran']}\t{stats['elements']}\t{engines}\t"
          f"{bad or 'ok'}", flush=True)


def worker_main(argv, mutants, judge, file_limit=HANG_LIMIT_S) -> None:
    """A fuzzer's ``main``: ``SEED START N`` judges campaign mutants START .. START + N - 1, ``--file PATH ...``
    saved files (each under ``file_limit`` seconds). ``mutants(seed)`` returns ``k -> (name, data, what)``;
    ``judge(data, k)`` returns the verdict and its stats, as :func:`print_verdict` takes them."""
    if argv[0] == "--file":
        for k, path in enumerate(argv[1:]):
            with open(path, "rb") as f:
                data = f.read()
            with judging(k, os.path.basename(path), "file", limit=file_limit):
                result = judge(data, k)
            print_verdict(k, os.path.basename(path), "file", *result)
        return
    seed, start, n = int(argv[0]), int(argv[1]), int(argv[2])
    mutant = mutants(seed)
    for k in range(start, start + n):
        name, data, what = mutant(k)
        with judging(k, name, what):
            result = judge(data, k)
        print_verdict(k, name, what, *result)


def parse_verdict(line) -> dict:
    """A :func:`print_verdict` line as a dict."""
    k, name, what, loaded, ran, elements, engines, verdict = line.split("\t")
    return {"k": int(k), "name": name, "what": what, "loaded": int(loaded), "ran": int(ran),
            "elements": int(elements), "engines": dict(e.split("=") for e in engines.split(",") if e),
            "verdict": verdict}


def _limits():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_fuzzer(fmt, args, timeout):
    """(stdout, exit status or None when it hung) of fuzzer ``fmt`` run with ``args`` under the memory limit."""
    cmd = [sys.executable, os.path.join(FUZZ, FUZZERS[fmt]), *map(str, args)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_limits, env=env, timeout=timeout, cwd=FUZZ)
        return r.stdout, r.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return out, None


def campaign(fmt, seed, n_mutants, start=0, chunk=CHUNK, hang_limit=HANG_LIMIT_S):
    """Mutants ``start`` .. ``start + n_mutants - 1`` of ``seed`` in subprocesses of ``chunk`` mutants each.
    Returns (defects, totals)."""
    defects, totals = [], {"format": fmt, "seed": seed, "mutants": 0, "elements": 0, "engines": {}}
    k, end = start, start + n_mutants
    while k < end:
        n = min(chunk, end - k)
        out, code = run_fuzzer(fmt, [seed, k, n], 60 + hang_limit * n)  # the alarm of judging() ends it first
        done, last = k, None
        for line in out.splitlines():
            if line.startswith("#"):
                last = line[1:].split("\t")
                continue
            r = parse_verdict(line)
            totals["mutants"] += 1
            totals["elements"] += r["elements"]
            for e, outcome in r["engines"].items():
                per = totals["engines"].setdefault(e, {"refused": 0, "loaded": 0, "ran": 0})
                per[outcome] += 1
            if r["verdict"] != "ok":
                defects.append(f"{fmt} seed {seed} mutant {r['k']} of {r['name']} ({r['what']}): {r['verdict']}")
            done = r["k"] + 1
        if done < k + n:  # the subprocess died or hung on mutant `done`
            idx, name, what = last if last and int(last[0]) == done else (done, "?", "?")
            why = "hang" if code in (None, -signal.SIGALRM) else f"exit status {code}"
            defects.append(f"{fmt} seed {seed} mutant {idx} of {name} ({what}): {why}")
            totals["mutants"] += 1
            done += 1
        k = done
    return defects, totals


def main(argv):
    fmt, seed, n = argv[0], int(argv[1]), int(argv[2])
    start = int(argv[3]) if len(argv) > 3 else 0
    defects, totals = campaign(fmt, seed, n, start)
    for d in defects:
        print(d, flush=True)
    print(json.dumps(dict(totals, defects=len(defects))), flush=True)
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

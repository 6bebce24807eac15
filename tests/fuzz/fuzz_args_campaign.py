"""A campaign of the argument fuzz (tests/fuzz/fuzz_args.py) outside pytest: every defect signature, not the first.

For each target: every single-argument replacement of its first :data:`EXHAUSTIVE_BASES` base calls by every
hostile value (exhaustive), then ``PAIRS`` seeded random two-argument replacements of any base call, within
:data:`TARGET_BUDGET_S` seconds (a target whose new dtypes each compile a numba specialisation is cut short
there; the summary says how many calls ran). Each target runs in its own subprocess with a
memory and a time limit, so a hang or a blow-up is a signature too.

``python tests/fuzz/fuzz_args_campaign.py SEED PAIRS [NAME ...]`` prints one line per distinct signature and a
summary line ``calls=N signatures=M``.
"""
from __future__ import annotations

import copy
import json
import os
import random
import re
import resource
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))  # tests/fuzz: fuzz_args beside it
MEMORY_LIMIT = 4 << 30
TARGET_TIME_LIMIT_S = 300  # beyond it the target's subprocess is killed: a hang inside a numba loop
TARGET_BUDGET_S = 90.0
EXHAUSTIVE_BASES = 3


def _calls(bases, seed, pairs):
    import fuzz_args as fa
    for base in bases[:EXHAUSTIVE_BASES]:
        for key in sorted(base):
            for v in fa.hostile_values(base[key]):
                kw = dict(base)
                kw[key] = v
                yield kw
    rng = random.Random(seed)
    for _ in range(pairs if bases else 0):
        base = bases[rng.randrange(len(bases))]
        kw = dict(base)
        keys = sorted(kw)
        for key in rng.sample(keys, min(2, len(keys))):
            values = fa.hostile_values(base[key])
            kw[key] = values[rng.randrange(len(values))]
        yield kw


def signature(defect):
    """A defect line without its values: one signature per kind of defect, not per hostile value."""
    sig = re.sub(r"(got|ratios|, not) .*", r"\1 ...", defect)
    sig = re.sub(r"0x[0-9a-f]+|[-+]?\d[\d.e+-]*|'[^']*'|\[[^]]*\]|\([^)]*\)", "#", sig)
    return sig[:200]


def run_target(name, seed, pairs):
    """(calls, {signature: example call}) of one target, in this process."""
    import fuzz_args as fa
    fn, bases = fa.targets()[name]
    import time

    found, n, t0 = {}, 0, time.perf_counter()
    for kw in _calls(bases, seed, pairs):
        if time.perf_counter() - t0 > TARGET_BUDGET_S:
            break
        kw = {k: (v.copy() if isinstance(v, np.ndarray) and v.flags.writeable else copy.copy(v)) for k, v in kw.items()}
        n += 1
        bad = fa.check_call(name, fn, kw, time_limit=60.0)  # a first compile on a loaded machine
        if bad is not None:
            found.setdefault(signature(bad), f"{name}({', '.join(f'{k}={fa.describe(v)}' for k, v in kw.items())})")
    return n, found


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def main(argv):
    seed, pairs = int(argv[1]), int(argv[2])
    names = argv[3:]
    if names and names[0] == "--one":
        n, found = run_target(names[1], seed, pairs)
        print(json.dumps({"calls": n, "found": found}))
        return 0
    sys.path.insert(0, HERE)
    import fuzz_args as fa
    names = names or sorted(fa.targets())
    total, sigs = 0, 0
    for name in names:
        try:
            p = subprocess.run([sys.executable, __file__, str(seed), str(pairs), "--one", name], capture_output=True,
                               text=True, timeout=TARGET_TIME_LIMIT_S, preexec_fn=_limits, cwd=HERE)
        except subprocess.TimeoutExpired:
            print(f"{name}: hang: the target's campaign ran over {TARGET_TIME_LIMIT_S} s", flush=True)
            sigs += 1
            continue
        try:
            r = json.loads(p.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            print(f"{name}: crash: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}", flush=True)
            sigs += 1
            continue
        total += r["calls"]
        for sig, call in r["found"].items():
            print(f"{sig}\n    {call}", flush=True)
            sigs += 1
    print(f"calls={total} signatures={sigs} seed={seed} targets={len(names)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main(sys.argv))

"""Mutation fuzzing of the .tflite loader (issue 16 §2): byte flips, truncations and field rewrites of
the committed models (tests/golden/models, tests/golden/ops), each loaded with every engine and run.

A mutant must load and run, or be refused with a ValueError / TypeError whose message starts with
``load_model:`` or ``Model.run`` (tests/fuzz/fuzz_tflite.py holds the mutator and the verdict).

- default run: a few thousand mutants in this process, within a time budget of seconds;
- ``-m slow``: a long campaign in subprocesses, each under a memory limit (``RLIMIT_AS``) and a hang
  limit; a crash, a hang or an out-of-memory kill is a defect too, and names its mutant.
"""
import glob
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import dspsim.tflite as tfl
import fuzz_tflite as fz
from dspsim.tflite import prepare

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.dirname(os.path.abspath(__file__))
REGRESSIONS = sorted(glob.glob(os.path.join(FUZZ, "regressions", "*.tflite")))

DEFAULT_SEED = 16
DEFAULT_MUTANTS = 3000
DEFAULT_BUDGET_S = 40.0


@pytest.fixture(scope="module")
def mutator():
    return fz.Mutator(DEFAULT_SEED)


def test_the_corpus_is_every_committed_model_and_loads_without_a_defect():
    assert len(fz.CORPUS) > 400
    for path in fz.CORPUS:
        with open(path, "rb") as f:
            bad, _ = fz.verdict(f.read(), max_elements=1 << 16)
        assert bad is None, (os.path.basename(path), bad)


def test_field_rewrites_target_what_the_reader_decodes():
    with open(os.path.join(HERE, "golden", "models", "cnn.tflite"), "rb") as f:
        data = f.read()
    fields = fz.decoded_fields(data)
    m = tfl.load_model(data)
    kinds = {code for _, code in fields}
    assert {"i", "I", "H", "f", "q"} <= kinds  # offsets, vtables, shapes, scales, zero points
    t = next(t for t in m._mdef.tensors if t.scale.size)
    assert np.float32(t.scale[0]) in {np.float32(np.frombuffer(data, "<f4", 1, p)[0]) for p, c in fields if c == "f"}


def test_the_verdict_flags_a_wrong_exception_type_and_an_unnamed_error(monkeypatch):
    with open(os.path.join(HERE, "golden", "models", "cnn.tflite"), "rb") as f:
        data = f.read()
    assert fz.verdict(data)[0] is None
    for exc in (ZeroDivisionError("integer division or modulo by zero"), ValueError("cannot reshape array")):
        def broken(op, g, exc=exc):
            raise exc
        monkeypatch.setitem(prepare.BUILTINS, "CONV_2D", broken)
        bad, _ = fz.verdict(data)
        assert bad is not None and str(exc) in bad


def test_a_bounded_mutation_campaign_finds_no_defect(mutator):
    t0 = time.perf_counter()
    defects, totals, n = [], {"loaded": 0, "ran": 0, "elements": 0, "skipped": 0}, 0
    while n < DEFAULT_MUTANTS and time.perf_counter() - t0 < DEFAULT_BUDGET_S:
        name, data, what = mutator.mutant(n)
        bad, stats = fz.verdict(data, seed=n)
        for k in totals:
            totals[k] += stats[k]
        if bad:
            defects.append(f"mutant {n} of {name} ({what}): {bad}")
        n += 1
    assert defects == []
    assert n >= 500, f"only {n} mutants in {DEFAULT_BUDGET_S} s"
    assert totals["ran"] > n // 10  # enough mutants survive the loader to exercise the kernels
    print(f"\n{n} mutants, {totals['loaded']} loads, {totals['ran']} runs, {totals['elements']} output elements")


@pytest.mark.parametrize("path", REGRESSIONS, ids=[os.path.basename(p) for p in REGRESSIONS])
def test_mutants_of_the_first_campaign_are_refused_with_a_named_value_error(path):
    """The four mutant models named in issue 16 §2 (cin = 0 depthwise, optional input -1 as the data
    input, denormal output scale, zero-size int-to-int QUANTIZE), and later campaigns' (LOG_SOFTMAX and
    L2_NORMALIZATION whose tensors have rank 0: an IndexError; now refused at load)."""
    with open(path, "rb") as f:
        data = f.read()
    bad, _ = fz.verdict(data)
    assert bad is None
    # a rank-0 input to an op that normalizes over the last axis is refused at load, before any run
    where = r"^load_model: .*rank-0 input" if "rank0" in os.path.basename(path) else r"^(load_model|Model\.run)"
    with pytest.raises(ValueError, match=where):
        m = tfl.load_model(data)
        m.run([np.zeros(i.shape, i.dtype) for i in m.inputs])


# ---------------------------------------------------------------------------------------------
# the long campaign: subprocesses with a memory and a hang limit
# ---------------------------------------------------------------------------------------------
MEMORY_LIMIT = 4 << 30
HANG_LIMIT_S = 10.0
CHUNK = 200


def _limits():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def campaign(seed, n_mutants, chunk=CHUNK, hang_limit=HANG_LIMIT_S):
    """Run mutants 0..n_mutants-1 of ``seed`` in subprocesses of ``chunk`` mutants each. A subprocess
    that dies (a crash, the memory limit) or stays silent for ``hang_limit`` seconds per mutant is a
    defect of the mutant it was running; the campaign resumes after it. Returns (defects, totals)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    defects, totals = [], {"mutants": 0, "loaded": 0, "ran": 0, "elements": 0}
    k = 0
    while k < n_mutants:
        n = min(chunk, n_mutants - k)
        cmd = [sys.executable, os.path.join(FUZZ, "fuzz_tflite.py"), str(seed), str(k), str(n)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_limits, env=env,
                               timeout=60 + hang_limit * n)
            out, code, hung = r.stdout, r.returncode, False
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            code, hung = None, True
        done = k
        for line in out.splitlines():
            idx, name, what, loaded, ran, elements, verdict = line.split("\t")
            totals["mutants"] += 1
            totals["loaded"] += int(loaded)
            totals["ran"] += int(ran)
            totals["elements"] += int(elements)
            if verdict != "ok":
                defects.append(f"seed {seed} mutant {idx} of {name} ({what}): {verdict}")
            done = int(idx) + 1
        if done < k + n:  # the subprocess died or hung on mutant `done`
            name, _, what = fz.Mutator(seed).mutant(done)
            why = "hang" if hung else f"exit status {code}"
            defects.append(f"seed {seed} mutant {done} of {name} ({what}): {why}")
            totals["mutants"] += 1
            done += 1
        k = done
    return defects, totals


@pytest.mark.slow
@pytest.mark.parametrize("seed", [101, 102, 103])
def test_long_mutation_campaign_in_subprocesses_finds_no_crash_hang_or_defect(seed):
    defects, totals = campaign(seed, 12000)
    print(f"\nseed {seed}: {totals}")
    assert defects == []
    assert totals["mutants"] == 12000


#: mutants of the campaign of seeds 2026 and 2027 (issue 16's closing campaign) that raised MemoryError: declared
#: tensor shapes of 6 to 9 GiB (a prepare-time broadcast index, an int64 widening); now a named refusal. Saved as
#: files (regressions/memory/, named by model, seed and index), since a mutant's index moves with the corpus.
MEMORY_MUTANTS = sorted(glob.glob(os.path.join(FUZZ, "regressions", "memory", "*.tflite")))


@pytest.mark.parametrize("path", MEMORY_MUTANTS, ids=[os.path.basename(p)[:-7] for p in MEMORY_MUTANTS])
def test_a_mutant_whose_shapes_exceed_the_memory_is_refused_naming_the_function(path):
    r = subprocess.run([sys.executable, os.path.join(FUZZ, "fuzz_tflite.py"), "--file", path],
                       capture_output=True, text=True, preexec_fn=_limits, timeout=300,
                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert r.returncode == 0, r.stderr[-2000:]
    idx, name, what, loaded, ran, elements, verdict = r.stdout.strip().split("\t")
    assert verdict == "ok", (name, verdict)

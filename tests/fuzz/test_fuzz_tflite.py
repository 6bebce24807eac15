"""Mutation fuzzing of the .tflite loader (issue 16 §2, issue 31's campaign): byte flips, truncations, field
rewrites and model edits of the committed models (every .tflite under tests/), each loaded with every engine and
run.

A mutant must load and run, or be refused with a ValueError / TypeError whose message starts with
``load_model:`` or ``Model.run`` (tests/fuzz/fuzz_tflite.py holds the mutator and the verdict).

- default run: a fixed slice of the campaign (:data:`DEFAULT_MUTANTS` mutants of seed :data:`DEFAULT_SEED`), in
  this process;
- ``-m slow``: the campaign in subprocesses, each under a memory limit (``RLIMIT_AS``) and a hang limit; a crash,
  a hang or an out-of-memory kill is a defect too, and names its mutant (tests/fuzz/fuzz_campaign.py;
  ``python tests/fuzz/fuzz_campaign.py tflite SEED N`` runs it by hand, with ../shared/models in the corpus
  when it is there).
"""
import glob
import os

import numpy as np
import pytest

import dspsim.tflite as tfl
import fuzz_campaign
import fuzz_tflite as fz
from dspsim.tflite import prepare

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.dirname(os.path.abspath(__file__))
REGRESSIONS = sorted(glob.glob(os.path.join(FUZZ, "regressions", "*.tflite")))

DEFAULT_SEED = 31
DEFAULT_MUTANTS = 400


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
    exc = ZeroDivisionError("integer division or modulo by zero")

    def broken(op, g):
        raise exc
    monkeypatch.setitem(prepare.BUILTINS, "CONV_2D", broken)
    bad, _ = fz.verdict(data)
    assert bad is not None and str(exc) in bad
    monkeypatch.setattr(fz.tfl, "load_model", lambda data, engine: np.reshape(np.zeros(3), (2, 2)))
    bad, _ = fz.verdict(data)
    assert bad is not None and "without the function's name: cannot reshape array" in bad


def test_a_prepare_error_that_does_not_name_the_loader_is_named_with_its_operator(monkeypatch):
    with open(os.path.join(HERE, "golden", "models", "cnn.tflite"), "rb") as f:
        data = f.read()

    def broken(op, g):
        raise TypeError("tflm_tanh: input_zero_point must be an int")
    monkeypatch.setitem(prepare.BUILTINS, "CONV_2D", broken)
    with pytest.raises(TypeError, match=r"^load_model: operator \d+ \(CONV_2D\): tflm_tanh: input_zero_point"):
        tfl.load_model(data)


def test_model_edits_rewrite_shapes_scales_zero_points_and_buffers():
    with open(os.path.join(HERE, "golden", "models", "cnn.tflite"), "rb") as f:
        data = f.read()
    named = fz.decoded_fields(data, named=True)
    edited = {what.split("[")[0].split(" ")[-1] for _, _, what in named if fz._EDITED.search(what)}
    assert {"shape", "scale", "zero_point", "inputs", "outputs"} <= edited
    assert not any(fz._EDITED.search(what) for _, _, what in named if "vtable" in what)


def test_a_slice_of_the_mutation_campaign_finds_no_defect(mutator):
    defects, totals = [], {"loaded": 0, "ran": 0, "elements": 0, "skipped": 0}
    for n in range(DEFAULT_MUTANTS):
        name, data, what = mutator.mutant(n)
        bad, stats = fz.verdict(data, seed=n)
        for k in totals:
            totals[k] += stats[k]
        if bad:
            defects.append(f"mutant {n} of {name} ({what}): {bad}")
    assert defects == []
    assert totals["ran"] > DEFAULT_MUTANTS // 10  # enough mutants survive the loader to exercise the kernels
    print(f"\n{DEFAULT_MUTANTS} mutants, {totals['loaded']} loads, {totals['ran']} runs, {totals['elements']} output "
          "elements")


@pytest.mark.parametrize("path", REGRESSIONS, ids=[os.path.basename(p) for p in REGRESSIONS])
def test_mutants_of_the_first_campaign_are_refused_with_a_named_value_error(path):
    """The four mutant models named in issue 16 §2 (cin = 0 depthwise, optional input -1 as the data
    input, denormal output scale, zero-size int-to-int QUANTIZE), later campaigns' (LOG_SOFTMAX and
    L2_NORMALIZATION whose tensors have rank 0: an IndexError; now refused at load) and issue 31's (a
    TRANSPOSE_CONV whose output is smaller than its filter, TANH / LOGISTIC zero points beyond int8 under tflm, an
    int16 LOG whose scale is a denormal: ValueErrors of a parameter helper without load_model's name)."""
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
# the long campaign: subprocesses with a memory and a hang limit (tests/fuzz/fuzz_campaign.py)
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("seed", [101, 102, 103])
def test_long_mutation_campaign_in_subprocesses_finds_no_crash_hang_or_defect(seed):
    defects, totals = fuzz_campaign.campaign("tflite", seed, 12000)
    print(f"\nseed {seed}: {totals}")
    assert defects == []
    assert totals["mutants"] == 12000


#: mutants of the campaign of seeds 2026 and 2027 (issue 16's closing campaign) that raised MemoryError: declared
#: tensor shapes of 6 to 9 GiB (a prepare-time broadcast index, an int64 widening); now a named refusal. Saved as
#: files (regressions/memory/, named by model, seed and index), since a mutant's index moves with the corpus.
MEMORY_MUTANTS = sorted(glob.glob(os.path.join(FUZZ, "regressions", "memory", "*.tflite")))


@pytest.mark.parametrize("path", MEMORY_MUTANTS, ids=[os.path.basename(p)[:-7] for p in MEMORY_MUTANTS])
def test_a_mutant_whose_shapes_exceed_the_memory_is_refused_naming_the_function(path):
    out, code = fuzz_campaign.run_fuzzer("tflite", ["--file", path], timeout=300)
    assert code == 0, out[-2000:]
    r = fuzz_campaign.parse_verdict(out.strip().splitlines()[-1])
    assert r["verdict"] == "ok", (r["name"], r["verdict"])

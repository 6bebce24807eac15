"""Mutation fuzzing of the .onnx importer (issue 16, "the fuzzers also cover dspsim.onnx"; issue 31's campaign):
byte mutants and structural mutants (tests/fuzz/fuzz_onnx.py) of the committed models, each loaded with every
engine and run on a zero input and a random one. Allowed outcomes: a result, or a ValueError / TypeError whose
message starts with ``dspsim.onnx.load_model:`` or ``Model.run``.

- default run: a fixed slice of the campaign (:data:`MUTANTS` mutants of seed :data:`SEED`), in this process;
- ``-m slow``: the campaign in subprocesses under a memory and a hang limit (tests/fuzz/fuzz_campaign.py;
  ``python tests/fuzz/fuzz_campaign.py onnx SEED N`` runs it by hand).
"""
import glob
import os

import pytest

pytest.importorskip("dspsim.onnx")
fo = pytest.importorskip("fuzz_onnx")
import fuzz_campaign  # noqa: E402

mutant, verdict, ENGINES, onnx_mod = fo.mutant, fo.verdict, fo.ENGINES, fo.onnx_mod
SEED = 31
MUTANTS = 300
REGRESSIONS = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions", "*.onnx")))


@pytest.fixture(scope="module")
def files():
    """Issue 16's corpus: its regressions below name mutants by their index."""
    return fo.load_corpus(fo.ISSUE_16_CORPUS)


@pytest.fixture(scope="module")
def corpus():
    return fo.load_corpus()


def test_the_onnx_corpus_loads_and_runs_without_a_defect(corpus):
    assert len(corpus) >= 30
    for name, data in corpus:
        bad, stats = verdict(data, 0)
        assert bad is None and stats["ran"] > 0, (name, bad)


def test_a_node_with_too_few_inputs_is_refused_at_load_naming_the_node_and_the_rule(files):
    """Regression (seed 16, mutant 1211: one bit of an Add's input list flipped): an IndexError at run time."""
    data = dict(files)["mlp_qdq_u8s8_pt_op13.onnx"]
    name, mutated, what = mutant(files, 16, 1211)
    assert (name, what) == ("mlp_qdq_u8s8_pt_op13.onnx", "flip 1349.4") and mutated != data
    for engine in ENGINES:
        with pytest.raises(ValueError,
                           match=r"^dspsim\.onnx\.load_model: node \d+ \(\w+.*\): \w+ takes 2 inputs, got 1"):
            onnx_mod.load_model(mutated, engine=engine)


def test_a_node_without_a_required_attribute_is_refused_at_load_naming_the_node(files):
    """Regression (campaign seed 2026, mutant 217: a Concat's attribute lost): KeyError 'axis' at load."""
    name, mutated, what = mutant(files, 2026, 217)
    assert (name, what) == ("dwsep_pof2_qdq_s8s8.onnx", "set 4536=0x0")
    for engine in ENGINES:
        with pytest.raises(ValueError, match=r"^dspsim\.onnx\.load_model: node \d+ \((QLinear)?Concat "
                                             r".*needs the attribute 'axis'"):
            onnx_mod.load_model(mutated, engine=engine)


def test_a_node_with_too_many_outputs_is_refused_at_load_naming_the_node(files):
    """Regression (campaign seed 2026, mutant 732: a DequantizeLinear's zero-point input re-tagged as a second
    output): a KeyError at run time, reading the tensor the node never wrote."""
    name, mutated, what = mutant(files, 2026, 732)
    assert (name, what) == ("dwsep_pof2_qdq_s8s8.onnx", "set 943=0x12")
    for engine in ENGINES:
        with pytest.raises(ValueError, match=r"^dspsim\.onnx\.load_model: node 8 \(DequantizeLinear.*takes 1 "
                                             r"outputs, got 2"):
            onnx_mod.load_model(mutated, engine=engine)


def test_structural_mutants_keep_the_file_well_formed_and_reach_the_operators(corpus):
    onnx = pytest.importorskip("onnx")
    loaded = 0
    for k in range(40):
        name, data, what = fo.proto_mutant(corpus, SEED, k)
        assert what and onnx.load_from_string(data).graph.node is not None, (k, name)
        loaded += verdict(data, k)[1]["loaded"] > 0
    assert loaded >= 8  # mutants whose meaning changed, not only refusals of a broken file


def test_a_slice_of_the_onnx_campaign_finds_no_defect(corpus):
    pytest.importorskip("onnx")  # the structural mutants
    defects, ran, loaded = [], 0, 0
    for k in range(MUTANTS):
        name, data, what = fo.campaign_mutant(corpus, SEED, k)
        bad, stats = verdict(data, k)
        ran, loaded = ran + stats["ran"], loaded + (stats["loaded"] > 0)
        if bad:
            defects.append(f"mutant {k} of {name} ({what}): {bad}")
    assert defects == [], defects[:20]
    assert loaded > MUTANTS // 10 and ran > 0
    print(f"\n{MUTANTS} onnx mutants, {loaded} loaded by an engine, {ran} runs")


def test_mutants_of_issue_31s_campaign_load_and_run_or_are_refused_naming_the_rule():
    """The saved mutants (regressions/*.onnx), in one subprocess under the campaign's memory and hang limits: a
    Resize whose mode is not UTF-8 (UnicodeDecodeError at load), a QDQ group whose zero point is missing (KeyError
    in onnxruntime-optimized's fusion), a Resize that reads its own output (onnxruntime-optimized's fusion walked
    the cycle forever), a Conv with a stride of 0 (ZeroDivisionError at run), QDQ groups with a uint4 or float8
    zero point or none (fused into QLinear nodes that take 8-bit codes only: AttributeError, KeyError), and what an
    op's checks let through at run (an empty input's IndexError, a DequantizeLinear reading a 0-d scale, a MaxPool
    with one stride, a division by zero in the reference, pads of 2^40: MemoryError, a Resize scale of 3e38:
    OverflowError) and a QOperator model whose zero point is int4 (AttributeError in QLinearConv)."""
    assert len(REGRESSIONS) >= 14
    out, code = fuzz_campaign.run_fuzzer("onnx", ["--file", *REGRESSIONS], timeout=600)
    rows = [fuzz_campaign.parse_verdict(line) for line in out.splitlines() if not line.startswith("#")]
    assert code == 0 and len(rows) == len(REGRESSIONS), out[-2000:]
    assert [(r["name"], r["verdict"]) for r in rows if r["verdict"] != "ok"] == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3101, 3102])
def test_long_onnx_campaign_in_subprocesses_finds_no_crash_hang_or_defect(seed):
    defects, totals = fuzz_campaign.campaign("onnx", seed, 6000)
    print(f"\nseed {seed}: {totals}")
    assert defects == []
    assert totals["mutants"] == 6000

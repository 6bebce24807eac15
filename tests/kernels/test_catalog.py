"""The operator registry: every descriptor's examples agree with its oracle, and everything that
needs "every operator" (warmup, the suite vocabulary, the built-in suite) sees every operator."""
import numpy as np
import pytest

from dspsim.accumulator import KernelStats
from dspsim.harness import default_suite, run_case
from dspsim.harness.ops import vocabulary
from dspsim.catalog import Operator, SuiteCase, operators, random_codes, register

OPERATORS = operators()


def _arrays(result):
    """The integer/float arrays of a kernel or oracle result (KernelStats and scalars dropped)."""
    items = result if isinstance(result, tuple) else (result,)
    return [np.asarray(r) for r in items if not isinstance(r, KernelStats)]


def _same(a, b):
    if a.dtype.kind == "f":
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))
    return a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_examples_are_bit_exact_with_the_oracle(name):
    op = OPERATORS[name]
    calls = op.examples()
    assert calls, f"{name} declares no example"
    for call in calls:
        got, want = _arrays(op.kernel(**call)), _arrays(op.oracle(**call))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert _same(g, w), f"{name}({sorted(call)}): kernel {g.ravel()[:8]} oracle {w.ravel()[:8]}"


def test_every_suite_operator_has_default_cases_and_is_in_the_vocabulary():
    vocab = vocabulary()
    suite_ops = {name for name, op in OPERATORS.items() if op.generate is not None or op.study is not None}
    assert set(vocab) == suite_ops
    assert {c.op for c in default_suite()} == suite_ops == {c.op for c in default_suite(quick=True)}
    for name in suite_ops:
        assert OPERATORS[name].cases, f"{name} contributes no suite case"


@pytest.mark.parametrize("case", [c for c in default_suite() if OPERATORS[c.op].generate is not None],
                         ids=lambda c: c.name)
def test_generic_default_cases_pass(case):
    r = run_case(case)
    assert r.status == "pass", r.error or [c.to_dict() for c in r.checks if not c.passed]
    assert r.outcome.n_outputs > 0 and all(c.count > 0 for c in r.checks)


def test_generic_case_detects_a_wrong_kernel(monkeypatch):
    """The generic check can fail: a kernel that is off by one somewhere is reported as a mismatch."""
    op = OPERATORS["add"]

    def off_by_one(**kw):
        y = op.kernel(**kw).copy()
        y.reshape(-1)[7] += 1
        return y

    import dspsim.catalog.descriptor as registry

    vocabulary.cache_clear()

    monkeypatch.setitem(registry._REGISTRY, "add", Operator(
        op.name, off_by_one, op.oracle, op.examples, op.doc, generate=op.generate, params=op.params,
        choices=op.choices, cases=op.cases))
    try:
        r = run_case(next(c for c in default_suite() if c.op == "add"))
        assert r.status == "fail" and sum(c.mismatches for c in r.checks) == 1
    finally:
        vocabulary.cache_clear()


def test_register_refuses_duplicates_and_ambiguous_descriptors():
    op = OPERATORS["add"]
    clone = Operator(op.name, op.kernel, op.oracle, op.examples, op.doc, generate=op.generate)
    with pytest.raises(ValueError, match="registered twice"):
        register(clone)
    with pytest.raises(ValueError, match="both generate and study"):
        register(Operator("x", op.kernel, op.oracle, op.examples, "", generate=op.generate, study="relu"))
    with pytest.raises(ValueError, match="no generate or study"):
        register(Operator("y", op.kernel, op.oracle, op.examples, "", cases=(SuiteCase("y"),)))
    with pytest.raises(TypeError, match="expected an Operator"):
        register("add")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_random_codes_cover_the_edges_of_the_type(dtype):
    x = random_codes(np.random.default_rng(0), (3, 100), dtype)
    info = np.iinfo(dtype)
    assert x.dtype == np.dtype(dtype) and x.min() == info.min and x.max() == info.max
    if np.dtype(dtype).itemsize == 1:
        assert np.unique(x).size == 256

"""The float islands dspsim models (issue 27 part 2: float32 LOG_SOFTMAX, TFLite's reference kernel with glibc's expf
and logf; float32 MUL and DIV, XNNPACK's flush to zero included; SQRT) against the real engines' golden vectors (tests/golden/ops/float_islands.npz, written by make_golden_float_islands.py): every
output of every run, 0 mismatches, under engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF),
"xnnpack" (LiteRT's default interpreter) and "litert-optimized"; where an engine refused the model, or its result
is undefined, dspsim refuses it too (tests/support/op_family.py)."""
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim.kernels.arithmetic import rest as K

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from op_family import GOLDEN, check_case, family_params, load, resolve  # noqa: E402

CASES = family_params("float_islands")
NOT_MODELLED = {  # by default: the kernels dspsim does not reproduce (approximate_float=True runs them)
    ("fi_log_softmax_", "litert_default"), ("fi_log_softmax_", "litert_optimized"),  # Eigen's exp and sum
    ("fi_sqrt", "litert_default"), ("fi_elu", "litert_default"),  # XNNPACK's f32 SQRT and ELU
}


def test_the_golden_file_holds_every_float_operator():
    names = {p.values[0]["name"] for p in CASES}
    assert {n.split("_")[1] for n in names} == {"log", "mul", "div", "sqrt", "elu"} and len(CASES) == 4 * 15


@pytest.mark.parametrize("case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine):
    check_case(case, arrays, engine, NOT_MODELLED)


def _ulps(a, b):
    """|a - b| in units in the last place of float32 (both finite, same sign)."""
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


@pytest.mark.parametrize("prefix,engine,bound", [("fi_sqrt", "litert_default", 2), ("fi_elu", "litert_default", 1),
                                                 ("fi_log_softmax_", "litert_optimized", 510),
                                                 ("fi_log_softmax_", "litert_default", 510)])
def test_approximate_float_runs_the_refused_operators_within_the_stated_bound(prefix, engine, bound):
    """With approximate_float=True the kernels dspsim does not reproduce run with TFLite's reference arithmetic,
    named in an ApproximationWarning and Model.approximations; the outputs stay within the bound the warning
    states (ulps, on finite values the engine gives; SQRT's inputs below 2^126)."""
    from dspsim.engines import ApproximationWarning

    checked = 0
    for p in CASES:
        case, arrays, eng = p.values
        if eng != engine or not case["name"].startswith(prefix):
            continue
        with pytest.warns(ApproximationWarning, match=r"is approximated .*measured"):
            m = load(case, engine, quiet=False, approximate_float=True)
        assert [name for _, name, _ in m.approximations] == [case["ops"][0]]
        for r in range(case["runs"]):
            xs = [arrays[f"in{k}"][r] for k in range(len(case["inputs"]))]
            y, want = m.run(xs)[0].reshape(-1), resolve(case, arrays, f"{engine}/out0")[r].reshape(-1)
            ok = np.isfinite(want) & np.isfinite(y) & (np.sign(y) == np.sign(want))
            if prefix == "fi_sqrt":
                ok &= xs[0].reshape(-1) < np.float32(2.0 ** 126)
            assert int(_ulps(y[ok], want[ok]).max(initial=0)) <= bound
            checked += int(ok.sum())
    assert checked > 100


def test_dspsim_run_refuses_an_approximated_operator_unless_asked_and_reports_it(tmp_path, capsys):
    from dspsim.cli import main

    model = os.path.join(GOLDEN, "ops", "fi_sqrt.tflite")
    x = tmp_path / "x.npy"
    np.save(x, np.linspace(0, 100, 1024, dtype=np.float32))
    assert main(["run", model, "--engine", "xnnpack", "--input", str(x)]) == 2
    assert "--approximate-float" in capsys.readouterr().err
    out = tmp_path / "run"
    assert main(["run", model, "--engine", "xnnpack", "--approximate-float", "--input", str(x), "--out", str(out)]) == 0
    assert "operator 0 (SQRT) is approximated, not bit-exact" in capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    assert [(a["op_index"], a["op"]) for a in report["approximated"]] == [(0, "SQRT")]
    assert "Not bit-exact from operator 0 (SQRT)" in (out / "report.md").read_text()


def test_a_bit_exact_model_lists_no_approximations():
    case = next(p.values[0] for p in CASES if p.values[0]["name"] == "fi_mul_none")
    assert load(case, "litert_default").approximations == []


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), op=st.sampled_from([np.multiply, np.divide]),
       act=st.sampled_from([(-np.inf, np.inf), (0.0, np.inf), (-1.0, 1.0), (0.0, 6.0)]))
def test_xnnpack_f32_binary_matches_the_element_by_element_oracle(seed, op, act):
    """DAZ in, one float32 IEEE operation, FTZ out, the activation clamp leaving NaN and -0: element by element in
    numpy float32 scalars (each one IEEE operation), on magnitudes over the whole float32 range."""
    rng = np.random.default_rng(seed)
    x1 = (np.float32(2.0) ** rng.uniform(-150, 128, 64).astype(np.float32)) * rng.choice([-1, 1], 64)
    x2 = (np.float32(2.0) ** rng.uniform(-150, 128, 64).astype(np.float32)) * rng.choice([-1, 1], 64)
    x1, x2 = x1.astype(np.float32), x2.astype(np.float32)
    x1[:6] = [0.0, -0.0, np.inf, np.nan, 1e-45, -1e-40]
    got = K.xnnpack_f32_binary(op, x1, x2, np.float32(act[0]), np.float32(act[1]))
    tiny = np.finfo(np.float32).tiny

    def flush(v):
        return np.float32(np.copysign(0.0, v)) if abs(v) < tiny else np.float32(v)

    with np.errstate(all="ignore"):
        for a, b, g in zip(x1, x2, got):
            y = flush(op(flush(a), flush(b)))
            if not (np.isinf(act[0]) and np.isinf(act[1])):
                y = np.float32(act[0]) if y < act[0] else np.float32(act[1]) if y > act[1] else y
            assert np.float32(y).tobytes() == np.float32(g).tobytes(), (a, b, y, g)

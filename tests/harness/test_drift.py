"""Drift chains: dspsim's quantize -> dequantize cycles equal TensorFlow's, cycle by cycle, bit for bit."""
import json
from pathlib import Path

import numpy as np
import pytest

from dspsim.harness.drift import affine_chain, error_stats, fc_chain, run_drift, tf_chain, x0_default

GOLDEN = Path(__file__).parents[1] / "golden" / "drift_tf.npz"


def _golden_cases():
    if not GOLDEN.exists():
        return []
    z = dict(np.load(GOLDEN))
    meta = json.loads(str(z["meta"]))
    out = []
    for m in meta:
        arrays = {f: z[k][s:s + int(np.prod(sh))].reshape(sh) for f, (k, s, sh) in m["arrays"].items()}
        out.append(pytest.param(m, arrays, z["x0"], id=m["name"]))
    return out


@pytest.mark.skipif(not GOLDEN.exists(), reason="tests/golden/drift_tf.npz not generated")
@pytest.mark.parametrize("meta, golden, x0", _golden_cases())
def test_tf_drift_chain_matches_tensorflow_every_cycle(meta, golden, x0):
    emr = 0.01 if meta["ensure_minimum_range"] is None else meta["ensure_minimum_range"]
    ch = tf_chain(x0, meta["T"], meta["mode"], meta["policy"], meta["cycles"], meta["round_mode"],
                  meta["narrow_range"], emr)
    for key in ("min", "max", "omin", "omax"):
        np.testing.assert_array_equal(ch[key].view(np.uint32), golden[key].view(np.uint32), err_msg=key)
    assert ch["q"].dtype == golden["q"].dtype
    for c in range(meta["cycles"]):
        np.testing.assert_array_equal(ch["q"][c], golden["q"][c], err_msg=f"q, cycle {c}")
        np.testing.assert_array_equal(ch["dq"][c].view(np.uint32), golden["dq"][c].view(np.uint32),
                                      err_msg=f"dq, cycle {c}")


def test_tf_fixed_range_codes_are_stable_from_the_first_cycle():
    x0 = x0_default()
    for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
        ch = tf_chain(x0, "qint8", mode, "fixed", 6)
        assert all(np.array_equal(ch["q"][0], ch["q"][c]) for c in range(6)), mode


def test_dequantizing_with_the_requested_range_drifts_when_tf_widens_it():
    # requested [0.25, 1.3] is widened to [0, 1.3]; dequantizing with the requested range
    # contracts every value toward the top of the range, cycle after cycle (SEMANTICS 1.8 (c))
    x0 = np.linspace(0.25, 1.3, 64, dtype=np.float32)
    ch = tf_chain(x0, "qint8", "MIN_COMBINED", "fixed_dq_requested", 8)
    err = [float(np.mean(ch["dq"][c] - x0)) for c in range(8)]
    assert all(b > a for a, b in zip(err, err[1:]))
    assert np.count_nonzero(ch["q"][7] != ch["q"][6]) > 0
    fixed = tf_chain(x0, "qint8", "MIN_COMBINED", "fixed", 8)
    assert np.array_equal(fixed["q"][7], fixed["q"][0])


def test_error_stats_counts_changed_codes_and_scales_by_lsb():
    st = error_stats(np.array([[1.0, 2.0], [1.5, 2.0]]), np.array([1.0, 1.0]), 0.5,
                     codes=np.array([[1, 2], [3, 2]]))
    assert st["codes_changed"] == [0, 1]
    assert st["mean_lsb"] == [1.0, 1.5]
    assert st["max_abs_lsb"] == [2.0, 2.0]


def test_affine_chains_with_fixed_parameters_are_idempotent():
    x0 = x0_default(65)
    for conv in ("torch", "onnx", "pof2"):
        ch = affine_chain(x0, conv, "fixed", 4)
        assert all(np.array_equal(ch["q"][0], ch["q"][c]) for c in range(4)), conv


def test_requantization_chain_floor_rounding_is_biased_and_double_is_not():
    res = fc_chain(depth=4, width=16, batch=8, scales="pof2", schemes=("double", "shift/floor"))
    floor_bias = res["schemes"]["shift/floor"]["stats"]["mean_lsb"][0]
    double_bias = res["schemes"]["double"]["stats"]["mean_lsb"][0]
    assert floor_bias < -0.25 < double_bias
    assert res["schemes"]["double"]["stats"]["differ_from_double"] == [0, 0, 0, 0]


def test_run_drift_reports_every_mode_and_chain():
    d = run_drift(cycles=3, depth=2, n=33)
    assert {r["policy"] for r in d["cycles"]} >= {"fixed", "returned", "data", "fixed_dq_requested"}
    assert {r["chain"] for r in d["depth"]} == {"FC, calibrated scales", "FC+ReLU, calibrated scales",
                                                "FC, power-of-two scales"}
    assert all(len(r["stats"]["rms_lsb"]) == 3 for r in d["cycles"])
    assert d["findings"]

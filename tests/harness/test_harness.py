"""The harness: bit-exact compare, float error, vectors, suites (TOML and built-in), atomic reports."""
import json
import shutil
import subprocess

import numpy as np
import pytest

from dspsim.harness import compare, default_suite, float_error, load_suite, run_case, run_suite
from dspsim.harness.ops import _sample_indices, vocabulary
from dspsim.harness.report import MARKER, atomic_dir, render_suite_md, write_suite_report
from dspsim.harness.suite import Case, SuiteError, validate_case
from dspsim.harness.vectors import VectorError, c_header, load_vectors, save_npz


# --------------------------------------------------------------------------------------- compare
def test_compare_identical_integers_has_no_mismatch():
    c = compare(np.arange(-5, 5, dtype=np.int8), np.arange(-5, 5, dtype=np.int16))
    assert c.passed and c.mismatches == 0 and c.first_index is None and c.histogram == {}


def test_compare_reports_first_index_max_diff_and_signed_histogram():
    e = np.zeros((3, 4), np.int8)
    a = e.copy()
    a[1, 2], a[2, 0], a[2, 3] = 1, -2, 1
    c = compare(e, a, "out")
    assert (c.mismatches, c.first_index, c.max_abs_diff) == (3, (1, 2), 2)
    assert (c.expected_value, c.actual_value) == (0, 1)
    assert c.histogram == {"-2": 1, "1": 2}


def test_compare_pools_large_differences_in_histogram_tails():
    c = compare(np.zeros(3, np.int32), np.array([100, -100, 3], np.int32))
    assert c.histogram == {"<-16": 1, "3": 1, ">16": 1}
    assert c.max_abs_diff == 100


def test_compare_floats_by_bit_pattern():
    assert not compare(np.array([0.0], np.float32), np.array([-0.0], np.float32)).passed
    nan = np.array([np.nan], np.float32)
    assert compare(nan, nan.copy()).passed
    up = np.nextafter(np.float32(1), np.float32(2))
    c = compare(np.array([1.0], np.float32), np.array([up], np.float32))
    assert (c.mismatches, c.max_abs_diff, c.unit) == (1, 1, "ULP")


def test_compare_floats_in_lsb_units():
    c = compare(np.array([0.0, 1.0]), np.array([0.5, 1.0]), lsb=0.25)
    assert (c.max_abs_diff, c.unit, c.histogram) == (2.0, "LSB", {"2": 1})


def test_compare_refuses_different_shapes_and_kinds():
    with pytest.raises(ValueError, match="shapes differ"):
        compare(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="integer with float"):
        compare(np.zeros(3, np.int8), np.zeros(3))


def test_float_error_bias_rms_max_and_saturation():
    fe = float_error([1.0, 2.0, 3.0], [1.1, 2.0, 3.5], 0.1, lo=0.0, hi=3.2)
    assert fe.saturated == 1
    assert fe.mean_lsb == pytest.approx(-1.0)
    assert fe.max_abs_lsb == pytest.approx(2.0)
    assert fe.rms_lsb == pytest.approx(np.sqrt((1 + 0 + 4) / 3))


def test_float_error_without_error_has_no_sqnr():
    assert float_error([1.0, -2.0], [1.0, -2.0], 1.0).sqnr_db is None


# --------------------------------------------------------------------------------------- vectors
def test_c_header_has_guard_sizes_types_and_int32_min_literal():
    h = c_header("fc-tie", {"input": np.arange(6, dtype=np.int8).reshape(2, 3),
                            "multiplier": np.array([-(2**31), 7], np.int32)},
                 {"input_zero_point": -1, "scheme": "double"})
    assert "#ifndef DSPSIM_FC_TIE_H" in h and h.rstrip().endswith("#endif /* DSPSIM_FC_TIE_H */")
    assert "static const int8_t fc_tie_input[6] = {" in h
    assert "#define FC_TIE_INPUT_DIM1 3" in h and "#define FC_TIE_INPUT_ZERO_POINT (-1)" in h
    assert "(-2147483647 - 1)" in h and '#define FC_TIE_SCHEME "double"' in h


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_header_compiles(tmp_path):
    h = c_header("v", {"a": np.array([-128, 127], np.int8), "f": np.array([0.1, -np.inf], np.float32),
                       "q": np.array([-(2**63)], np.int64)}, {"n": 3})
    (tmp_path / "v.h").write_text(h)
    (tmp_path / "m.c").write_text('#include "v.h"\nint main(void) { return V_A_SIZE - 2 + (int)v_a[0] + 128; }\n')
    subprocess.run(["cc", "-Wall", "-Werror", "-fsyntax-only", str(tmp_path / "m.c")], check=True)


def test_load_vectors_npz_npy_and_key(tmp_path):
    save_npz(tmp_path / "a.npz", {"x": np.arange(3)}, {"zp": 2})
    assert set(load_vectors(tmp_path / "a.npz")) == {"x", "zp"}
    np.save(tmp_path / "b.npy", np.ones(2, np.int8))
    assert list(load_vectors(tmp_path / "b.npy")) == ["b"]
    assert list(load_vectors(tmp_path / "b.npy", key="out")) == ["out"]
    with pytest.raises(VectorError, match="no array named 'y'"):
        load_vectors(tmp_path / "a.npz", key="y")


def test_load_vectors_rejects_missing_and_corrupt_files(tmp_path):
    with pytest.raises(VectorError, match="no such file"):
        load_vectors(tmp_path / "nope.npz")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.raises(VectorError, match="not a readable"):
        load_vectors(tmp_path / "bad.npz")


# --------------------------------------------------------------------------------------- suites
def _toml(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, message", [
    ("[[case]\nop = 1", "invalid TOML"),
    ('[[case]]\nop = "matmul"', "unknown op 'matmul'"),
    ('[[case]]\nop = "relu"\ncolour = 3', "has no parameter 'colour'"),
    ('[[case]]\nop = "tf_quantize"\nmode = "MIN_LAST"', "is not one of"),
    ('[[case]]\nname = "a"\nop = "relu"\n[[case]]\nname = "a"\nop = "relu"', "duplicate case name"),
    ('[suite]\nname = "x"', "no cases"),
    ('[[case]]\nop = "relu"\nvectors = "missing.npz"', "no such file"),
    ('[[case]]\nname = "n"', "has no 'op'"),
    ('[[case]]\nop = "relu"\nshape = "abc"', "wrong type"),
    ('[[case]]\nop = "tf_quantize"\nnarrow_range = 1', "wrong type"),
])
def test_load_suite_rejects_bad_definitions_with_one_line(tmp_path, text, message):
    with pytest.raises(SuiteError, match=message) as info:
        load_suite(_toml(tmp_path, text))
    assert "\n" not in str(info.value)


def test_load_suite_resolves_vectors_relative_to_the_file(tmp_path):
    save_npz(tmp_path / "v.npz", {"input": np.arange(-4, 4, dtype=np.int8)})
    name, cases = load_suite(_toml(tmp_path, '[suite]\nname = "mine"\nseed = 5\n'
                                              '[[case]]\nop = "relu"\nvectors = "v.npz"'))
    assert name == "mine" and cases[0].seed == 5 and cases[0].vectors == str(tmp_path / "v.npz")


def test_toml_cases_run_and_pass(tmp_path):
    _, cases = load_suite(_toml(tmp_path, """
[[case]]
name = "fc"
op = "fully_connected"
batch = 2
in_features = 8
out_features = 3
multiplier = 1073741824
shift = -1
input_range = [-8, 8]
weight_range = [-8, 8]
[[case]]
name = "q"
op = "tf_quantize"
shape = [17]
[[case]]
name = "p"
op = "pof2_quantize"
shape = [9]
"""))
    res = run_suite(cases)
    assert res.passed, [(r.case.name, r.error) for r in res.results]
    fc = res.results[0].outcome
    assert {c.name for c in fc.checks} >= {"oracle: double", "oracle: single", "oracle: fbgemm"}
    assert {s.name for s in fc.schemes} == {"single", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack"}


def test_expected_tensor_in_vector_file_is_checked_bit_for_bit(tmp_path):
    x = np.arange(-8, 8, dtype=np.int8)
    save_npz(tmp_path / "v.npz", {"input": x, "expected": np.maximum(x, 0) + np.int8(1)})
    _, cases = load_suite(_toml(tmp_path, '[[case]]\nop = "relu"\nvectors = "v.npz"\n'
                                          'multiplier = 1073741824\nshift = 1'))
    r = run_case(cases[0])
    assert r.status == "fail"
    bad = [c for c in r.checks if not c.passed]
    assert [c.name for c in bad] == ["vectors: expected"] and bad[0].mismatches == 16


def test_a_case_whose_parameters_dspsim_refuses_is_an_error_not_a_crash():
    r = run_case(Case("bad", "relu", {"input_zero_point": 500}))
    assert r.status == "error" and "input_zero_point" in r.error


def test_validate_case_checks_names_and_choices():
    with pytest.raises(SuiteError, match="unknown op"):
        validate_case(Case("c", "nope"))
    validate_case(Case("c", "conv2d", {"padding": "SAME"}))


def test_default_suite_covers_every_op_with_unique_names():
    full, quick = default_suite(), default_suite(quick=True)
    assert len({c.name for c in full}) == len(full)
    assert {c.op for c in full} == set(vocabulary()) == {c.op for c in quick}
    assert len(quick) < len(full) / 2
    for c in full:
        validate_case(c)


def test_oracle_sample_indices_keep_the_ends():
    idx = _sample_indices(64, 3)
    assert idx[0] == 0 and idx[-1] == 63 and len(idx) == 3
    assert list(_sample_indices(4, 10)) == [0, 1, 2, 3]


def test_kernel_cases_beyond_the_oracle_budget_are_checked_on_a_stated_sample():
    r = run_case(Case("big", "fully_connected", {"batch": 64, "in_features": 256, "out_features": 64}))
    assert r.status == "pass"
    assert all(c.sampled and c.sampled.startswith("batch rows [0,") for c in r.checks)


# --------------------------------------------------------------------------------------- reports
def test_atomic_dir_leaves_nothing_on_interrupt(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(out) as tmp:
            (tmp / "summary.md").write_text("half")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_atomic_dir_replaces_an_existing_report_whole(tmp_path):
    out = tmp_path / "run"
    with atomic_dir(out) as tmp:
        (tmp / "stale.txt").write_text("old")
    with atomic_dir(out) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_atomic_dir_refuses_to_replace_a_directory_dspsim_did_not_write(tmp_path):
    (tmp_path / "precious.txt").write_text("keep")
    with pytest.raises(ValueError, match="not written by dspsim"):
        with atomic_dir(tmp_path):
            pass
    assert (tmp_path / "precious.txt").read_text() == "keep"


def test_suite_report_files_and_json_schema(tmp_path):
    res = run_suite([Case("r", "relu", {"shape": [9]}), Case("bad", "relu", {"input_zero_point": 500})], name="t")
    d = res.to_dict()
    out = write_suite_report(d, tmp_path / "rep")
    data = json.loads((out / "results.json").read_text())
    assert data["schema"] == "dspsim.suite/1"
    assert data["summary"] == {**data["summary"], "cases": 2, "passed": 1, "errors": 1}
    assert data["cases"][0]["checks"][0]["mismatches"] == 0
    md = (out / "summary.md").read_text()
    assert "**FAIL**" in md and "## Failures" in md and "input_zero_point" in md
    assert "r" in render_suite_md(d)


def test_a_vector_files_input_sets_the_kernel_shapes(tmp_path):
    x = np.random.default_rng(0).integers(-128, 128, (1, 5, 5, 3)).astype(np.int8)
    save_npz(tmp_path / "d.npz", {"input": x})
    _, cases = load_suite(_toml(tmp_path, '[[case]]\nop = "conv2d"\nvectors = "d.npz"\npadding = "SAME"'))
    r = run_case(cases[0])
    assert r.status == "pass" and r.outcome.vectors["output"].shape == (1, 5, 5, 8)


def test_toml_suites_read_with_tomli_on_python_3_10(tmp_path, monkeypatch):
    import sys

    tomllib = pytest.importorskip("tomllib")  # on a real 3.10 every other TOML test takes the tomli path
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))  # as on Python 3.10, which has no
    monkeypatch.setitem(sys.modules, "tomllib", None)                   # tomllib ...
    monkeypatch.setitem(sys.modules, "tomli", tomllib)  # ... but the tomli package (same API) in its place
    _, cases = load_suite(_toml(tmp_path, '[[case]]\nop = "relu"\nseed = 7'))
    assert [(c.op, c.seed) for c in cases] == [("relu", 7)]


def test_compare_counts_exactly_the_differing_elements():
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    @settings(max_examples=200, deadline=None)
    @given(hnp.arrays(np.int16, hnp.array_shapes(max_dims=3, max_side=6)), st.data())
    def check(e, data):
        a = data.draw(hnp.arrays(np.int16, e.shape))
        c = compare(e, a)
        diff = a.astype(np.int64) - e.astype(np.int64)
        assert c.mismatches == np.count_nonzero(diff)
        assert sum(c.histogram.values()) == c.mismatches
        if c.mismatches:
            first = np.ravel_multi_index(c.first_index, e.shape)
            assert diff.ravel()[first] != 0 and not diff.ravel()[:first].any()
            assert c.max_abs_diff == np.abs(diff).max()

    check()

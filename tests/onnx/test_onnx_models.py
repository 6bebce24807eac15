"""Quantized ONNX models (tests/golden/onnx/models/*.onnx, made by quantize_static in
tests/golden/make_golden_onnx_models.py) run through dspsim.onnx.load_model, compared bit for bit with
what ONNX Runtime (optimizations off and on) and the onnx reference evaluator computed
(tests/golden/onnx/models_<net>.npz): every stored tensor, intermediates included.

Claimed bit-exact, and asserted here (0 mismatches):
* QOperator models under "onnxruntime" (every intermediate) and "onnxruntime-optimized";
* QDQ models (U8S8 and S8S8, every variant) under "onnxruntime-optimized" (graph outputs; ORT keeps
  no intermediates of a fused graph);
* QDQ opset-21 models under "onnx-reference" (every intermediate, floats included: dspsim calls the
  same numpy operations in the same order);
* QDQ models under "onnxruntime" (optimizations off: the float ops between DQ and Q as written) on
  every tensor, floats included: dspsim reproduces the MLAS float kernels these nets reach on this
  (AVX2 + FMA) host; other kernels or hosts may sum in other orders (docs/engines.md "ONNX").
"""
import glob
import json
import os

import numpy as np
import pytest

import dspsim
import dspsim.onnx as donnx

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx")
Z, META = {}, {"models": []}
for _path in sorted(glob.glob(os.path.join(HERE, "models_*.npz"))):  # one file per net
    with np.load(_path) as _z:
        _meta = json.loads(str(_z["meta"]))
        META["versions"] = _meta["versions"]
        META["models"] += _meta["models"]
        Z.update({k: _z[k] for k in _z.files if k != "meta"})
MODELS = {m["name"]: m for m in META["models"]}
ENGINE = {"ort": "onnxruntime", "ortopt": "onnxruntime-optimized", "ref": "onnx-reference"}
_LOADED = {}


def load(name, engine):
    key = (name, engine)
    if key not in _LOADED:
        _LOADED[key] = donnx.load_model(os.path.join(HERE, "models", f"{name}.onnx"), engine=engine)
    return _LOADED[key]


def compare(name, key, select=lambda tensor, want: True):
    """(values compared, mismatches, names of the mismatching tensors) over both input sets."""
    model = load(name, ENGINE[key])
    total, bad, where = 0, 0, set()
    for r in range(2):
        trace = {t.name: t.value for t in model.trace([Z[f"{name}/r{r}/in"]])}
        prefix = f"{name}/r{r}/{key}/"
        for k in Z:
            if not k.startswith(prefix):
                continue
            tensor, want = k[len(prefix):], Z[k]
            if not select(tensor, want):
                continue
            assert tensor in trace, f"dspsim produced no tensor {tensor!r}"
            got = np.asarray(trace[tensor])
            assert got.dtype == want.dtype and got.shape == want.shape, tensor
            if want.dtype.kind == "f":
                diff = got.view(f"u{got.itemsize}") != want.view(f"u{want.itemsize}")
            else:
                diff = got != want
            total += diff.size
            bad += int(diff.sum())
            if diff.any():
                where.add(tensor)
    return total, bad, sorted(where)


def names(pred):
    return [n for n, m in MODELS.items() if pred(m)]


def test_golden_covers_every_variant_and_net():
    assert {m["net"] for m in MODELS.values()} == {"cnn", "residual", "mlp", "dwsep", "misc", "unet"}
    assert {m["variant"] for m in MODELS.values()} == {"qdq_u8s8_pt_op13", "qdq_s8s8_pc_op21", "qop_u8s8_pt_op13",
                                                       "qop_s8s8_pc_op21", "pof2_qdq_s8s8"}


@pytest.mark.parametrize("name", names(lambda m: m["variant"].startswith("qop")))
def test_qoperator_models_bit_exact_with_onnxruntime_on_every_intermediate(name):
    total, bad, where = compare(name, "ort")
    assert total > 300 and bad == 0, where


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_bit_exact_with_onnxruntime_optimized(name):
    total, bad, where = compare(name, "ortopt")
    assert total >= 20 and bad == 0, where  # 20: the graph outputs; more: 8-bit Resize outputs too


UNET_QOP = names(lambda m: m["net"] == "unet" and m["variant"].startswith("qop"))


def _is_resize(tensor, want):
    return "resize" in tensor


@pytest.mark.parametrize("name", UNET_QOP)
def test_optimized_qoperator_resize_after_qlinearconv_runs_ort_nhwc_integer_kernel(name):
    """ORT_ENABLE_ALL carries the NHWC layout of its QLinearConv into the Resize nodes after it,
    whose 8-bit linear kernel then has 10-bit integer weights: other codes than with optimizations
    off (float weights, NCHW). dspsim reproduces both; without the layout rule it would not."""
    total, bad, where = compare(name, "ortopt", _is_resize)
    assert total > 4000 and bad == 0, where
    changed = sum(int(np.count_nonzero(Z[k] != Z[k.replace("/ortopt/", "/ort/")])) for k in Z
                  if k.startswith(f"{name}/") and "/ortopt/" in k and "resize" in k)
    assert changed > 10


@pytest.mark.parametrize("name", names(lambda m: "ref" not in m["errors"]))
def test_qdq_models_bit_exact_with_the_onnx_reference_on_every_intermediate(name):
    """Floats included: numpy's OpenBLAS kernel must be the goldens' (tests/conftest.py sets it before numpy loads)."""
    total, bad, where = compare(name, "ref")
    assert total > 500 and bad == 0, (where, "OPENBLAS_CORETYPE=" + os.environ.get("OPENBLAS_CORETYPE", "(unset)"))


@pytest.mark.parametrize("name", names(lambda m: m["variant"].startswith("pof2")))
def test_pof2_models_bit_exact_with_unoptimized_onnxruntime_on_every_integer_tensor(name):
    total, bad, where = compare(name, "ort", lambda tensor, want: want.dtype.kind in "iu")
    assert total > 300 and bad == 0, where


@pytest.mark.parametrize("name", names(lambda m: not m["variant"].startswith("qop")))
def test_qdq_models_bit_exact_with_unoptimized_onnxruntime_on_every_tensor_floats_included(name):
    """The float ops between DQ and Q as MLAS runs them (one-row and im2col SGEMM, the transposed-B
    one-row kernel, pooling kernels by opset, FMA3 logistic, sum-exp softmax)."""
    total, bad, where = compare(name, "ort")
    assert total > 500 and bad == 0, where


def _with_opset(name, opset):
    """The committed model ``name`` with its ai.onnx opset import raised to ``opset`` (onnx needed)."""
    onnx = pytest.importorskip("onnx")
    m = onnx.load(os.path.join(HERE, "models", f"{name}.onnx"))
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    m.ir_version = 10 if opset <= 22 else 11
    return m.SerializeToString()


OPSET21 = names(lambda m: "op21" in m["variant"] or m["variant"].startswith("pof2"))


@pytest.mark.parametrize("opset", [22, 23])
def test_opset_22_and_23_models_load_and_match_the_opset_21_golden(opset):
    """No operator dspsim runs changed its semantics in opsets 22-23 (bfloat16 / int4 type additions),
    and ORT 1.32 computes these models bit for bit as at opset 21 (live check: test_onnx_live.py)."""
    total = 0
    for name in OPSET21:
        for key in ("ort", "ortopt", "ref"):
            if key == "ref" and "ref" in MODELS[name]["errors"]:
                continue
            model = donnx.load_model(_with_opset(name, opset), engine=ENGINE[key])
            for r in range(2):
                want = Z[f"{name}/r{r}/{key}/output"]
                got = model.run([Z[f"{name}/r{r}/in"]])[0]
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (name, key)
                total += want.size
    assert total >= 960  # 18 models, 2 inputs, 10 outputs, 2 or 3 engines


def test_opset13_qdq_models_are_refused_by_the_reference_evaluator_itself():
    refused = names(lambda m: "ref" in m["errors"])
    assert sorted(refused) == sorted(names(lambda m: m["variant"].startswith("qop") or "op13" in m["variant"]))


# ---------------------------------------------------------------------------------------------
# the Model interface
# ---------------------------------------------------------------------------------------------
NAME = "cnn_qop_u8s8_pt_op13"


def test_run_accepts_a_list_or_a_dict_by_name_and_batches():
    model = load(NAME, "onnxruntime")
    x0, x1 = Z[f"{NAME}/r0/in"], Z[f"{NAME}/r1/in"]
    want0 = Z[f"{NAME}/r0/ort/output"]
    assert np.array_equal(model.run([x0])[0], want0)
    assert np.array_equal(model.run({"input": x0})[0], want0)
    batch = model.run_batch([np.stack([x0, x1])])[0]
    assert batch.shape == (2,) + want0.shape
    assert np.array_equal(batch[1], Z[f"{NAME}/r1/ort/output"])
    model.reset()
    assert np.array_equal(model.run([x0])[0], want0)


def test_trace_lists_every_node_output_in_order():
    model = load(NAME, "onnxruntime")
    trace = model.trace([Z[f"{NAME}/r0/in"]])
    assert trace[0].op == "INPUT"
    assert [t.op for t in trace[1:]] == [op for _, op in model.nodes]


def test_inputs_of_the_wrong_type_shape_or_name_are_refused():
    model = load(NAME, "onnxruntime")
    x = Z[f"{NAME}/r0/in"]
    with pytest.raises(TypeError, match="element type FLOAT"):
        model.run([x.astype(np.float64)])
    with pytest.raises(ValueError, match="shape"):
        model.run([x[:, :, :8]])
    with pytest.raises(ValueError, match="missing"):
        model.run({"x": x})


def test_qoperator_com_microsoft_ops_are_refused_for_the_reference_engine():
    with pytest.raises(ValueError, match="the onnx reference evaluator has none"):
        load(NAME, "onnx-reference")


# ---------------------------------------------------------------------------------------------
# power-of-two models as a DSP runs them (shift-only requantization)
# ---------------------------------------------------------------------------------------------
POF2 = names(lambda m: m["variant"].startswith("pof2"))


def shift_dsp(rounding, engine="onnxruntime-optimized"):
    """A DSP that requantizes every MAC layer by a shift with the tie rule ``rounding``, as a device profile."""
    return dspsim.DeviceProfile.from_dict({"engine": engine, "name": f"dsp-shift-{rounding}",
                                           "mac": {"requantization": "shift", "shift_rounding": rounding}})


def dsp_vs_ort(name, rounding):
    """(integer values compared, differing) between the DSP emulation and unoptimized ORT."""
    dsp = donnx.load_model(os.path.join(HERE, "models", f"{name}.onnx"), engine=shift_dsp(rounding))
    total = bad = 0
    for r in range(2):
        trace = {t.name: t.value for t in dsp.trace([Z[f"{name}/r{r}/in"]])}
        prefix = f"{name}/r{r}/ort/"
        for k in Z:
            tensor = k[len(prefix):]
            if k.startswith(prefix) and Z[k].dtype.kind in "iu" and tensor in trace:
                total += Z[k].size
                bad += int((np.asarray(trace[tensor]) != Z[k]).sum())
    return total, bad


@pytest.mark.parametrize("name", POF2)
def test_dsp_shift_requantization_with_ties_to_even_equals_unoptimized_onnxruntime(name):
    total, bad = dsp_vs_ort(name, "half_to_even")
    assert total > 300 and bad == 0


@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_up"])
def test_dsp_tie_rules_other_than_even_change_some_codes(rounding):
    assert sum(dsp_vs_ort(n, rounding)[1] for n in POF2) > 100


def test_shift_requantization_refuses_scales_that_are_not_powers_of_two():
    with pytest.raises(ValueError, match="power-of-two scales"):
        donnx.load_model(os.path.join(HERE, "models", "cnn_qop_u8s8_pt_op13.onnx"),
                         engine=shift_dsp("half_up", "onnxruntime")).run([Z["cnn_qop_u8s8_pt_op13/r0/in"]])


def test_golden_host_has_no_vnni_and_a_vnni_host_model_would_differ():
    assert "avx512_vnni" not in META["versions"]["cpu"] and "avx2" in META["versions"]["cpu"]
    name = "dwsep_qop_u8s8_pt_op13"
    vnni = donnx.load_model(os.path.join(HERE, "models", f"{name}.onnx"), engine="onnxruntime-vnni")
    got = vnni.run([Z[f"{name}/r0/in"]])[0]
    assert np.count_nonzero(got != Z[f"{name}/r0/ort/output"]) > 0  # exact int32 sums: not this host's ORT

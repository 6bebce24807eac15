"""Engine "tflm-cmsis-nn" against TensorFlow Lite Micro built with CMSIS-NN kernels, every tensor of every Invoke.

The goldens are read where they live, ../shared/goldens/tflm-cmsis-nn/ (README there: the build, the inputs, the
keys): for every model of ../shared/models/tflite-micro, the four microWakeWord models of pymicro-wakeword and three
single-operator probes, 3 input sets of T Invokes each (state kept within a set), the outputs of every Invoke and
a sha256 of every non-constant tensor after it (graph inputs, operator outputs, variable tensors). A golden whose
model is absent is skipped, as is the whole file where the goldens are absent; a model the engine refuses must
be refused by name. The probes also hold TFLM's reference kernels on the same inputs, so each of the engine's
defects is shown to change the integers where it should and only there.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import warnings

import numpy as np
import pytest

from dspsim.engines import EngineDefectWarning
from dspsim.tflite import load_model
from shared_models import SHARED, existing, pymicro_wakeword_model, tflite_micro_model

GOLDENS = os.path.join(SHARED, "goldens", "tflm-cmsis-nn")
FILES = sorted(glob.glob(os.path.join(GOLDENS, "*.npz")) + glob.glob(os.path.join(GOLDENS, "probes", "*.npz")))
FILES = [f for f in FILES if not os.path.basename(f).startswith("svdf_int8_state_m55")]
ENGINE = "tflm-cmsis-nn"


def _model_path(source):
    """The .tflite a golden's ``model`` key names, or None when it is not on this machine."""
    if source.startswith("pymicro-wakeword"):
        return pymicro_wakeword_model(source.split("pymicro_wakeword/", 1)[1])
    if source.startswith("probes/"):
        return existing(os.path.join(GOLDENS, source))
    return tflite_micro_model(source)


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EngineDefectWarning)
        return load_model(path, engine=ENGINE)


def _mismatches(z, model):
    """Every output and every tensor digest of every Invoke of every set that differs, as strings."""
    n_sets, n_invokes = int(z["n_sets"]), int(z["n_invokes"])
    info = json.loads(str(z["tensor_info"]))
    digests = z["tensor_sha256"]
    n_in, n_out = len(z["input_index"]), len(z["output_index"])
    bad = []
    for s in range(n_sets):
        model.reset()
        for t in range(n_invokes):
            trace = model.trace([z[f"in_s{s}_i{k}"][t] for k in range(n_in)])
            values = {e.tensor: e.value for e in trace if "(state write)" not in e.name}
            values.update(model.variables())  # the state after this Invoke
            for k in range(n_out):
                want, got = z[f"out_s{s}_o{k}"][t], values[int(z["output_index"][k])]
                if got.dtype != want.dtype or not np.array_equal(got, want):
                    bad.append(f"set {s} invoke {t} output {k}: {np.count_nonzero(got != want)} of {want.size}")
            for n, entry in enumerate(info):
                if entry["type"] == "RESOURCE":  # a handle: TFLM's resource id, not data dspsim models
                    continue
                v = values.get(entry["index"])
                got = None if v is None else hashlib.sha256(np.ascontiguousarray(v).tobytes()).digest()
                if got != bytes(digests[s, t, n]):
                    bad.append(f"set {s} invoke {t} tensor {entry['index']} ({entry['written_by']})")
    return bad


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f)[:-4] for f in FILES])
def test_every_tensor_of_every_invoke_matches_tflm_with_cmsis_nn(path):
    z = np.load(path)
    model_path = _model_path(str(z["model"]))
    if model_path is None:
        pytest.skip(f"{z['model']} is not on this machine")
    try:
        model = _load(model_path)
    except ValueError as exc:
        if "does not support" in str(exc) or "supported:" in str(exc):
            pytest.skip(str(exc).split(" (dspsim.tflite")[0])
        raise
    bad = _mismatches(z, model)
    assert not bad, f"{len(bad)} mismatches; first: {bad[:5]}"


PROBES = {os.path.basename(f)[:-4]: f for f in FILES if os.sep + "probes" + os.sep in f}


def _outputs(model, z, s):
    """Output 0 of every Invoke of set ``s`` from a reset model."""
    model.reset()
    n_in, out = len(z["input_index"]), []
    for t in range(int(z["n_invokes"])):
        y = model.run([z[f"in_s{s}_i{k}"][t] for k in range(n_in)])
        out.append(y[0] if isinstance(y, list) else y)
    return out


@pytest.mark.parametrize("probe", ["probe_lstm_state_reset", "probe_svdf_int8_state"])
def test_a_probe_gives_cmsis_nn_integers_under_its_engine_and_the_reference_under_tflm(probe):
    """The defect is what separates the two engines: on the probe, engine "tflm" gives TFLM's reference kernels'
    integers (the ``tflm_ref_*`` keys), "tflm-cmsis-nn" the CMSIS-NN build's, and the two differ."""
    if probe not in PROBES:
        pytest.skip("the tflm-cmsis-nn goldens are not on this machine")
    z = np.load(PROBES[probe])
    path = _model_path(str(z["model"]))
    with pytest.warns(EngineDefectWarning, match="CMSIS-NN"):
        cmsis = load_model(path, engine=ENGINE)
    ref = load_model(path, engine="tflm")
    differ = 0
    for s in range(int(z["n_sets"])):
        for t, (got_c, got_r) in enumerate(zip(_outputs(cmsis, z, s), _outputs(ref, z, s))):
            want_c, want_r = z[f"out_s{s}_o0"][t], z[f"tflm_ref_out_s{s}_o0"][t]
            assert np.array_equal(got_c, want_c) and np.array_equal(got_r, want_r), f"set {s} invoke {t}"
            differ += int(np.count_nonzero(want_c != want_r))
    assert differ > 0


def test_the_transpose_conv_row_bug_is_reproduced_and_the_fixed_commit_is_the_reference():
    """CMSIS-NN 4ab83cc's row bug (every row after the top padding misplaced, the last one unwritten) is what
    ``tflm-cmsis-nn`` computes, with a warning; the engine of the fixed commit (4a8f5b5) gives the reference
    kernels' integers, as the build with the fixed file did."""
    if "probe_transpose_conv_int8_rows" not in PROBES:
        pytest.skip("the tflm-cmsis-nn goldens are not on this machine")
    z = np.load(PROBES["probe_transpose_conv_int8_rows"])
    path = _model_path(str(z["model"]))
    with pytest.warns(EngineDefectWarning, match="arm_transpose_conv_s8"):
        buggy = load_model(path, engine=ENGINE)
    fixed = load_model(path, engine="tflm-cmsis-nn-4a8f5b5")
    for s in range(int(z["n_sets"])):
        for t, (got_b, got_f) in enumerate(zip(_outputs(buggy, z, s), _outputs(fixed, z, s))):
            assert np.array_equal(got_b, z[f"out_s{s}_o0"][t]), f"set {s} invoke {t}"
            assert np.array_equal(got_f, z[f"tflm_ref_out_s{s}_o0"][t]), f"set {s} invoke {t}"
        assert not np.array_equal(z[f"out_s{s}_o0"], z[f"tflm_ref_out_s{s}_o0"])


@pytest.mark.skipif(not FILES, reason="the tflm-cmsis-nn goldens are not on this machine")
def test_the_goldens_cover_the_development_models():
    assert len(FILES) >= 142


M55 = os.path.join(GOLDENS, "svdf_int8_state_m55.npz")


@pytest.mark.parametrize("name", ["keyword_scrambled_8bit", "probes/probe_svdf_int8_state"])
@pytest.mark.parametrize("engine, build", [("tflm-cmsis-nn", "x86"), ("tflm-cmsis-nn-m55", "m55")])
def test_int8_state_svdf_matches_the_c_path_and_the_helium_path(name, engine, build):
    """The Cortex-M55 build (QEMU) differs from the C path only in the int8-state SVDF's zero-point term: every
    state and output of every Invoke, per build, from ``svdf_int8_state_m55.npz``."""
    if not os.path.isfile(M55):
        pytest.skip("the tflm-cmsis-nn goldens are not on this machine")
    m55, z = np.load(M55), np.load(os.path.join(GOLDENS, f"{name}.npz"))
    key = os.path.basename(name)
    path = _model_path(str(z["model"]))
    if path is None:
        pytest.skip(f"{z['model']} is not on this machine")
    with pytest.warns(EngineDefectWarning, match="SVDF"):
        model = load_model(path, engine=engine)
    n_in = len(z["input_index"])
    for s in range(int(z["n_sets"])):
        model.reset()
        for t in range(int(m55[f"{key}__n_invokes"])):
            y = model.run([z[f"in_s{s}_i{k}"][t] for k in range(n_in)])
            y = y[0] if isinstance(y, list) else y
            assert np.array_equal(y, m55[f"{key}__{build}_out_s{s}_o0"][t]), f"set {s} invoke {t} output"
            state = model.variables()
            for i in m55[f"{key}__state_index"]:
                want = m55[f"{key}__{build}_state_s{s}_t{i}"][t]
                assert np.array_equal(state[int(i)].reshape(want.shape), want), f"set {s} invoke {t} state {i}"


def test_diagnose_names_tflm_cmsis_nn_from_a_cortex_m_builds_dump(tmp_path):
    """The SVDF probe's first Invoke as the CMSIS-NN build dumped it (its output, from the golden), diagnosed against
    TFLM's reference kernels: the engine search names the engine that reproduces it."""
    from dspsim.harness.diagnose import diagnose

    if "probe_svdf_int8_state" not in PROBES:
        pytest.skip("the tflm-cmsis-nn goldens are not on this machine")
    z = np.load(PROBES["probe_svdf_int8_state"])
    np.save(tmp_path / f"t{int(z['output_index'][0])}.npy", z["out_s0_o0"][0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EngineDefectWarning)
        result = diagnose(_model_path(str(z["model"])), [z["in_s0_i0"][0]], tmp_path, "tflm")
    assert not result["passed"] and result["first_divergence"]["locality"] == "local"
    assert "engine=tflm-cmsis-nn" in result["reproduced_by"]

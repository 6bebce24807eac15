"""TFLite Micro's Signal custom operators against the tflite-micro wheel (tests/golden/make_golden_signal.py):
each operator alone on the golden inputs and options (from the .npz alone, so this runs on a clean clone), and
the two front-end models of ../shared frame by frame with state (skipped where ../shared is absent), the committed
one-op models of the streaming ops; then the custom options' FlexBuffer reader on good and hostile bytes."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import dspsim
from dspsim.kernels.signal import (
    signal_energy, signal_fft_auto_scale, signal_filter_bank, signal_filter_bank_log,
    signal_filter_bank_spectral_subtraction, signal_filter_bank_square_root, signal_pcan, signal_rfft, signal_window,
)
from dspsim.tflite.flexbuffers import read_flexbuffer
from shared_models import fresh_model, tflite_micro_model

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
MODELS = {"audio_preprocessor_int8": lambda: tflite_micro_model("audio_preprocessor_int8.tflite"),
          "openmv_audio_preprocessor": lambda: fresh_model("openmv_audio_preprocessor.tflite")}
_SUBTRACTION = ("smoothing", "one_minus_smoothing", "alternate_smoothing", "alternate_one_minus_smoothing",
                "smoothing_bits", "spectral_subtraction_bits", "min_signal_remaining", "clamping")
KERNELS = {
    "SignalWindow": lambda ins, o, st: signal_window(ins[0], ins[1], o["shift"]),
    "SignalFftAutoScale": lambda ins, o, st: signal_fft_auto_scale(ins[0]),
    "SignalRfft": lambda ins, o, st: signal_rfft(ins[0], o["fft_length"]),
    "SignalEnergy": lambda ins, o, st: signal_energy(ins[0], o["start_index"], o["end_index"]),
    "SignalFilterBank": lambda ins, o, st: signal_filter_bank(*ins, o["num_channels"]),
    "SignalFilterBankSquareRoot": lambda ins, o, st: signal_filter_bank_square_root(ins[0], int(ins[1])),
    "SignalFilterBankSpectralSubtraction": lambda ins, o, st: signal_filter_bank_spectral_subtraction(
        ins[0], st.get("estimate", np.zeros(o["num_channels"], np.uint32)), **{k: o[k] for k in _SUBTRACTION}),
    "SignalPCAN": lambda ins, o, st: signal_pcan(*ins, o["snr_shift"]),
    "SignalFilterBankLog": lambda ins, o, st: signal_filter_bank_log(ins[0], o["output_scale"],
                                                                     o["input_correction_bits"]),
}


def _golden(name):
    z = np.load(os.path.join(GOLDEN, f"signal_{name}.npz"))
    return z, json.loads(str(z["meta"]))


def _compared(op, t, value):
    """The part of tensor ``t`` the wheel defines: SignalEnergy leaves the bins outside its band untouched."""
    if op["name"] == "SignalEnergy" and t == op["outputs"][0]:
        return np.asarray(value)[op["options"]["start_index"]:op["options"]["end_index"]]
    return np.asarray(value)


def test_each_signal_op_equals_the_wheel_on_every_golden_frame():
    z, meta = _golden("audio_preprocessor_int8")  # openmv's file keeps its output only (the same Signal ops)
    counts = {}
    for op in meta["ops"]:
        for k in range(len(z["kinds"])):
            state = {}
            for f in range(meta["frames"]):
                ins = [z[f"c{i}"] if f"c{i}" in z.files else z[f"t{i}"][k, f] if f"t{i}" in z.files
                       else z["input"][k, f] for i in op["inputs"]]
                outs = KERNELS[op["name"]](ins, op["options"], state)
                outs = outs if isinstance(outs, tuple) else (outs,)
                if op["name"] == "SignalFilterBankSpectralSubtraction":
                    state["estimate"] = outs[1]
                for t, got in zip(op["outputs"], outs):
                    want = z[f"t{t}"][k, f]
                    np.testing.assert_array_equal(_compared(op, t, np.reshape(got, want.shape)),
                                                  _compared(op, t, want), err_msg=f"{op['name']} {z['kinds'][k]} {f}")
                    assert not isinstance(got, np.ndarray) or got.dtype == want.dtype
        counts[op["name"]] = len(z["kinds"]) * meta["frames"]
    assert set(counts) == set(KERNELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_front_end_model_equals_the_wheel_frame_by_frame_with_state(name):
    path = MODELS[name]()
    if path is None:
        pytest.skip("../shared/models is not beside the checkout")
    z, meta = _golden(name)
    model = dspsim.load_model(path, engine="tflm")
    assert model.stateful
    for k, kind in enumerate(z["kinds"]):
        model.reset()
        for f in range(meta["frames"]):
            values = {e.tensor: e.value for e in model.trace(z["input"][k, f])}
            for t in meta["tensors"]:  # what the golden file keeps: every Signal tensor, or the output only
                op = next((o for o in meta["ops"] if int(t) in o["outputs"]), {"name": "", "outputs": []})
                want = z[f"t{t}"][k, f]
                np.testing.assert_array_equal(_compared(op, int(t), np.reshape(values[int(t)], want.shape)),
                                              _compared(op, int(t), want), err_msg=f"tensor {t} {kind} frame {f}")
    # every kind as an independent stream of run_batch: the same outputs, each with its own noise estimate
    model.reset()
    out_t = next(int(t) for t, v in meta["tensors"].items() if v[0] == "output")
    for f in range(meta["frames"]):
        got = model.run_batch(z["input"][:, f])[0]
        np.testing.assert_array_equal(got.reshape(z[f"t{out_t}"][:, f].shape), z[f"t{out_t}"][:, f])


OP_CASES = sorted(os.path.basename(p)[:-len(".tflite")] for p in os.listdir(os.path.join(GOLDEN, "signal_ops")))


@pytest.mark.parametrize("case", OP_CASES)
def test_one_op_model_equals_the_wheel_invocation_by_invocation(case):
    """The committed one-op models (SignalDelay, SignalFramer, SignalStacker, SignalOverlapAdd with their state
    carried; SignalIrfft on random bins, wraps included; int16 and int32 SignalRfft zero-padded, SignalIrfft int32;
    the auto-scale's int16 maximum, the log's uint32 wraps, the clamping noise estimate) over OP_FRAMES invocations. Before the first valid frame the wheel's output is the arena's old bytes
    (undefined): those invocations are not compared; later invalid ones keep the previous output in both."""
    z = np.load(os.path.join(GOLDEN, "signal_ops.npz"))
    model = dspsim.load_model(os.path.join(GOLDEN, "signal_ops", f"{case}.tflite"), engine="tflm")
    assert model.stateful is case.startswith(("delay", "framer", "stacker", "overlap_add", "spectral_subtraction"))
    x = z[f"{case}/in"]
    more = [z[f"{case}/in{k}"] for k in range(1, 4) if f"{case}/in{k}" in z.files]
    second = z[f"{case}/out1"] if f"{case}/out1" in z.files else None
    valid = second if second is not None and second.dtype == bool else np.ones(len(x), bool)
    first = int(np.argmax(valid))
    compared = 0
    for f in range(len(x)):
        outs = model.run([x[f]] + [m[f] for m in more] if more else x[f])
        if f < first:
            continue
        for k, got in enumerate(outs):
            want = z[f"{case}/out{k}"][f]
            np.testing.assert_array_equal(np.reshape(got, want.shape), want, err_msg=f"{case} invocation {f}")
        compared += 1
    assert compared >= len(x) - 2


@pytest.mark.parametrize("engine", ["litert", "litert-optimized", "xnnpack"])
def test_engines_without_the_signal_library_refuse_its_ops(engine):
    with pytest.raises(ValueError, match="only TensorFlow Lite Micro registers the Signal library"):
        dspsim.load_model(os.path.join(GOLDEN, "signal_ops", "delay_3.tflite"), engine=engine)


@pytest.mark.parametrize("case, options, rule", [
    ("delay_3", {}, "custom option 'delay_length' is missing"),
    ("delay_3", {"delay_length": -1}, "custom option 'delay_length' must be an int in"),
    ("rfft_int16_64_padded", {"T": 0, "fft_length": 64}, "SignalRfft of TensorType 0 is not modelled"),
    ("rfft_int16_64_padded", {"T": 7, "fft_length": 48}, "fft_length 48 is not a power of two"),
    ("stacker_0_2_step_2", {"num_channels": 2, "stacker_left_context": 0, "stacker_right_context": 2,
                            "stacker_step": 4}, "stacker_step 4 exceeds the stack's 3 frames"),
    ("framer_prefill", {"frame_size": 1, "frame_step": 2, "prefill": True}, "prefill with frame_step 2 > frame_size"),
])
def test_options_the_c_code_cannot_run_are_refused_at_load(monkeypatch, case, options, rule):
    from dspsim.tflite import flatbuffer
    monkeypatch.setattr(flatbuffer, "_custom_options", lambda op_t, what: dict(options))
    with pytest.raises(ValueError, match=rule):
        dspsim.load_model(os.path.join(GOLDEN, "signal_ops", f"{case}.tflite"), engine="tflm")


def test_custom_options_decode_as_the_model_stores_them():
    # SignalWindow's and SignalFftAutoScale's custom_options bytes in audio_preprocessor_int8.tflite
    assert read_flexbuffer(bytes.fromhex("73686966740001070101010c04022401")) == {"shift": 12}
    assert read_flexbuffer(bytes.fromhex("00000100002401")) == {}


@pytest.mark.parametrize("data, rule", [
    (b"", "has 0 bytes"),
    (bytes.fromhex("73686966740001070101ff0c04022401"), "past the end"),      # the map claims 255 entries
    (bytes.fromhex("73686966740002070101010c04022401"), "different number"),  # 2 keys for 1 value
    (bytes.fromhex("73686966740001070101010c04ff2401"), "pointing outside"),  # the root's offset before byte 0
    (bytes([0, 0, 0, 0x04, 3]), "byte width of 3"),
    (bytes.fromhex("00ff01"), "type 63"),
    (bytes.fromhex("010028022801"), "nests deeper"),                          # a vector holding itself
])
def test_hostile_custom_options_are_refused_with_a_value_error(data, rule):
    with pytest.raises(ValueError, match=rule):
        read_flexbuffer(data, "load_model: operator 0")

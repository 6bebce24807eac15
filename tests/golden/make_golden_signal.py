"""What the tflite-micro wheel computes for the two TFLite Micro Signal front-end models, frame by frame with
state: the golden vectors of the Signal custom operators (dspsim.kernels.signal, dspsim/tflite/builtins/signal.py).

The audio kinds are those of ``make_golden_microfrontend.py`` (espeak-ng speech resampled to 16 kHz, the same
speech at full scale, noise at two levels, silence, dither, full-scale tones, a sweep, the Nyquist square, both DC
rails, random int16). Each kind is cut into ``FRAMES`` frames of 480 samples, ``HOP`` apart, run in order through
one interpreter (reset before each kind, so the spectral subtraction's noise estimate starts at zero), built with
``kPreserveAllTensors`` so that every operator's output is read back with ``GetTensor``.

    tests/golden/signal_<model>.npz: kinds (K,) str, input (K, FRAMES, 1, 480) int16, t<i> (K, FRAMES, *shape) for
    every tensor a Signal operator reads or writes and the model output (its TFLM dtype), c<i> the constant inputs of the
    Signal operators, meta (0-d JSON: tflite-micro's version, the model's sha256, the tensors with the operator
    writing each, and the Signal operators in order with their inputs, outputs and decoded custom options): the
    operators can be checked one by one from this file alone. The openmv model's Signal operators are those of
    audio_preprocessor_int8 (same options, same constants), so its file keeps the output only.

    /tmp/interp/bin/python tests/golden/make_golden_signal.py    # tflite-micro wheel; one subprocess per model

    tests/golden/signal_ops/<case>.tflite, signal_ops.npz: one-op models of SignalDelay, SignalFramer, SignalStacker,
    SignalOverlapAdd, SignalIrfft and SignalRfft (zero padding, int32) and of the arithmetic's edges (OP_CASES) and,
    per case, <case>/in, <case>/in1, ... (frames, *shape) and <case>/out<k>: the wheel's outputs
    of OP_FRAMES invocations in order (the state carried), so these tests need nothing of ../shared.

Deterministic; a few seconds per model.
"""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(ROOT, "..", "..", "..", "shared", "models")
MODELS = {"audio_preprocessor_int8": os.path.join(SHARED, "tflite-micro", "audio_preprocessor_int8.tflite"),
          "openmv_audio_preprocessor": os.path.join(SHARED, "fresh", "openmv_audio_preprocessor.tflite")}
# openmv's Signal operators, their options and constants are audio_preprocessor_int8's: only its output is kept
OUTPUT_ONLY = {"openmv_audio_preprocessor"}
FRAMES, HOP, FRAME = 12, 320, 480


def frames(pcm):
    """The first FRAMES frames of ``pcm`` (zero-padded where it is shorter)."""
    need = (FRAMES - 1) * HOP + FRAME
    pcm = np.concatenate([pcm, np.zeros(max(0, need - len(pcm)), np.int16)])
    return np.stack([pcm[k * HOP:k * HOP + FRAME] for k in range(FRAMES)]).reshape(FRAMES, 1, FRAME)


def signal_ops(path):
    """The model's Signal custom operators: ({tensor index: op name} of what they read and write and of the model
    output,
    [{name, inputs, outputs, options}] in order, {tensor index: constant data} of their constant inputs)."""
    import flatbuffers.flexbuffers as flex
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(open(path, "rb").read(), 0))
    sg = m.subgraphs[0]
    written, ops, consts = {}, [], {}
    types = {7: np.int16, 2: np.int32}
    for op in sg.operators:
        code = m.operatorCodes[op.opcodeIndex]
        name = code.customCode.decode() if code.customCode else None
        if not (name and name.startswith("Signal")):
            continue
        written.update({int(i): name for i in op.outputs})
        options = flex.Loads(bytes(op.customOptions)) if op.customOptions is not None else {}
        ops.append({"name": name, "inputs": [int(i) for i in op.inputs], "outputs": [int(i) for i in op.outputs],
                    "options": options})
        for i in op.inputs:
            t = sg.tensors[i]
            data = m.buffers[t.buffer].data
            if data is not None and len(data):
                consts[int(i)] = np.frombuffer(bytes(data), types[t.type]).reshape(t.shape)
            else:
                written.setdefault(int(i), f"input of {name}")
    written.update({int(i): "output" for i in sg.outputs})
    return written, ops, consts


def run_one(name):
    from tflite_micro.python.tflite_micro import runtime
    from make_golden_microfrontend import kinds

    path = MODELS[name]
    written, ops, consts = signal_ops(path)
    if name in OUTPUT_ONLY:
        written, consts = {i: v for i, v in written.items() if v == "output"}, {}
    audio = kinds()
    names = sorted(audio)
    it = runtime.Interpreter.from_file(path, arena_size=1 << 20,
                                       intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    inputs = np.stack([frames(audio[k]) for k in names])
    got = {i: [] for i in written}
    shapes = {}
    for k in range(len(names)):
        it.reset()
        rows = {i: [] for i in written}
        for f in range(FRAMES):
            it.set_input(inputs[k, f], 0)
            it.invoke()
            for i in written:
                t = it.GetTensor(i, 0)
                a = np.asarray(t["tensor_data"]).astype(t["dtype"], copy=False).reshape(t["shape"]).copy()
                rows[i].append(a)
                shapes[i] = (str(a.dtype), list(a.shape))
        for i in written:
            got[i].append(np.stack(rows[i]))
    from tflite_micro.python.tflite_micro._version import __version__ as version
    meta = {"tflite-micro": version, "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
            "frames": FRAMES, "hop": HOP, "tensors": {str(i): [written[i], *shapes[i]] for i in written},
            "ops": ops}
    arrays = {f"t{i}": np.stack(v) for i, v in got.items()}
    arrays.update({f"c{i}": v for i, v in consts.items()})
    np.savez_compressed(os.path.join(ROOT, f"signal_{name}.npz"), kinds=np.array(names), input=inputs,
                        meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)


# One-op models of the streaming operators, the inverse FFT and the int32 FFTs, which no model at hand uses: (case, op, inputs, outputs, options); a tensor
# is (shape, TensorType: 0 FLOAT32, 2 INT32, 6 BOOL, 7 INT16, 15 UINT32).
OP_CASES = [
    ("delay_3", "SignalDelay", [((2, 8), 7)], [((2, 8), 7)], {"delay_length": 3}),
    ("delay_11", "SignalDelay", [((8,), 7)], [((8,), 7)], {"delay_length": 11}),
    ("framer_prefill", "SignalFramer", [((2, 4), 7)], [((2, 2, 6), 7), ((), 6)],
     {"frame_size": 6, "frame_step": 2, "prefill": True}),
    ("framer_no_prefill", "SignalFramer", [((4,), 7)], [((2, 5), 7), ((), 6)],
     {"frame_size": 5, "frame_step": 2, "prefill": False}),
    ("stacker_2_1_step_1", "SignalStacker", [((3,), 7)], [((12,), 7), ((), 6)],
     {"num_channels": 3, "stacker_left_context": 2, "stacker_right_context": 1, "stacker_step": 1}),
    ("stacker_0_2_step_2", "SignalStacker", [((2,), 7)], [((6,), 7), ((), 6)],
     {"num_channels": 2, "stacker_left_context": 0, "stacker_right_context": 2, "stacker_step": 2}),
    ("overlap_add_int16", "SignalOverlapAdd", [((2, 3, 8), 7)], [((2, 12), 7)], {"T": 7, "frame_step": 4}),
    ("overlap_add_float32", "SignalOverlapAdd", [((3, 8), 0)], [((12,), 0)], {"T": 0, "frame_step": 4}),
    ("irfft_int16_32", "SignalIrfft", [((2, 34), 7)], [((2, 32), 7)], {"T": 7, "fft_length": 32}),
    ("irfft_int16_512", "SignalIrfft", [((514,), 7)], [((512,), 7)], {"T": 7, "fft_length": 512}),
    ("rfft_int16_64_padded", "SignalRfft", [((2, 48), 7)], [((2, 66), 7)], {"T": 7, "fft_length": 64}),
    ("rfft_int32_64_padded", "SignalRfft", [((2, 48), 2)], [((2, 66), 2)], {"T": 2, "fft_length": 64}),
    ("rfft_int32_512", "SignalRfft", [((512,), 2)], [((514,), 2)], {"T": 2, "fft_length": 512}),
    ("irfft_int32_64", "SignalIrfft", [((2, 66), 2)], [((2, 64), 2)], {"T": 2, "fft_length": 64}),
    # the arithmetic docs/frontend.md calls surprising, against the real code: the int16 maximum of the auto-scale
    # (FRAMES_BY_HAND), the window's saturation, PCAN with any table, the uint32 wraps of the log's output scale and
    # of its correction shift, the clamping estimate
    ("fft_auto_scale", "SignalFftAutoScale", [((6,), 7)], [((6,), 7), ((), 2)], {}),
    ("log_scale_65536", "SignalFilterBankLog", [((16,), 15)], [((16,), 7)],
     {"input_correction_bits": 0, "output_scale": 65536}),
    ("log_correction_7", "SignalFilterBankLog", [((16,), 15)], [((16,), 7)],
     {"input_correction_bits": 7, "output_scale": 64}),
    ("window_shift_14", "SignalWindow", [((2, 16), 7), ((16,), 7)], [((2, 16), 7)], {"shift": 14}),
    ("pcan_any_table", "SignalPCAN", [((8,), 15), ((8,), 15), ((125,), 7)], [((8,), 15)], {"snr_shift": 6}),
    ("spectral_subtraction_clamping", "SignalFilterBankSpectralSubtraction", [((8,), 15)], [((8,), 15), ((8,), 15)],
     {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": True,
      "min_signal_remaining": 819, "num_channels": 8, "one_minus_smoothing": 15975, "smoothing": 409,
      "smoothing_bits": 10, "spectral_subtraction_bits": 14}),
]
FRAMES_BY_HAND = {"fft_auto_scale": [[-32768, 5, 0, 0, 0, 0], [-32768, -5, 0, 0, 0, 0], [0] * 6,
                                     [5, -32768, 0, 0, 0, 0], [1, -1, 0, 0, 0, 0], [-16384, 5, 0, 0, 0, 0]]}
OP_FRAMES = 24


def one_op_model(op, inputs, outputs, options):
    """A .tflite model of the one custom operator ``op`` (Signal*), its options as a FlexBuffer map."""
    import flatbuffers
    import flatbuffers.flexbuffers as flex
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as S

    m = S.ModelT()
    m.version = 3
    code = S.OperatorCodeT()
    code.builtinCode, code.deprecatedBuiltinCode, code.customCode, code.version = 32, 32, op.encode(), 1
    m.operatorCodes, m.buffers = [code], [S.BufferT()]
    sg = S.SubGraphT()
    sg.tensors = []
    for k, (shape, ttype) in enumerate(inputs + outputs):
        t = S.TensorT()
        t.shape, t.type, t.buffer, t.name = list(shape), ttype, 0, f"t{k}".encode()
        sg.tensors.append(t)
    sg.inputs, sg.outputs = list(range(len(inputs))), list(range(len(inputs), len(inputs) + len(outputs)))
    o = S.OperatorT()
    o.opcodeIndex, o.inputs, o.outputs = 0, sg.inputs, sg.outputs
    o.customOptions, o.customOptionsFormat = list(flex.Dumps(options)), 0
    sg.operators, m.subgraphs = [o], [sg]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def random_frames(rng, shape, ttype):
    """OP_FRAMES random inputs of ``shape``: int16 / int32 / uint32 at random levels with the edges mixed in,
    float32 normal."""
    levels = rng.integers(0, 31, (OP_FRAMES,) + (1,) * len(shape))   # full scale down to a few bits
    if ttype == 0:
        return rng.normal(0, 1000, (OP_FRAMES, *shape)).astype(np.float32)
    if ttype == 15:
        x = rng.integers(0, 2 ** 32, (OP_FRAMES, *shape), dtype=np.uint64) >> levels.astype(np.uint64)
        return x.astype(np.uint32)
    if ttype == 2:
        x = (rng.integers(-2 ** 31, 2 ** 31, (OP_FRAMES, *shape)) >> levels).astype(np.int32)
        x[rng.random(x.shape) < 0.1] = 2 ** 31 - 1
        return x
    x = rng.integers(-32768, 32768, (OP_FRAMES, *shape)).astype(np.int16)
    x[rng.random(x.shape) < 0.2] = 32767
    return x


def run_ops():
    """Each one-op case through the wheel: OP_FRAMES invocations of random inputs (FRAMES_BY_HAND first)."""
    from tflite_micro.python.tflite_micro import runtime

    rng = np.random.default_rng(20261205)
    os.makedirs(os.path.join(ROOT, "signal_ops"), exist_ok=True)
    arrays = {}
    for case, op, inputs, outputs, options in OP_CASES:
        data = one_op_model(op, inputs, outputs, options)
        with open(os.path.join(ROOT, "signal_ops", f"{case}.tflite"), "wb") as f:
            f.write(data)
        it = runtime.Interpreter.from_bytes(data, arena_size=1 << 16)
        xs = [random_frames(rng, shape, ttype) for shape, ttype in inputs]
        for f, frame in enumerate(FRAMES_BY_HAND.get(case, ())):
            xs[0][f] = frame
        outs = [[] for _ in outputs]
        for f in range(OP_FRAMES):
            for k, x in enumerate(xs):
                it.set_input(x[f], k)
            it.invoke()
            for k in range(len(outputs)):
                outs[k].append(np.array(it.get_output(k)))
        arrays.update({f"{case}/in{'' if k == 0 else k}": x for k, x in enumerate(xs)})
        arrays.update({f"{case}/out{k}": np.stack(v) for k, v in enumerate(outs)})
    np.savez_compressed(os.path.join(ROOT, "signal_ops.npz"), **arrays)


def main():
    if len(sys.argv) == 2:
        run_ops() if sys.argv[1] == "ops" else run_one(sys.argv[1])
        return
    subprocess.run([sys.executable, os.path.abspath(__file__), "ops"], check=True, cwd=ROOT)
    print("wrote signal_ops.npz and signal_ops/*.tflite")
    for name, path in MODELS.items():
        if not os.path.exists(path):
            print(f"skip {name}: {path} is absent")
            continue
        subprocess.run([sys.executable, os.path.abspath(__file__), name], check=True, cwd=ROOT)
        print(f"wrote signal_{name}.npz")


if __name__ == "__main__":
    main()

"""Issue 30 item 3: streams. `run --frames`, `export-model` and `diagnose` over T frames of a streaming model, the
state (variable tensors) carried from frame to frame as Model.run does without reset, and written per frame."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness import diagnose as dg
from dspsim.harness.run_model import main as run_main
from dspsim.harness.vectors import read_array
from dspsim.tflite import load_model

SVDF = Path(__file__).parents[1] / "golden" / "ops" / "svdf_int16_state_relu.tflite"  # x 0, state 4, y 5
STATE, OUT = 4, 5


def _frames(n, seed=1):
    return np.random.default_rng(seed).integers(-128, 128, (n, 1, 32), dtype=np.int8)


def _expected(xs, engine="litert"):
    """(outputs, states after each frame) of the frames run in order, the state carried."""
    m = load_model(SVDF, engine=engine)
    ys, states = [], []
    for x in xs:
        ys.append(m.run(x)[0])
        states.append(np.array(m.variables()[STATE]))
    return np.stack(ys), np.stack(states)


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith("dspsim: error: "), err
    return err


def test_run_frames_keeps_every_frame_and_its_state(tmp_path, capsys):
    xs = _frames(4)
    np.save(tmp_path / "xs.npy", xs)
    ys, states = _expected(xs)
    assert run_main([str(SVDF), "--input", str(tmp_path / "xs.npy"), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "layers of frame 3 (the last of 4" in out
    z = np.load(tmp_path / "out" / "trace.npz")
    assert z[f"t{OUT}"].shape == (4, 1, 8) and np.array_equal(z[f"t{OUT}"], ys)
    assert np.array_equal(z[f"t{STATE}"], states) and np.array_equal(z["t0"], xs)
    assert not np.array_equal(states[0], states[1])  # the state moves: frame by frame, not the last one only
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["frames"] == 4 and report["state"] == [STATE]


def test_run_random_frames_keeps_every_frame(tmp_path, capsys):
    assert run_main([str(SVDF), "--frames", "3", "--out", str(tmp_path / "out")]) == 0
    z = np.load(tmp_path / "out" / "trace.npz")
    assert z[f"t{OUT}"].shape == (3, 1, 8) and z[f"t{STATE}"].shape == (3, 1, 80)
    _, states = _expected(z["t0"])
    assert np.array_equal(z[f"t{STATE}"], states)
    assert run_main([str(SVDF), "--out", str(tmp_path / "one")]) == 0  # one frame: no frame axis
    assert np.load(tmp_path / "one" / "trace.npz")[f"t{OUT}"].shape == (1, 8)


@pytest.mark.parametrize("fmt", ["npz", "bin", "hex"])
def test_export_model_writes_each_frame_with_its_state(tmp_path, capsys, fmt):
    xs = _frames(3)
    np.save(tmp_path / "xs.npy", xs)
    ys, states = _expected(xs)
    out = tmp_path / "tb"
    assert cli.main(["export-model", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--format", fmt,
                     "--out", str(out)]) == 0
    top = json.loads((out / "manifest.json").read_text())
    assert top["schema"] == "dspsim.export-model-frames/1" and top["frames"] == 3 and top["state"] == [STATE]
    assert top["folders"] == ["frame0000", "frame0001", "frame0002"]
    for t, folder in enumerate(top["folders"]):
        man = json.loads((out / folder / "manifest.json").read_text())
        rows = {r["tensor"]: r for r in man["tensors"]}
        assert rows[STATE]["role"] == "state" and rows[OUT]["role"] == "activation"
        for k, want in ((0, xs[t]), (OUT, ys[t]), (STATE, states[t])):
            r = rows[k]
            got = np.load(out / folder / r["file"])[r["key"]] if fmt == "npz" else \
                read_array(out / folder / r["file"], r["dtype"], r["shape"])
            assert np.array_equal(got, want), (t, k)


def test_export_model_of_one_frame_of_a_streaming_model_exports_its_first_frame(tmp_path, capsys):
    """The input check runs the model; the export starts again from the initial state."""
    xs = _frames(1)
    np.save(tmp_path / "x.npy", xs[0])
    ys, states = _expected(xs)
    assert cli.main(["export-model", str(SVDF), "--input", str(tmp_path / "x.npy"), "--out", str(tmp_path / "tb")]) == 0
    z = np.load(tmp_path / "tb" / "tensors.npz")
    assert np.array_equal(z[f"t{OUT}"], ys[0]) and np.array_equal(z[f"t{STATE}"], states[0])


def test_a_sequence_of_another_shape_is_refused(tmp_path, capsys):
    np.save(tmp_path / "xs.npy", _frames(3)[:, 0])  # (3, 32): neither (1, 32) nor (T, 1, 32)
    assert cli.main(["export-model", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--out", str(tmp_path / "o")]) == 2
    assert "96 values, but shape (1, 32) needs 32" in _one_line_error(capsys)


def test_inputs_that_disagree_on_the_frame_count_are_refused(tmp_path, capsys):
    two = Path(__file__).parents[1] / "golden" / "models" / "two_inputs.tflite"  # (1, 6, 6, 2) and (1, 3, 3, 3)
    np.save(tmp_path / "a.npy", np.zeros((2, 1, 6, 6, 2), np.int8))
    np.save(tmp_path / "b.npy", np.zeros((1, 3, 3, 3), np.int8))
    for verb, extra in (("export-model", []), ("diagnose", ["--dumps", str(tmp_path)])):
        assert cli.main([verb, str(two), "--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "b.npy"),
                         *extra, "--out", str(tmp_path / "o")]) == 2
        assert "disagree on the number of frames: 2 frames, one frame" in _one_line_error(capsys)


def _device_dumps(tmp_path, xs, engine, frames_dumped, tensors=(OUT, STATE)):
    """Frame folders of dumps, as a device running ``engine`` writes them (only ``frames_dumped``)."""
    m = load_model(SVDF, engine=engine)
    d = tmp_path / "dumps"
    for t, x in enumerate(xs):
        trace = {e.tensor: e.value for e in m.trace(x)}
        if t in frames_dumped:
            (d / f"frame{t:04d}").mkdir(parents=True)
            for k in tensors:
                np.save(d / f"frame{t:04d}" / f"t{k}.npy", trace[k])
    return d


def test_diagnose_over_frames_passes_on_its_own_export(tmp_path, capsys):
    xs = _frames(3)
    np.save(tmp_path / "xs.npy", xs)
    tb = tmp_path / "tb"
    assert cli.main(["export-model", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--format", "bin",
                     "--out", str(tb)]) == 0
    capsys.readouterr()
    assert cli.main(["diagnose", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--dumps", str(tb),
                     "--out", str(tmp_path / "d")]) == 0
    assert "PASS: all 18 dumped tensors of 3 frames (0 .. 2, the state carried) match" in capsys.readouterr().out


def test_diagnose_finds_the_first_diverging_frame_and_the_engine_with_the_state_carried(tmp_path, capsys):
    """A TFLM device whose state was dumped only from frame 3 on: litert's state differs there, and engine=tflm
    reproduces it only when the variants run frames 0..2 first (their own state)."""
    xs = _frames(5)
    d = _device_dumps(tmp_path, xs, "tflm", frames_dumped={3, 4})
    frames = [[x] for x in xs]
    r = dg.diagnose_frames(SVDF, frames, d, "litert")
    assert r["frame"] == 3 and r["frames"] == 5 and not r["passed"]
    assert [row["frame"] for row in r["frame_rows"]] == [0, 1, 2, 3] and r["frame_rows"][0]["dumped"] == 0
    f = r["first_divergence"]
    assert f["tensor"] == STATE and f["op"] == "SVDF" and f["locality"] == "local"
    assert r["reproduced_by"][0] == "engine=tflm"
    np.save(tmp_path / "xs.npy", xs)
    assert cli.main(["diagnose", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--dumps", str(d), "--engine",
                     "tflm", "--out", str(tmp_path / "r")]) == 0  # the device's own engine: every frame matches
    assert cli.main(["diagnose", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--dumps", str(d), "--json",
                     str(tmp_path / "d.json")]) == 1
    assert "FAIL: first divergence at frame 3 of 5, op 0 SVDF" in capsys.readouterr().out


def test_diagnose_over_frames_with_a_corrupted_output(tmp_path, capsys):
    xs = _frames(3)
    d = _device_dumps(tmp_path, xs, "litert", frames_dumped={0, 1, 2})
    y = np.load(d / "frame0001" / f"t{OUT}.npy")
    y[0, 2] += 1
    np.save(d / "frame0001" / f"t{OUT}.npy", y)
    r = dg.diagnose_frames(SVDF, [[x] for x in xs], d, "litert", search=False)
    assert r["frame"] == 1 and r["first_divergence"]["tensor"] == OUT
    assert r["first_divergence"]["first_index"] == [0, 2] and r["first_divergence"]["locality"] == "local"


def test_diagnose_frames_need_frame_folders(tmp_path, capsys):
    xs = _frames(2)
    np.save(tmp_path / "xs.npy", xs)
    flat = tmp_path / "flat"
    flat.mkdir()
    np.save(flat / f"t{OUT}.npy", np.zeros((1, 8), np.int8))
    assert cli.main(["diagnose", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--dumps", str(flat)]) == 2
    assert "no frame<t> folder of dumps" in _one_line_error(capsys)
    shutil.copytree(flat, flat / "frame0005")
    assert cli.main(["diagnose", str(SVDF), "--input", str(tmp_path / "xs.npy"), "--dumps", str(flat)]) == 2
    assert "frame 5, but the input has 2 frames" in _one_line_error(capsys)


def test_trace_npz_keeps_a_tensor_only_some_frames_show_per_frame():
    from dspsim.graph.executor import TraceEntry
    from dspsim.harness.run_model import _trace_arrays

    def entry(k, v):
        return TraceEntry(0, "OP", k, f"t{k}", np.asarray(v, np.int8))

    frames = [[entry(1, [1, 2]), entry(2, [5])], [entry(1, [3, 4])]]  # tensor 2 (a CALL_ONCE init) in frame 0 only
    z = _trace_arrays(frames)
    assert z["t1"].tolist() == [[1, 2], [3, 4]] and z["t2_frame0"].tolist() == [5] and "t2" not in z

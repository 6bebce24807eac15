"""``dspsim validate``: a data set through a model in chunks, diffed layer by layer against another
engine or the real interpreter, locally or on a Dask cluster (dspsim.harness.validate).

The expected mismatch counts are computed here independently: each sample traced on its own with
both engines (streams frame by frame on fresh models) and counted with np.count_nonzero."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness import validate as v
from dspsim.tflite import load_model
from dspsim.tflite.model import Model

MODELS = Path(__file__).parents[1] / "golden" / "models"
MOBILENET = MODELS / "mobilenet.tflite"
CNN_HALF = MODELS / "cnn_half.tflite"
TWO_INPUTS = MODELS / "two_inputs.tflite"


def _wakeword():
    mww = pytest.importorskip("pymicro_wakeword")
    return Path(mww.__file__).parent / "models" / "okay_nabu.tflite"


def _rng_int8(shape, seed=0):
    return np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)


def _expected_layers(path, engine, against, samples):
    """{op_index: elements differing} and {op_index: set of samples}: each sample traced alone."""
    a, b = load_model(path, engine=engine), load_model(path, engine=against)
    counts, who = {k: 0 for k, _ in a.operators}, {}  # operators that write no tensor (VAR_HANDLE...): 0
    for s, frames in enumerate(samples):
        if a.stateful:
            a.reset()
            b.reset()
        for x in frames:
            for ea, eb in zip(a.trace(x), b.trace(x)):
                if ea.op_index < 0:
                    continue
                n = int(np.count_nonzero(ea.value != eb.value))
                counts[ea.op_index] = counts.get(ea.op_index, 0) + n
                if n:
                    who.setdefault(ea.op_index, set()).add(s)
    return counts, who


def _strip(d):
    """The result without what depends on where and how fast it ran."""
    return {k: x for k, x in d.items() if k not in ("seconds", "samples_per_second", "scheduler", "chunk", "run")}


@pytest.fixture(scope="module")
def mobilenet_data(tmp_path_factory):
    p = tmp_path_factory.mktemp("data") / "x.npy"
    np.save(p, _rng_int8((6, 1, 32, 32, 3)))
    return p


@pytest.fixture(scope="module")
def wakeword_data(tmp_path_factory):
    p = tmp_path_factory.mktemp("kws") / "x.npy"
    np.save(p, _rng_int8((3, 6, 1, 3, 40), seed=1))
    return p


# ---------------------------------------------------------------------------------------------
# per-layer counts
# ---------------------------------------------------------------------------------------------
def test_layer_mismatches_against_another_engine_match_per_sample_traces(mobilenet_data):
    d = v.validate(MOBILENET, mobilenet_data, engine="litert", against="xnnpack", chunk=4)
    x = np.load(mobilenet_data)
    counts, who = _expected_layers(MOBILENET, "litert", "xnnpack", [[s] for s in x])
    assert d["samples"] == 6 and d["frames"] is None and not d["streaming"]
    assert [r["op_index"] for r in d["layers"]] == list(range(7))
    assert {r["op_index"]: r["mismatches"] for r in d["layers"]} == counts
    assert {r["op_index"]: set(r["samples"]) for r in d["layers"] if r["samples"]} == who
    assert sum(counts.values()) > 0 and d["passed"] is False  # XNNPACK's float requantization differs
    assert all(r["max_abs_diff"] >= 1 for r in d["layers"] if r["mismatches"])
    assert all(sum(r["histogram"].values()) == r["mismatches"] for r in d["layers"])


def test_the_same_engine_on_both_sides_passes_and_counts_every_element(mobilenet_data):
    d = v.validate(MOBILENET, mobilenet_data, engine="tflm", against="litert", chunk=5)
    assert d["passed"] and all(r["mismatches"] == 0 for r in d["layers"])
    m = load_model(MOBILENET)
    sizes = {}
    for e in m.trace(np.load(mobilenet_data)[0]):
        if e.op_index >= 0:
            sizes[e.op_index] = sizes.get(e.op_index, 0) + e.value.size
    assert {r["op_index"]: r["count"] for r in d["layers"]} == {k: 6 * n for k, n in sizes.items()}


def test_one_operator_changed_by_a_device_profile_differs_locally_and_the_rest_inherit(tmp_path):
    npu = tmp_path / "npu.toml"  # changes CONV_2D only: cnn has one, op 1, after a QUANTIZE both compute alike
    npu.write_text('engine = "litert"\n[conv_2d]\nshift_rounding = "floor"\n')
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).standard_normal((4, 1, 8, 8, 3)).astype(np.float32))
    d = v.validate(MODELS / "cnn.tflite", x, engine=str(npu), against="litert")
    bad = [r for r in d["layers"] if r["mismatches"]]
    assert [k for k, op in load_model(MODELS / "cnn.tflite").operators if op == "CONV_2D"] == [1]
    assert [(r["op_index"], r["locality"]) for r in bad if r["locality"] == "local"] == [(1, "local")]
    assert bad[0]["op_index"] == 1 and bad[0]["local_mismatches"] == bad[0]["mismatches"] > 0
    assert len(bad) > 2 and all(r["locality"] == "inherited" and r["local_mismatches"] == 0 for r in bad[1:])
    line = f"1 of 11 operators differs locally (op 1 CONV_2D); {len(bad) - 1} inherit its difference"
    assert v.locality_line(d) == line and line in v.summary_lines(d)[-1] and line in v.render_md(d)


def test_local_counts_are_each_operator_run_alone_on_the_references_trace(mobilenet_data):
    d = v.validate(MOBILENET, mobilenet_data, engine="litert", against="xnnpack", chunk=4)
    mine, theirs = load_model(MOBILENET, engine="litert"), load_model(MOBILENET, engine="xnnpack")
    want = {}
    for x in np.load(mobilenet_data):
        ref = {e.tensor: e.value for e in theirs.trace(x)}
        for op_index, _ in mine.operators:
            ins = [ref.get(i) for i in mine.operator_inputs(op_index)]  # constants (absent from a trace): None
            y = mine.run_operator(op_index, ins)
            out = ref[mine.outputs_of(op_index)[0]]
            want[op_index] = want.get(op_index, 0) + int(np.count_nonzero(y.reshape(out.shape) != out))
    bad = [r for r in d["layers"] if r["mismatches"]]
    assert {r["op_index"]: r["local_mismatches"] for r in bad} == {k: want[k] for k in (r["op_index"] for r in bad)}
    assert bad[0]["op_index"] == 0 and bad[0]["locality"] == "local"  # XNNPACK requantizes in float
    assert any(r["locality"] == "inherited" for r in bad)


def test_outputs_written_are_n_calls_of_run(mobilenet_data, tmp_path):
    v.validate(MOBILENET, mobilenet_data, chunk=4, outputs_dir=tmp_path)
    m = load_model(MOBILENET)
    want = np.stack([m.run(s)[0] for s in np.load(mobilenet_data)])
    np.testing.assert_array_equal(np.load(tmp_path / "output_0.npy"), want)


def test_a_model_with_a_float_output_counts_dequantize_differences_in_ulp(tmp_path):
    x = np.random.default_rng(3).uniform(-1, 1, size=(5, 1, 8, 8, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    d = v.validate(CNN_HALF, tmp_path / "x.npy", engine="tflm", against="litert")
    counts, _ = _expected_layers(CNN_HALF, "tflm", "litert", [[s] for s in x])
    assert {r["op_index"]: r["mismatches"] for r in d["layers"]} == counts
    deq = [r for r in d["layers"] if r["op"] == "DEQUANTIZE"]
    assert deq and all(r["unit"] == "ULP" for r in deq)


# ---------------------------------------------------------------------------------------------
# streaming models
# ---------------------------------------------------------------------------------------------
def test_streaming_model_diffs_every_frame_of_every_stream(wakeword_data):
    kws = _wakeword()
    d = v.validate(kws, wakeword_data, engine="litert", against="tflm", chunk=2)
    x = np.load(wakeword_data)
    counts, who = _expected_layers(kws, "litert", "tflm", [list(s) for s in x])
    assert d["streaming"] and d["samples"] == 3 and d["frames"] == 6
    assert {r["op_index"]: r["mismatches"] for r in d["layers"]} == counts
    assert {r["op_index"]: set(r["samples"]) for r in d["layers"] if r["samples"]} == who


def test_streaming_outputs_are_each_stream_run_alone(wakeword_data, tmp_path):
    kws = _wakeword()
    v.validate(kws, wakeword_data, chunk=2, outputs_dir=tmp_path)
    m = load_model(kws)
    want = []
    for stream in np.load(wakeword_data):
        m.reset()
        want.append(np.stack([m.run(f)[0] for f in stream]))
    np.testing.assert_array_equal(np.load(tmp_path / "output_0.npy"), np.stack(want))


def _delay_line(engine):
    from toy_models import delay_line_model

    return Model(delay_line_model(), engine)


def test_stateful_toy_model_carries_one_state_per_stream(tmp_path):
    src = v.ModelSource("delay_line", factory=_delay_line)
    x = _rng_int8((5, 4, 1, 4), seed=7)  # streams x frames x input
    np.save(tmp_path / "x.npy", x)
    d = v.validate(src, tmp_path / "x.npy", against="tflm", chunk=2, outputs_dir=tmp_path)
    y = np.load(tmp_path / "output_0.npy")
    np.testing.assert_array_equal(y[:, 1:], x[:, :-1])  # output(t) = input(t - 1), stream by stream
    assert not y[:, 0].any()  # CALL_ONCE's zeros, in every stream
    assert d["passed"] and d["samples"] == 5 and d["frames"] == 4
    assign = next(r for r in d["layers"] if r["op"] == "ASSIGN_VARIABLE")
    assert assign["count"] == 5 * 4 * 4  # its state writes are its outputs


# ---------------------------------------------------------------------------------------------
# data sets
# ---------------------------------------------------------------------------------------------
def test_a_directory_and_the_input_without_its_batch_axis_give_the_same_result(mobilenet_data, tmp_path):
    x = np.load(mobilenet_data)
    for k, s in enumerate(x):
        np.save(tmp_path / f"s{k:03d}.npy", s[0])  # (32, 32, 3): the input's batch axis of 1 left out
    a = v.validate(MOBILENET, mobilenet_data, against="xnnpack", chunk=4)
    b = v.validate(MOBILENET, tmp_path, against="xnnpack", chunk=3)
    assert _strip(a)["layers"] == _strip(b)["layers"] and a["samples"] == b["samples"]


def test_a_two_input_model_takes_an_npz_with_one_array_per_input(tmp_path):
    m = load_model(TWO_INPUTS)
    xs = [_rng_int8((4, *i.shape), seed=k) for k, i in enumerate(m.inputs)]
    np.savez(tmp_path / "x.npz", *xs)
    v.validate(TWO_INPUTS, tmp_path / "x.npz", outputs_dir=tmp_path)
    want = np.stack([m.run([xs[0][i], xs[1][i]])[0] for i in range(4)])
    np.testing.assert_array_equal(np.load(tmp_path / "output_0.npy"), want)


@pytest.mark.parametrize("array, rule", [
    (np.zeros((3, 1, 32, 32, 3), np.int16), "dtype int16"),
    (np.zeros((3, 1, 32, 31, 3), np.int8), "shape (3, 1, 32, 31, 3)"),
    (np.zeros((32, 32, 3), np.int8), "needs (samples, *shape)"),
])
def test_data_that_does_not_fit_the_model_is_exit_2_with_one_line(tmp_path, capsys, array, rule):
    np.save(tmp_path / "x.npy", array)
    rc = cli.main(["validate", str(MOBILENET), "--data", str(tmp_path / "x.npy"), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and rule in err
    assert not (tmp_path / "r.json").exists()


def test_a_directory_whose_files_disagree_is_exit_2(mobilenet_data, tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.zeros((32, 32, 3), np.int8))
    np.save(tmp_path / "b.npy", np.zeros((32, 32, 4), np.int8))
    rc = cli.main(["validate", str(MOBILENET), "--data", str(tmp_path), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "b.npy" in err


# ---------------------------------------------------------------------------------------------
# the command line, the report
# ---------------------------------------------------------------------------------------------
def test_cli_writes_the_json_and_a_report_with_the_plot(mobilenet_data, tmp_path, capsys):
    out, js = tmp_path / "report", tmp_path / "r.json"
    rc = cli.main(["validate", str(MOBILENET), "--data", str(mobilenet_data), "--engine", "litert",
                   "--against", "xnnpack", "--json", str(js), "--out", str(out)])
    assert rc == 1  # mismatches
    d = json.loads(js.read_text())
    assert d["samples"] == 6
    assert [(r["op_index"], r["op"]) for r in d["layers"]] == load_model(MOBILENET).operators
    assert all(isinstance(r["mismatches"], int) for r in d["layers"])
    assert json.loads((out / "results.json").read_text())["layers"] == d["layers"]
    assert (out / "layer_mismatches.png").stat().st_size > 1000
    assert "CONV_2D" in (out / "summary.md").read_text()
    assert "FAIL against xnnpack" in capsys.readouterr().out


def test_an_unreachable_scheduler_is_exit_2_naming_the_address(mobilenet_data, tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(v, "CONNECT_TIMEOUT", 1)
    addr = f"tcp://127.0.0.1:{port}"
    rc = cli.main(["validate", str(MOBILENET), "--data", str(mobilenet_data), "--scheduler", addr,
                   "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and addr in err


def test_a_missing_interpreter_package_is_exit_2_naming_it(mobilenet_data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DSPSIM_INTERPRETER_PYTHON", sys.executable)
    if subprocess.run([sys.executable, "-c", "import ai_edge_litert.interpreter"], capture_output=True).returncode == 0:
        pytest.skip("ai_edge_litert is installed here")
    rc = cli.main(["validate", str(MOBILENET), "--data", str(mobilenet_data), "--against-interpreter", "litert",
                   "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "pip install ai-edge-litert" in err


def test_ctrl_c_exits_130_and_leaves_no_report(tmp_path):
    # a short run first, so that numba's disk cache is warm and the signal lands in the run, not in a compile
    warm = tmp_path / "warm"
    warm.mkdir()
    np.save(warm / "x.npy", _rng_int8((4, 1, 32, 32, 3)))
    subprocess.run([sys.executable, "-m", "dspsim.cli", "validate", str(MOBILENET), "--data", str(warm / "x.npy"),
                    "--against", "xnnpack", "--chunk", "1", "--json", str(warm / "r.json")], capture_output=True)
    shutil.rmtree(warm)
    np.save(tmp_path / "x.npy", _rng_int8((6000, 1, 32, 32, 3)))
    out, js = tmp_path / "report", tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, "-m", "dspsim.cli", "validate", str(MOBILENET), "--data",
                          str(tmp_path / "x.npy"), "--against", "xnnpack", "--chunk", "1", "--out", str(out),
                          "--json", str(js)], stderr=subprocess.PIPE, text=True,
                         # Ctrl-C at a terminal: a shell that started pytest in the background (no job
                         # control) ignores SIGINT, and a child Python that inherits that never sees it
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    # the first chunk's outputs exist: the run is inside its loop (past loading and any numba cache reads)
    while not list(tmp_path.glob(".report.tmp-*/output_*.npy")) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, "the run finished before it could be interrupted"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130 and "interrupted" in err, err
    assert not out.exists() and not js.exists()
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")]  # no temporary directory left


# ---------------------------------------------------------------------------------------------
# Dask
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c


def test_a_dask_run_is_identical_to_a_local_run(cluster, mobilenet_data, tmp_path):
    local = v.validate(MOBILENET, mobilenet_data, against="xnnpack", chunk=2, outputs_dir=tmp_path)
    (tmp_path / "d").mkdir()
    dist = v.validate(MOBILENET, mobilenet_data, against="xnnpack", chunk=2, scheduler=cluster.scheduler_address,
                      outputs_dir=tmp_path / "d", in_flight=2)
    assert _strip(local) == _strip(dist) and dist["scheduler"] == cluster.scheduler_address
    np.testing.assert_array_equal(np.load(tmp_path / "output_0.npy"), np.load(tmp_path / "d" / "output_0.npy"))


def test_a_worker_process_gets_the_model_and_chunks_by_pickle(mobilenet_data):
    distributed = pytest.importorskip("dask.distributed")
    local = v.validate(MOBILENET, mobilenet_data, against="xnnpack", chunk=3)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0") as c, warnings.catch_warnings():
        warnings.simplefilter("error", v.PlaintextSchedulerWarning)  # tcp://127.0.0.1: loopback, no warning
        assert c.scheduler_address.startswith("tcp://127.0.0.1:")
        dist = v.validate(MOBILENET, mobilenet_data, against="xnnpack", chunk=3, scheduler=c.scheduler_address)
    assert _strip(local) == _strip(dist) and dist["lost"] == []


@pytest.mark.parametrize("address, warned", [
    ("tcp://10.0.0.5:8786", True), ("10.0.0.5:8786", True), ("tcp://scheduler.lab:8786", True),
    ("tcp://[2001:db8::1]:8786", True), ("ws://10.0.0.5:8786", True),
    ("tcp://127.0.0.1:8786", False), ("127.0.0.2:8786", False), ("tcp://localhost:8786", False),
    ("tcp://[::1]:8786", False), ("tls://10.0.0.5:8786", False), ("inproc://10.0.0.5/1/2", False)])
def test_a_plaintext_address_that_is_not_loopback_is_named_a_risk_with_the_tls_way_out(address, warned):
    risk = v.plaintext_risk(address)
    assert (risk is not None) == warned
    if warned:
        assert address in risk and "pickles" in risk and "run code on its workers" in risk
        assert "tls://" in risk and "--tls-ca-file" in risk


def test_the_cli_prints_the_plaintext_warning_as_one_line_before_connecting(mobilenet_data, tmp_path, capsys,
                                                                            monkeypatch):
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr(v, "CONNECT_TIMEOUT", 0.5)
    addr = "tcp://192.0.2.1:8786"  # TEST-NET-1: never answers
    rc = cli.main(["validate", str(MOBILENET), "--data", str(mobilenet_data), "--scheduler", addr,
                   "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 2
    assert err[0].startswith("dspsim: warning: the Dask scheduler tcp://192.0.2.1:8786 is reached in plaintext")
    assert err[1].startswith("dspsim: error: cannot reach the Dask scheduler")


@pytest.mark.parametrize("tls_args, rule", [
    (["--tls-cert", "c.pem"], "needs both --tls-ca-file and --tls-cert"),
    (["--tls-ca-file", "missing.pem", "--tls-cert", "missing.pem"], "--tls-ca-file missing.pem: No such file"),
    (["--tls", "nowhere"], "--tls nowhere: not a directory"),
    (["--tls", "."], "--tls .: no cert.pem (it holds ca.pem, cert.pem, key.pem)"),
    (["--tls-ca-file", "ca.pem", "--tls-cert", "ca.pem"], "TLS certificates need a tls:// scheduler address"),
])
def test_bad_tls_options_are_exit_2_naming_the_rule(mobilenet_data, tmp_path, capsys, monkeypatch, tls_args, rule):
    pytest.importorskip("dask.distributed")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ca.pem").write_text("not read before the address is checked")
    rc = cli.main(["validate", str(MOBILENET), "--data", str(mobilenet_data), "--scheduler", "tcp://127.0.0.1:1",
                   "--json", "r.json", *tls_args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and rule in err, err


def _self_signed(folder):
    """ca.pem, cert.pem, key.pem in ``folder``: one self-signed certificate that is its own CA (openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"), "-days", "1",
                    "-subj", "/CN=dspsim-test", "-addext", "basicConstraints=critical,CA:TRUE"],
                   check=True, capture_output=True)
    shutil.copy(folder / "cert.pem", folder / "ca.pem")
    return folder


def test_a_tls_scheduler_runs_with_the_certificates_given_on_the_command_line(mobilenet_data, tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    pem = _self_signed(tmp_path)
    ca, cert, key = (str(pem / n) for n in ("ca.pem", "cert.pem", "key.pem"))
    everyone = distributed.Security(tls_ca_file=ca, tls_scheduler_cert=cert, tls_scheduler_key=key,
                                    tls_worker_cert=cert, tls_worker_key=key, tls_client_cert=cert,
                                    tls_client_key=key, require_encryption=True)
    local = v.validate(MOBILENET, mobilenet_data, against="xnnpack", chunk=3)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
                                  host="127.0.0.1", security=everyone, dashboard_address=None) as c:
        addr = c.scheduler_address
        assert addr.startswith("tls://")
        rc = cli.main(["validate", str(MOBILENET), "--data", str(mobilenet_data), "--against", "xnnpack",
                       "--chunk", "3", "--scheduler", addr, "--tls", str(pem), "--json", str(tmp_path / "r.json")])
        with pytest.raises(v.ValidateError, match="speaks TLS: give --tls DIR or --tls-ca-file"):
            v.validate(MOBILENET, mobilenet_data, scheduler=addr)
    assert rc == 1 and "warning" not in capsys.readouterr().err
    assert _strip(json.loads((tmp_path / "r.json").read_text())) == _strip(local)


MARKER = 127  # a sample whose first element is MARKER ends the worker process that runs its chunk


def _chunk_that_kills_its_worker(spec):
    if (spec.arrays[0].reshape(len(spec.arrays[0]), -1)[:, 0] == MARKER).any():
        os._exit(1)
    return v.run_chunk(spec)


def test_a_chunk_that_kills_every_worker_is_exit_3_and_the_finished_samples_are_reported(tmp_path, capsys,
                                                                                        monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    import dask

    x = _rng_int8((6, 1, 32, 32, 3), seed=5)
    x[:, 0, 0, 0, 0] = 0
    x[5, 0, 0, 0, 0] = MARKER  # the last chunk (samples 4, 5): nothing waits for the worker's restart
    np.save(tmp_path / "x.npy", x)
    local = v.validate(MOBILENET, tmp_path / "x.npy", against="xnnpack", chunk=2, outputs_dir=tmp_path)
    monkeypatch.setattr(v, "run_chunk", _chunk_that_kills_its_worker)  # pickled by reference: the worker imports it
    out = tmp_path / "report"
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=None) as c:
        rc = cli.main(["validate", str(MOBILENET), "--data", str(tmp_path / "x.npy"), "--against", "xnnpack",
                       "--chunk", "2", "--scheduler", c.scheduler_address, "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 3 and len(err) == 1
    assert err[0].startswith("dspsim: error: samples 4..5 were lost: every Dask worker that ran it died (KilledWorker)")
    assert "the results cover the 4 of 6 samples that finished" in err[0]
    d = json.loads((out / "results.json").read_text())
    assert [(r["start"], r["stop"]) for r in d["lost"]] == [(4, 6)] and not d["passed"]
    np.testing.assert_array_equal(np.load(out / "output_0.npy")[:4], np.load(tmp_path / "output_0.npy")[:4])
    assert sum(r["count"] for r in d["layers"]) == sum(r["count"] for r in local["layers"]) * 4 // 6
    assert "Incomplete" in (out / "summary.md").read_text()


def test_a_dask_run_distributes_whole_streams(cluster, wakeword_data):
    kws = _wakeword()
    local = v.validate(kws, wakeword_data, against="tflm", chunk=3)
    dist = v.validate(kws, wakeword_data, against="tflm", chunk=1, scheduler=cluster.scheduler_address)
    assert _strip(local) == _strip(dist)


# ---------------------------------------------------------------------------------------------
# the real interpreter (a Python that has it: DSPSIM_INTERPRETER_PYTHON, else this one)
# ---------------------------------------------------------------------------------------------
def _interpreter_or_skip(kind):
    try:
        v.check_interpreter(kind)
    except v.ValidateError as exc:
        pytest.skip(str(exc))


@pytest.mark.live
def test_against_litert_reference_every_layer_is_bit_exact(mobilenet_data):
    _interpreter_or_skip("litert")
    d = v.validate(MOBILENET, mobilenet_data, engine="litert", interpreter="litert", chunk=4)
    assert d["against"] == "interpreter:litert" and d["passed"]
    assert all(r["count"] > 0 for r in d["layers"])


@pytest.mark.live
def test_against_tflm_a_streaming_model_matches_dspsim_tflm_and_not_litert(wakeword_data):
    _interpreter_or_skip("tflm")
    kws = _wakeword()
    same = v.validate(kws, wakeword_data, engine="tflm", interpreter="tflm", chunk=2)
    other = v.validate(kws, wakeword_data, engine="litert", interpreter="tflm", chunk=2)
    counts, _ = _expected_layers(kws, "litert", "tflm", [list(s) for s in np.load(wakeword_data)])
    assert same["passed"]
    assert {r["op_index"]: r["mismatches"] for r in other["layers"]} == counts

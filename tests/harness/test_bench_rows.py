"""`dspsim bench`'s rows of issue 29 item 4: thread lists, the host header, the issue's target table and
ONNX Runtime's MatMulInteger beside dspsim's exact int32 GEMM."""
import os

import llvmlite.binding as llvm
import numpy as np
import pytest

from dspsim import bench
from dspsim.bench import host
from dspsim.bench.run import parse_counts, run_engine
from dspsim.bench.summary import format_table, issue_targets, scaling
from dspsim.kernels.mac.gemm import PATHS
from dspsim.simd.cpu import host_has_vnni


@pytest.mark.parametrize("text, counts", [("1,2", (1, 2)), ("2", (2,)), (" 4 , 1 ", (1, 4)), ("2,1,2", (1, 2)),
                                          (3, (3,)), ([2, 1], (1, 2))])
def test_parse_counts_gives_ascending_distinct_counts(text, counts):
    assert parse_counts(text) == counts


@pytest.mark.parametrize("bad", ["", "0", "1,0", "-1", "1,x", "1.5", "1,,2", 1.5, True, None, [], [1, 2.0]])
def test_parse_counts_refuses_anything_but_integers_from_one(bad):
    with pytest.raises(ValueError, match="parse_counts: thread counts must be comma-separated integers >= 1"):
        parse_counts(bad)


@pytest.mark.parametrize("args", [["--threads", "1,zero"], ["--threads", "0"], ["--channels", "64,-128"],
                                  ["--models", "full", "--model-names", "mww_v1_okay_nabu,resnet"],
                                  ["--models", "none", "--model-names", "cnn"]])
def test_bench_refuses_a_bad_count_list(args):
    with pytest.raises(SystemExit):
        bench.main(args)


def test_run_models_takes_the_named_models_only():
    with pytest.raises(ValueError, match=r"run_models: no model \['resnet'\] in size 'quick'"):
        bench.run_models("quick", names=["cnn", "resnet"])
    rows = bench.run_models("quick", repeats=1, budget=0.0, run_peers=False, names=["cnn"])
    assert {r["model"] for r in rows} == {"cnn"} and {r["peer"] for r in rows} == set(bench.model_peers.PEERS)


def test_channel_cases_are_conv_and_depthwise_on_medium_s_image():
    got = bench.workloads.channel_cases((64, 128), ("conv2d", "depthwise_conv2d", "gemm_s32"))
    assert {(c.op, c.shape) for c in got} == {("conv2d", (1, 56, 56, 64, 64)), ("conv2d", (1, 56, 56, 128, 128)),
                                              ("depthwise_conv2d", (1, 56, 56, 64)),
                                              ("depthwise_conv2d", (1, 56, 56, 128))}
    assert len(got) == 4 * len(bench.workloads.KERNEL_VARIANTS) and got[0].name == "conv2d[double]/1x56x56x64x64"
    assert bench.workloads.channel_cases((64,), ("fully_connected",)) == []
    with pytest.raises(ValueError, match="channel_cases: channel counts must be integers >= 1"):
        bench.workloads.channel_cases((0,))


def test_header_names_this_cpu_its_features_paths_and_peers():
    h = host.header({"torch": "2.x"})
    feats = llvm.get_host_cpu_features()
    assert h["cpu"] and h["llvm_cpu"] == llvm.get_host_cpu_name()
    for name in ("avx2", "avx512f", "avx512bw", "avx512vnni", "avxvnni"):
        assert h["features"][name] == bool(feats.get(name)), name
    assert {"amx_tile", "amx_int8"} <= set(h["features"])
    assert h["paths"]["gemm"] == PATHS[0] and h["paths"]["gemm_runnable"] == list(PATHS)
    assert h["peer_vnni"] == {"torch-fbgemm": host_has_vnni("fbgemm"), "onnxruntime": host_has_vnni("onnxruntime")}
    text = "\n".join(host.format_header(h))
    assert text.startswith(f"CPU: {h['cpu']} (LLVM {h['llvm_cpu']}), {os.cpu_count()} CPUs")
    assert f"gemm {PATHS[0]}" in text and "torch 2.x" in text


def _row(op, variant, engine, threads, gmacs, size="medium", shape="1x56x56x64x64"):
    return dict(case=f"{op}[{variant}]/{size}", op=op, variant=variant, size=size, shape=shape, unit="MAC",
                engine=engine, threads=threads, throughput=gmacs, seconds=1e-3, dspsim_over_peer=None, status="ok",
                note="", compared_with="", mismatches=None)


def _model(model, peer, b1, bn):
    return dict(model=model, peer=peer, threads=1, batch1_speedup=b1, batch_speedup=bn, status="ok", bit_exact=True,
                cpu_batch1_speedup=None, cpu_batch_speedup=None)


SYNTHETIC = [
    _row("conv2d", "fbgemm", "dspsim", 1, 30.0), _row("conv2d", "fbgemm", "torch-fbgemm", 1, 20.0),
    _row("conv2d", "double", "dspsim", 1, 15.0),
    _row("conv2d", "fbgemm", "dspsim", 2, 54.0), _row("conv2d", "fbgemm", "torch-fbgemm", 2, 40.0),
    _row("conv2d", "double", "dspsim", 2, 14.0),  # slower with 2 threads
    _row("gemm_s32", "vnni", "dspsim", 1, 60.0, shape="256x1024x1024"),
    _row("gemm_s32", "vnni", "ort-matmulinteger", 1, 80.0, shape="256x1024x1024"),
    # a small call stays on one thread by design: the thread targets judge the largest size only
    _row("conv2d", "fbgemm", "dspsim", 1, 10.0, size="small"), _row("conv2d", "fbgemm", "dspsim", 2, 9.0, size="small"),
]


def _targets(amx=False, models=()):
    head = {"features": {"amx_int8": amx}, "paths": {"gemm": "vnni"}, "load_average": 3.25}
    return {t["target"]: t for t in issue_targets(SYNTHETIC, list(models), head)}


def test_issue_targets_judge_one_thread_ratios_against_fbgemm():
    t = _targets()
    fb = t["1 thread: conv (64 channels, medium), FBGEMM scheme >= 1x FBGEMM"]
    assert fb["value"] == pytest.approx(1.5) and fb["met"] is True
    gl = t["1 thread: conv (64 channels, medium), gemmlowp scheme >= 1x FBGEMM"]
    assert gl["value"] == pytest.approx(0.75) and gl["met"] is False and "speed only" in gl["note"]
    assert "dense" not in " ".join(t)  # no dense row was run: no dense target


def test_issue_targets_say_when_nothing_ran_at_one_thread():
    at_two = [r for r in SYNTHETIC if r["threads"] == 2]
    t = issue_targets(at_two, [], {"features": {}, "paths": {"gemm": "vnni"}})
    assert t[0]["target"] == "1 thread: dense / conv / depthwise >= 1x FBGEMM" and t[0]["met"] is None
    assert "--threads 1" in t[0]["note"] and not any(x["target"].startswith("1 thread: conv") for x in t)


def test_issue_targets_apply_the_amx_targets_only_with_amx():
    amx = "with AMX: conv (64 channels, medium), FBGEMM scheme >= 2x FBGEMM"
    mlas = "with AMX: gemm_s32 [vnni] (256x1024x1024) >= 1x ONNX Runtime MatMulInteger (MLAS)"
    without, with_amx = _targets(False), _targets(True)
    assert without[amx]["met"] is None and without[amx]["value"] == pytest.approx(1.5)
    assert "no AMX" in without[amx]["note"]
    assert with_amx[amx]["met"] is False and with_amx[mlas]["met"] is False
    assert with_amx[mlas]["value"] == pytest.approx(0.75)


def test_issue_targets_flag_poor_scaling_and_a_slowdown():
    t = _targets()
    speed = t["threads: dspsim's speed-up >= 0.7 x N at N threads (kernels and cores)"]
    assert speed["met"] is False and speed["value"] == pytest.approx(14 / 15)
    assert "1 of 2 cases below: conv2d[double]/medium" in speed["note"]
    assert speed["note"].endswith(f"; load average 3.2 on {os.cpu_count()} CPUs at the start")
    slower = t["threads: never slower with more threads (kernels and cores)"]
    assert slower["met"] is False and slower["value"] == pytest.approx(14 / 15)
    fb = next(s for s in scaling(SYNTHETIC) if s["case"] == "conv2d[fbgemm]/medium" and s["engine"] == "dspsim")
    assert fb["threads"] == [1, 2] and fb["speedup"] == [1.0, pytest.approx(1.8)] and fb["flags"] == []


def test_issue_targets_judge_the_models_at_one_thread():
    models = [_model("mobilenet_v2_224", "xnnpack", 0.2, 0.9)] + [
        _model(m, "tflm", 1.5, 3.0) for m in ("mww_v1_okay_nabu", "mww_v2_okay_nabu", "mww_v2_vad")]
    t = _targets(models=models)
    mnv2 = t["MobileNetV2 224 batch 16 >= 1x XNNPACK per inference (1 thread)"]
    assert mnv2["value"] == pytest.approx(0.9) and mnv2["met"] is False
    mww = t["microWakeWord v1 and v2 streaming batch 1 >= 1x TFLite Micro per frame (1 thread)"]
    assert mww["value"] == pytest.approx(1.5) and mww["met"] is True
    assert _targets(models=models[:2])[mww["target"]]["met"] is None  # a model not measured: n/a


def test_table_has_the_thread_and_target_sections():
    head = host.header("not run (--no-peers)")
    result = dict(run="now", threads={"numba": 2, "counts": [1, 2]}, sizes=["medium"], repeats=5, machine="m",
                  host=head, peers_available=head["peers"], rows=SYNTHETIC, targets=[], scaling=scaling(SYNTHETIC),
                  issue_targets=issue_targets(SYNTHETIC, [], head))
    text = format_table(result)
    assert "## Threads (1 / 2)" in text and "## Issue 29 targets" in text
    assert "| conv2d[double]/medium | dspsim | 15.00 / 14.00 | 0.93 |" in text
    assert "slower at 2 threads than at 1" in text and "| MISSED |" in text


def test_matmulinteger_matches_gemm_s32_bit_for_bit():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    if not host_has_vnni("onnxruntime"):
        pytest.skip("MLAS without VNNI saturates product pairs: the row is speed only (its note says so)")
    for case in (bench.Case("gemm_s32", PATHS[0], "quick"), bench.Case("fully_connected", "onnxruntime", "quick")):
        p = bench.problem(case)
        runner = next(r for r in bench.peers.runners(case, p, 1) if r.engine == "ort-matmulinteger")
        assert not runner.skip, runner.skip
        mine = bench.dspsim_runner(case, p)
        ref = mine.to_numpy(mine.fn()) if case.op == "gemm_s32" else None
        row, out = run_engine(case, runner, ref, repeats=1, budget=0.0)
        assert row.status == "ok" and row.mismatches == 0 and row.bit_exact, row
        assert out.dtype == np.int32 and out.shape == (case.shape[0], case.shape[2])
        wrong = out.copy()
        wrong[0, 0] += 1  # the diff sees one differing element
        runner.fn, runner.to_numpy = (lambda: wrong), np.asarray
        assert run_engine(case, runner, ref, repeats=1, budget=0.0)[0].mismatches == 1


@pytest.mark.parametrize("op", bench.KERNEL_OPS)
def test_xnnpack_one_op_rows_match_dspsim_requant_xnnpack(op):
    case = bench.Case(op, "double", "quick")
    p = bench.problem(case)
    runner = next(r for r in bench.peers.runners(case, p, 1) if r.engine == "litert-xnnpack")
    if runner.skip:
        pytest.skip(runner.skip)  # no LiteRT here nor through DSPSIM_LITERT_PYTHON / DSPSIM_INTERPRETER_PYTHON
    row, out = run_engine(case, runner, None, repeats=1, budget=0.0)
    assert runner.compared_with == "dspsim requant=xnnpack"
    assert row.status == "ok" and row.mismatches == 0 and row.bit_exact, row


def test_peer_versions_name_a_worker_interpreter_s_own(monkeypatch):
    import importlib.util
    import sys

    from dspsim.bench.peers import _worker_version, available

    assert _worker_version(sys.executable, "numpy") == np.__version__
    assert _worker_version(sys.executable, "no-such-distribution") == "version unknown"
    monkeypatch.setenv("DSPSIM_TFLM_PYTHON", sys.executable)  # a worker without tflite-micro
    tflm = available()["tflite_micro"]
    if importlib.util.find_spec("tflite_micro") is None:
        assert tflm == f"version unknown (worker process: {sys.executable})"


def test_run_case_alternates_the_thread_counts_in_rounds():
    from dspsim.bench.run import THREAD_ROUNDS

    case = bench.Case("fully_connected", "double", "quick")
    rows = bench.run_case(case, None, (2, 1), repeats=2, budget=0.0)
    assert [(r.engine, r.threads, r.runs) for r in rows] == [("dspsim", 1, 2 * THREAD_ROUNDS),
                                                              ("dspsim", 2, 2 * THREAD_ROUNDS)]
    assert [r.runs for r in bench.run_case(case, None, 2, repeats=2, budget=0.0)] == [2]  # one count: one pass


def test_rounds_keep_the_least_time_and_the_most_mismatches():
    from dspsim.bench.run import Row, _least

    def row(seconds, mismatches, status="ok"):
        return Row(case="c", op="o", variant="v", size="quick", shape="1", unit="MAC", work=1, engine="peer",
                   seconds=seconds, throughput=1 / seconds, runs=5, mismatches=mismatches, bit_exact=not mismatches,
                   status=status)

    kept = _least(row(2.0, 3), row(1.0, 0))
    assert kept.seconds == 1.0 and kept.runs == 10 and kept.mismatches == 3 and kept.bit_exact is False
    assert _least(row(1.0, 0), row(2.0, 0, "error: X")).status == "error: X"

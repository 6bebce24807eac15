"""`dspsim bench --quick` runs end to end and writes the JSON that reports and CI read."""
import json
from importlib.metadata import version

import numpy as np
import pytest

from dspsim import bench

ROW_KEYS = {"case", "op", "variant", "size", "shape", "unit", "work", "engine", "status", "seconds",
            "median_seconds", "runs", "throughput", "compared_with", "mismatches", "bit_exact",
            "dspsim_over_peer"}


@pytest.fixture(scope="module")
def quick_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    assert bench.main(["--quick", "--size", "quick", "--json", str(out / "b.json"), "--out", str(out / "run")]) == 0
    return json.loads((out / "b.json").read_text()), out / "run"


def test_quick_json_has_a_dspsim_row_for_every_case(quick_result):
    result, _ = quick_result
    rows = result["rows"]
    assert all(ROW_KEYS <= set(r) for r in rows)
    dspsim_cases = {r["case"] for r in rows if r["engine"] == "dspsim"}
    assert dspsim_cases == {c.name for c in bench.cases(["quick"])}
    for r in rows:
        if r["engine"] == "dspsim":
            assert r["status"] == "ok", r
            assert r["throughput"] > 0 and r["work"] > 0 and r["runs"] >= 3


def test_quick_json_carries_the_installed_version(quick_result):
    result, run_dir = quick_result
    assert result["version"] == version("dspsim-bitexact") != ""
    assert json.loads((run_dir / "bench.json").read_text())["version"] == result["version"]


def test_quick_json_peer_rows_state_their_bit_exactness(quick_result):
    result, _ = quick_result
    for r in result["rows"]:
        if r["engine"] != "dspsim" and r["status"] == "ok":
            if not r["compared_with"]:  # FBGEMM beside an int32 core also requantizes; a note: bits cannot match
                assert r["engine"] == "torch-fbgemm" and r["op"] in bench.CORE_OPS or r["note"], r
                assert r["mismatches"] is None and r["bit_exact"] is None
            else:
                assert r["compared_with"].startswith("dspsim")
                assert r["bit_exact"] == (r["mismatches"] == 0)
                assert r["bit_exact"], r  # each peer against the dspsim model of its arithmetic on this CPU
            assert r["dspsim_over_peer"] > 0
        if r["engine"].startswith("numpy"):  # the naive numpy routes are always available and exact
            assert r["status"] == "ok" and r["bit_exact"], r


def test_quick_json_has_targets_threads_and_cost_model(quick_result):
    result, _ = quick_result
    assert result["threads"]["numba"] >= 1 and result["threads"]["counts"] == [2]  # the default: 2 threads
    assert all(r["threads"] == 2 for r in result["rows"])
    assert result["host"]["paths"]["gemm"] and result["issue_targets"]
    assert {t["target"] for t in result["targets"]} == {t[0] for t in bench.TARGETS}
    cm = result["cost_model"]
    assert cm["macs"]["ns_per_mac"] is not None and len(cm["macs"]["points"]) >= 2
    assert {p["op"] for p in cm["channels"]["points"]} == {"conv2d", "depthwise_conv2d"}
    assert all(q["raw_over_packed"] for q in cm["packing"]["ops"])
    for entry in cm["accumulator"]["ops"]:
        assert all(c["slowdown"] is not None for c in entry["checked"]), entry
    assert all(m["status"] == "ok" and m["temporaries_over_input"] >= 0 for m in cm["memory"]["rows"])


def test_quick_run_writes_table_json_and_plot(quick_result):
    _, run_dir = quick_result
    assert (run_dir / "bench.md").read_text().startswith("# dspsim bench")
    assert (run_dir / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((run_dir / "bench.json").read_text())["rows"]


def test_bench_refuses_an_unknown_size():
    with pytest.raises(SystemExit):
        bench.main(["--size", "huge"])


def test_quick_json_has_a_model_row_per_model_peer_and_engine(quick_result):
    result, run_dir = quick_result
    rows = result["models"]
    expected = {(c.name, p, p) for c in bench.model_cases("quick")
                for p in bench.model_peers.PEERS}
    assert {(r["model"], r["peer"], r["engine"]) for r in rows} == expected
    for r in rows:
        assert r["threads"] == 1 and r["batch"] == 4
        assert r["dspsim_ms"] > 0 and r["dspsim_batch_ms"] > 0 and r["runs"] >= 3, r
        if r["status"] == "ok":  # the peer ran (DSPSIM_TFLM_PYTHON / DSPSIM_LITERT_PYTHON or in-process)
            assert r["compared"] > 0 and r["bit_exact"] and r["mismatches"] == 0, r
            assert r["batch1_speedup"] == pytest.approx(r["peer_ms"] / r["dspsim_ms"])
        else:
            assert r["status"].startswith("peer skipped:") and r["bit_exact"] is None, r
    assert "## Models (ms per inference)" in (run_dir / "bench.md").read_text()
    assert {t["target"] for t in result["model_targets"]} == {t[0] for t in bench.MODEL_TARGETS}


def test_model_check_counts_each_differing_element_of_sample_zero_or_all():
    from dspsim.bench.models import count_mismatches

    peer = [np.arange(12, dtype=np.int8).reshape(4, 1, 3), np.zeros((4, 2), np.uint8)]
    mine = [peer[0].copy(), peer[1].copy()]
    mine[0][3, 0, 2] += 1
    mine[1][0, 1] = 255
    assert count_mismatches(mine, peer) == (2, 20)
    assert count_mismatches([m[:1] for m in mine], peer) == (1, 5)  # the batch-1 check: sample 0
    with pytest.raises(ValueError, match="shape"):
        count_mismatches([mine[0][:, 0]], peer[:1])


def test_quick_json_has_frontend_rows_bit_exact_where_the_peer_ran(quick_result):
    from dspsim.bench.frontend import FRONTEND_TARGETS

    result, run_dir = quick_result
    fe = result["frontend"]
    assert "CPUs usable" in fe["cpu"]
    cases = {r["case"] for r in fe["rows"]}
    assert {"microfrontend batch 1", "microfrontend 8 streams", "microfrontend whole signal", "arm_rfft_q15"} <= cases
    for r in fe["rows"]:
        assert r["dspsim_us"] > 0, r
        if r["status"] == "ok":  # the peer ran: pymicro-features, or cmsisdsp (in-process / DSPSIM_CMSISDSP_PYTHON)
            assert r["compared"] > 0 and r["mismatches"] == 0 and r["bit_exact"], r
            assert r["speedup"] == pytest.approx(r["peer_us"] / r["dspsim_us"])
        else:
            assert r["status"].startswith(("peer skipped:", "no peer")) and r["bit_exact"] is None, r
    assert {t["target"] for t in fe["targets"]} == {t[0] for t in FRONTEND_TARGETS}
    assert "## Audio front end and CMSIS-DSP kernels" in (run_dir / "bench.md").read_text()

"""`dspsim bench --quick` runs end to end and writes the JSON that reports and CI read."""
import json

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


def test_quick_json_peer_rows_state_their_bit_exactness(quick_result):
    result, _ = quick_result
    for r in result["rows"]:
        if r["engine"] != "dspsim" and r["status"] == "ok":
            assert r["compared_with"].startswith("dspsim")
            assert r["bit_exact"] == (r["mismatches"] == 0)
            assert r["dspsim_over_peer"] > 0
        if r["engine"].startswith("numpy"):  # the naive numpy routes are always available and exact
            assert r["status"] == "ok" and r["bit_exact"], r


def test_quick_json_has_targets_threads_and_cost_model(quick_result):
    result, _ = quick_result
    assert result["threads"]["numba"] >= 1
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

"""dspsim diagnose: first divergence, locality and the variant search, on simulated and real devices.

A "device" here is dspsim itself run under another variant (another engine, a narrow saturating
accumulator), whose trace is written as a dump directory, plus a real TensorFlow Lite Micro run
(tests/golden/dumps/, made by tests/golden/make_golden_tflm_dumps.py). The truth each test checks
(which operator first differs) is computed independently, from the two traces.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim import Accumulator
from dspsim.harness import diagnose as dg
from dspsim.harness._model_access import tensor_value
from dspsim.harness.dumps import sanitize_name
from dspsim.harness.vectors import ARRAY_FORMATS, write_array
from dspsim.tflite import load_model

GOLDEN = Path(__file__).parents[1] / "golden"
MODELS = GOLDEN / "models"


def _inputs(name):
    return [np.load(MODELS / f"{name}.npz")["r0/in0"]]


def _device(tmp_path, name, keep=None, fmt="npy", by_name=False, **kw):
    """Dump dspsim's run of ``name`` under ``kw`` (a simulated device): every operator output, or
    the tensors in ``keep``; returns (directory, the device's trace)."""
    d = tmp_path / "dumps"
    d.mkdir(exist_ok=True)
    trace = load_model(MODELS / f"{name}.tflite", **kw).trace(_inputs(name))
    for e in trace:
        if e.op_index >= 0 and (keep is None or e.tensor in keep):
            stem = sanitize_name(e.name) if by_name else f"t{e.tensor}"
            write_array(d / f"{stem}.{fmt}", e.value if fmt == "npy" else e.value.reshape(-1))
    return d, trace


def _first_differing_op(name, device_trace, dumped):
    ref = load_model(MODELS / f"{name}.tflite").trace(_inputs(name))
    return next(a.op_index for a, b in zip(ref, device_trace)
                if a.tensor in dumped and not np.array_equal(a.value, b.value))


# -------------------------------------------------------------------------------------- labels
@pytest.mark.parametrize("text, kw", [
    ("engine=xnnpack", {"engine": "xnnpack"}),
    ("accumulator=24,saturate", {"engine": "litert", "accumulator": Accumulator(24, "saturate")}),
    ("accumulator=32,wrap,pair_saturation", {"engine": "litert", "accumulator": Accumulator(32, "wrap", True)}),
    ("engine=xnnpack accumulator=17,wrap", {"engine": "xnnpack", "accumulator": Accumulator(17, "wrap")}),
    ("rounding=single", {"engine": "litert", "rounding": "single"}),
])
def test_variant_labels_parse_back_to_the_load_model_keywords(text, kw):
    base = {"engine": "litert"}
    assert dg.parse_variant(text, base) == dg.document(kw, base)
    assert dg.variant_label(kw, base) == text
    assert dg.variant_label(dg.parse_variant(text, base), base) == text


@pytest.mark.parametrize("text, doc", [
    ("multiplier_bits=15", {"engine": "litert", "mac": {"multiplier_bits": 15}}),
    ("shift_rounding=half_up bias_bits=16", {"engine": "litert", "mac": {"shift_rounding": "half_up",
                                                                          "bias_bits": 16}}),
    ("depthwise_conv_2d.rounding=single", {"engine": "litert", "depthwise_conv_2d": {"rounding": "single"}}),
    ("pair_saturation=true", {"engine": "litert", "mac": {"pair_saturation": True}}),
])
def test_device_profile_keys_are_variant_words(text, doc):
    base = {"engine": "litert"}
    assert dg.parse_variant(text, base) == doc
    assert dg.variant_label(doc, base) == text
    assert dspsim.DeviceProfile.from_dict(doc)  # a profile dspsim can load


@pytest.mark.parametrize("text", ["accumulator", "accumulator=x,wrap", "accumulator=24,saturate,foo", "speed=1",
                                  "accumulator=8,wrap"])
def test_bad_variant_words_are_value_errors(text):
    with pytest.raises(ValueError):
        dg.parse_variant(text, {"engine": "litert"})


def test_pair_saturation_is_skipped_on_int8_models_and_accumulators_span_16_to_48():
    m = load_model(MODELS / "cnn.tflite")
    accs, skipped = dg.accumulator_variants(m, {"engine": "litert"})
    assert sorted({a["mac"]["accumulator_bits"] for a in accs}) == list(range(16, 49))
    assert {a["mac"]["accumulator_overflow"] for a in accs} == {"wrap", "saturate"}
    assert not any(a["mac"]["pair_saturation"] for a in accs)
    assert skipped and "int8 x int8" in skipped[0]


# -------------------------------------------------------------------------------------- scenarios
def test_matching_dumps_pass_and_search_nothing(tmp_path):
    d, _ = _device(tmp_path, "cnn")
    r = dg.diagnose(MODELS / "cnn.tflite", _inputs("cnn"), d)
    assert r["passed"] and r["first_divergence"] is None and r["variants"] == []
    assert r["schema"] == "dspsim.diagnose/2" and r["dumped"] == 11
    assert all(row["comparison"]["mismatches"] == 0 for row in r["layers"] if row["dumped"])


def test_device_on_another_engine_all_tensors_dumped(tmp_path):
    d, dev = _device(tmp_path, "mobilenet", engine="xnnpack")
    r = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d)
    f = r["first_divergence"]
    assert f["op_index"] == _first_differing_op("mobilenet", dev, {e.tensor for e in dev}) == 0
    assert f["op"] == "CONV_2D" and f["locality"] == "local" and f["undumped_inputs"] == []
    assert sum(f["histogram"].values()) == f["mismatches"] > 0
    assert r["reproduced_by"] == ["engine=xnnpack"] and "engine=xnnpack" in r["op_reproduced_by"]
    # XNNPACK requantizes in float: the fixed-point rounding flavour changes nothing under it
    twin = next(v for v in r["variants"] if v["variant"] == "engine=xnnpack rounding=single")
    assert twin["same_as"] == "engine=xnnpack" and twin["mismatches"] == 0
    best = r["variants"][0]
    assert best["variant"] == "engine=xnnpack" and best["mismatches"] == 0 and best["tensors_matched"] == 7
    assert all(v["mismatches"] > 0 for v in r["variants"] if v["variant"] not in r["reproduced_by"]
               and v["same_as"] is None)
    # later layers differ too, some only because of what they were fed
    assert {row["locality"] for row in r["layers"] if row["locality"]} <= {"local", "inherited"}


def test_device_on_another_engine_only_later_layers_dumped(tmp_path):
    full = load_model(MODELS / "mobilenet.tflite").trace(_inputs("mobilenet"))
    keep = {e.tensor for e in full[-3:]}
    d, dev = _device(tmp_path, "mobilenet", keep=keep, engine="xnnpack")
    r = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d)
    f = r["first_divergence"]
    assert r["dumped"] == 3
    assert f["op_index"] == _first_differing_op("mobilenet", dev, keep) and f["op_index"] > 0
    assert f["undumped_inputs"]  # its input was not dumped: the divergence may start upstream
    assert "engine=xnnpack" in r["reproduced_by"]
    assert [row["tensor"] for row in r["layers"] if row["dumped"]] == sorted(keep)


@pytest.mark.parametrize("name, bits", [("cnn", 16), ("mobilenet", 17)])
def test_device_with_a_narrow_saturating_accumulator(tmp_path, name, bits):
    d, dev = _device(tmp_path, name, accumulator=Accumulator(bits, "saturate"))
    r = dg.diagnose(MODELS / f"{name}.tflite", _inputs(name), d)
    f = r["first_divergence"]
    assert f["op_index"] == _first_differing_op(name, dev, {e.tensor for e in dev})
    assert f["op"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and f["locality"] == "local"
    assert r["reproduced_by"][0] == f"accumulator={bits},saturate"
    assert f"accumulator={bits},wrap" not in r["reproduced_by"]
    wider = next(v for v in r["variants"] if v["variant"] == f"accumulator={bits + 1},saturate")
    assert wider["mismatches"] > 0 or wider["same_as"] == "base"


def test_real_tflm_run_diagnosed_against_litert():
    """TFLM's FULLY_CONNECTED requantizes with MultiplyByQuantizedMultiplier, LiteRT's reference in
    double precision: on cnn_half (multipliers of exactly 0.5) one FC output differs."""
    case = GOLDEN / "dumps" / "cnn_half"
    x = [np.load(case / "input0.npy")]
    r = dg.diagnose(MODELS / "cnn_half.tflite", x, case / "tflm")
    f = r["first_divergence"]
    assert (f["op_index"], f["op"], f["tensor"]) == (9, "FULLY_CONNECTED", 18)
    assert f["mismatches"] == 1 and f["max_abs_diff"] == 1 and f["locality"] == "local"
    assert r["reproduced_by"][0] == "engine=tflm"
    dq = next(row for row in r["layers"] if row["op"] == "DEQUANTIZE")
    assert dq["locality"] == "inherited"  # DEQUANTIZE of the device's FC output agrees


@pytest.mark.parametrize("name", ["cnn", "cnn_left", "mobilenet"])
def test_real_tflm_runs_that_litert_reproduces_pass(name):
    case = GOLDEN / "dumps" / name
    r = dg.diagnose(MODELS / f"{name}.tflite", [np.load(case / "input0.npy")], case / "tflm", search=False)
    assert r["passed"], r["first_divergence"]


def test_real_tflm_standalone_relu6_clamps_without_requantizing():
    """TFLM's int8 RELU6 clamps the input codes to [z_in, z_in + 6/s_in] and does not rescale to the
    output's quantization (LiteRT's reference does): on branches the RELU6 is the first divergence,
    local; the layers after it are inherited; engine=tflm reproduces every tensor."""
    case = GOLDEN / "dumps" / "branches"
    x = [np.load(case / "input0.npy")]
    r = dg.diagnose(MODELS / "branches.tflite", x, case / "tflm")
    f = r["first_divergence"]
    assert (f["op"], f["locality"]) == ("RELU6", "local")
    after = [row["locality"] for row in r["layers"] if row["op_index"] is not None and row["op_index"] > f["op_index"]
             and row["comparison"]["mismatches"]]
    assert after and set(after) == {"inherited"}
    assert r["reproduced_by"][0] == "engine=tflm"
    m = load_model(MODELS / "branches.tflite")
    t_in = m.operator_inputs(f["op_index"])[0]
    codes = np.load(case / "tflm" / f"t{t_in}.npy").astype(np.int32)
    info = m.tensor_info(t_in)
    six = min(127, int(round(6.0 / info.scale)) + info.zero_point)
    assert np.array_equal(np.clip(codes, info.zero_point, six), np.load(case / "tflm" / f"t{f['tensor']}.npy"))


@pytest.mark.parametrize("name", ["cnn", "cnn_half", "cnn_left", "cnn_pot", "branches", "branches_left", "branches_pot",
                                  "mobilenet", "requantize_third"])
def test_engine_tflm_reproduces_every_real_tflm_dump(name):
    case = GOLDEN / "dumps" / name
    r = dg.diagnose(MODELS / f"{name}.tflite", [np.load(case / "input0.npy")], case / "tflm", {"engine": "tflm"},
                    search=False)
    assert r["passed"] and r["dumped"] == len(list((case / "tflm").iterdir()))


def test_device_with_single_rounding(tmp_path):
    d, dev = _device(tmp_path, "mobilenet", rounding="single")
    r = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d)
    f = r["first_divergence"]
    assert f["op_index"] == _first_differing_op("mobilenet", dev, {e.tensor for e in dev}) == 0
    assert r["reproduced_by"][0] == "rounding=single" and f["locality"] == "local"


@pytest.mark.parametrize("fmt", ARRAY_FORMATS)
def test_every_dump_format_gives_the_same_diagnosis(tmp_path, fmt):
    d, _ = _device(tmp_path, "cnn", fmt=fmt, by_name=fmt in ("hex", "txt"), accumulator=Accumulator(16, "saturate"))
    variants = [{"engine": "litert", "accumulator": Accumulator(b, "saturate")} for b in (16, 17)]
    r = dg.diagnose(MODELS / "cnn.tflite", _inputs("cnn"), d, variants=variants)
    assert r["first_divergence"]["op_index"] == 1 and r["dumped"] == 11
    assert r["reproduced_by"] == ["accumulator=16,saturate"] and len(r["variants"]) == 2


def test_wrong_weights_on_the_device_are_the_first_divergence_and_no_variant_is_searched(tmp_path):
    d, _ = _device(tmp_path, "cnn")
    m = load_model(MODELS / "cnn.tflite")
    conv = next(k for k, n in m.operators if n == "CONV_2D")
    w_index = m.operator_inputs(conv)[1]
    w = tensor_value(m, w_index).copy()
    w.flat[3] += 1
    np.save(d / f"t{w_index}.npy", w)
    r = dg.diagnose(MODELS / "cnn.tflite", _inputs("cnn"), d)
    f = r["first_divergence"]
    assert (f["op"], f["op_index"], f["tensor"], f["mismatches"]) == ("CONSTANT", None, w_index, 1)
    assert r["variants"] == [] and "constant" in r["search"]["skipped"][0]


def test_search_takes_any_list_of_load_model_keyword_sets(tmp_path):
    d, _ = _device(tmp_path, "cnn_half", engine="xnnpack")
    r = dg.diagnose(MODELS / "cnn_half.tflite", _inputs("cnn_half"), d,
                    variants=[{"engine": "tflm"}, {"engine": "xnnpack"},
                              {"engine": "litert", "accumulator": Accumulator(20, "wrap")}])
    assert [v["variant"] for v in r["variants"]][0] == "engine=xnnpack"
    assert r["reproduced_by"] == ["engine=xnnpack"]
    assert json.loads(json.dumps(r, default=str))["schema"] == "dspsim.diagnose/2"


def test_a_variant_the_loader_refuses_is_reported_not_raised(tmp_path):
    d, _ = _device(tmp_path, "cnn", accumulator=Accumulator(16, "saturate"))
    r = dg.diagnose(MODELS / "cnn.tflite", _inputs("cnn"), d,
                    variants=[{"engine": "no-such-engine"},
                              {"engine": "litert", "accumulator": Accumulator(16, "saturate")}])
    bad = next(v for v in r["variants"] if v["error"])
    assert "engine" in bad["error"] and r["reproduced_by"] == ["accumulator=16,saturate"]


def test_pair_saturation_variants_are_searched_where_mac_ops_are_uint8_by_int8():
    from dspsim.tflite import TensorInfo

    class UInt8Model:  # the three Model calls the variant builder reads
        operators = [(0, "FULLY_CONNECTED")]

        def operator_inputs(self, k):
            return [0, 1, 2]

        def tensor_info(self, i):
            return TensorInfo(i, f"t{i}", (1, 4), np.dtype([np.uint8, np.int8, np.int32][i]), 0.1, 0)

    accs, skipped = dg.accumulator_variants(UInt8Model(), {"engine": "litert"})
    pair = [a["mac"] for a in accs if a["mac"]["pair_saturation"]]
    assert skipped == [] and {(a["accumulator_bits"], a["accumulator_overflow"]) for a in pair} == {
        (32, "wrap"), (32, "saturate")}
    assert dg.variant_label(accs[-1], {"engine": "litert"}).endswith(",pair_saturation")


def test_a_device_input_other_than_the_given_one_is_named_and_not_explained(tmp_path):
    d, _ = _device(tmp_path, "cnn")
    x = _inputs("cnn")[0].copy()
    x.flat[7] += 0.5
    np.save(d / "t0.npy", x)  # the device dumped the input it ran on
    r = dg.diagnose(MODELS / "cnn.tflite", _inputs("cnn"), d)
    f = r["first_divergence"]
    assert (f["op_index"], f["op"], f["tensor"], f["first_index"]) == (-1, "INPUT", 0, [0, 0, 2, 1])
    assert r["variants"] == [] and "model input" in r["search"]["skipped"][0]


# ------------------------------------------------------------------------------ device profiles round-trip
@pytest.mark.parametrize("mac", [
    {"multiplier_bits": 15, "shift_rounding": "half_to_even"},
    {"multiplier_bits": 15, "shift_rounding": "half_to_even", "accumulator_bits": 16,
     "accumulator_overflow": "saturate"},
    {"multiplier_bits": 15, "bias_bits": 16},
])
def test_diagnose_finds_the_device_profile_the_dumps_were_made_with(tmp_path, mac):
    device = dspsim.DeviceProfile.from_dict({"engine": "litert", "name": "npu", "mac": mac})
    d, _ = _device(tmp_path, "mobilenet", engine=device)
    r = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d)
    assert not r["passed"] and r["reproduced_by"]
    found = dspsim.DeviceProfile.loads(r["profile_toml"])
    assert found.base == "litert"
    assert {k: v for k, v in found.overrides["mac"].items() if k != "pair_saturation"} == mac
    assert dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d, found)["passed"]


# -------------------------------------------------------------------------------------- clues and caveats
def _stuck_bit_device(tmp_path, skip=()):
    """mobilenet's dumps with bit 6 of channel 5 of op 2's output (CONV_2D, int8) stuck at 1; the operators in
    ``skip`` not dumped. Returns (directory, values that differ: channel 5 values with bit 6 clear)."""
    d = tmp_path / "dumps"
    d.mkdir()
    differ = 0
    for e in load_model(MODELS / "mobilenet.tflite").trace(_inputs("mobilenet")):
        if e.op_index < 0 or e.op_index in skip:
            continue
        v = e.value.copy()
        if e.op_index == 2:
            differ = int(np.count_nonzero((v[..., 5] & 64) == 0))
            v[..., 5] |= 64
        write_array(d / f"t{e.tensor}.npy", v)
    return d, differ


def test_a_stuck_bit_in_a_real_models_dump_is_stated_with_its_exact_histogram(tmp_path):
    d, differ = _stuck_bit_device(tmp_path)
    r = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d, search=False)
    f = r["first_divergence"]
    assert f["op_index"] == 2 and f["locality"] == "local" and differ > 0
    assert f["exact_histogram"] == {"+64": differ} and f["histogram"] == {">16": differ}
    assert f["clue"] == "every difference is +64, all in channel 5: bit 6 stuck at 1"
    row = next(row for row in r["layers"] if row["op_index"] == 2)
    assert [p["pattern"] for p in row["clue"]["patterns"]] == ["per_channel", "stuck_bit"]
    assert r["not_dumped"] == {"tensors": [], "of": 7, "before_first_divergence": [], "caveat": None}


def test_the_not_dumped_caveat_and_the_clue_are_in_every_report_form(tmp_path, capsys):
    from dspsim import cli

    d, _ = _stuck_bit_device(tmp_path, skip={0})
    x = tmp_path / "x.npy"
    np.save(x, _inputs("mobilenet")[0])
    out, js = tmp_path / "rep", tmp_path / "d.json"
    assert cli.main(["diagnose", str(MODELS / "mobilenet.tflite"), "--input", str(x), "--dumps", str(d),
                     "--no-search", "--no-plots", "--out", str(out), "--json", str(js)]) == 1
    caveat = ("1 operator output(s) run before the first divergence were not dumped (t14): the divergence may "
              "begin earlier than op 2 CONV_2D")
    clue = "every difference is +64, all in channel 5: bit 6 stuck at 1"
    terminal = capsys.readouterr().out
    assert f"note: {caveat}" in terminal and f"clue: {clue}" in terminal and "histogram (device - dspsim): +64: " \
        in terminal
    md = (out / "summary.md").read_text()
    assert f"**Not dumped:** {caveat}." in md and f"Clue: **{clue}**." in md and "## Diverging tensors" in md
    for doc in (json.loads(js.read_text()), json.loads((out / "results.json").read_text())):
        assert doc["not_dumped"]["caveat"] == caveat and doc["not_dumped"]["before_first_divergence"] == [14]
        assert doc["first_divergence"]["clue"] == clue


def test_a_passing_diagnose_with_tensors_not_dumped_says_they_were_not_compared(tmp_path):
    full = load_model(MODELS / "mobilenet.tflite").trace(_inputs("mobilenet"))
    d, _ = _device(tmp_path, "mobilenet", keep={e.tensor for e in full[-2:]})
    r = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d)
    assert r["passed"] and r["not_dumped"]["tensors"] == [e.tensor for e in full[1:-2]]
    assert r["not_dumped"]["caveat"].startswith("5 of 7 operator outputs were not dumped (t14, t15, t16, t17, t18)")
    assert r["not_dumped"]["caveat"].endswith("the device may differ there")


def test_real_tflm_standalone_relu6_is_a_constant_offset_of_the_zero_points():
    """TFLM's RELU6 clamps the input codes and does not requantize (tests/golden/dumps): on branches_left, whose
    RELU6 keeps the scale and changes the zero point, every output is off by the zero points' difference."""
    dumps = GOLDEN / "dumps" / "branches_left"
    r = dg.diagnose(MODELS / "branches_left.tflite", [np.load(dumps / "input0.npy")], dumps / "tflm", "litert",
                    search=False)
    f = r["first_divergence"]
    assert (f["op_index"], f["op"], f["locality"]) == (5, "RELU6", "local")
    m = load_model(MODELS / "branches_left.tflite")
    t_in, t_out = (m.tensor_info(t) for t in (m.operator_inputs(5)[0], f["tensor"]))
    assert t_in.scale == t_out.scale and t_in.zero_point - t_out.zero_point == 68
    assert f["exact_histogram"] == {"+68": f["count"]}
    assert f["clue"] == "every value differs by +68: a constant offset of +68 (a zero point)"


@pytest.mark.parametrize("rule, at_ties", [("half_to_even", True), ("floor", False)])
def test_one_lsb_differences_are_placed_at_or_off_the_references_ties(tmp_path, rule, at_ties):
    """A device whose final shift rounds ties to even differs from LiteRT (ties away from zero) only at ties of
    that shift; one that floors differs mostly elsewhere. The tie is read off dspsim's own accumulator and
    requantization parameters (the SRDHM result over 2^-shift)."""
    d, _ = _device(tmp_path, "mobilenet", engine=dspsim.DeviceProfile.from_dict(
        {"engine": "litert", "mac": {"shift_rounding": rule}}))
    f = dg.diagnose(MODELS / "mobilenet.tflite", _inputs("mobilenet"), d, search=False)["first_divergence"]
    assert f["op"] == "CONV_2D" and f["clue"].startswith("every difference is -1: rounding")
    assert f["clue"].endswith("all at ties (x.5): the tie rule") == at_ties


def test_real_tflm_fully_connected_differs_at_a_tie_of_litert_s_double_scale():
    """cnn_half's effective multipliers are all 0.5: LiteRT's FC rounds acc * 0.5 with std::round (ties away
    from zero), TFLM's MultiplyByQuantizedMultiplier rounds the tie up."""
    case = GOLDEN / "dumps" / "cnn_half"
    r = dg.diagnose(MODELS / "cnn_half.tflite", [np.load(case / "input0.npy")], case / "tflm", search=False)
    assert r["first_divergence"]["clue"] == "every difference is +1: rounding, all at ties (x.5): the tie rule"

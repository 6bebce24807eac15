"""What a ``dspsim bench`` run reports: the speed targets and the Markdown table (the plot is drawn by
:func:`dspsim.harness.report.plot_bench`, like every other plot)."""
from __future__ import annotations

from .frontend import format_frontend
from .workloads import REQUANT_VARIANTS, SIZES

TARGETS = (
    # (label, op, dspsim variant, peer engine or None for an absolute figure, threshold)
    ("bit-exact dense >= 1x PyTorch FBGEMM", "fully_connected", "fbgemm", "torch-fbgemm", 1.0),
    ("bit-exact conv >= 1x PyTorch FBGEMM", "conv2d", "fbgemm", "torch-fbgemm", 1.0),
    ("bit-exact depthwise >= 1x PyTorch FBGEMM", "depthwise_conv2d", "fbgemm", "torch-fbgemm", 1.0),
    ("quantize >= torch.quantize_per_tensor", "quantize", "torch", "torch", 1.0),
) + tuple((f"requantize[{v}] >= 4 Gelem/s", "requantize", v, None, 4.0) for v in REQUANT_VARIANTS)


def targets(rows: list[dict]) -> list[dict]:
    """Each target against the medium-size rows (else the largest size run)."""
    out = []
    for label, op, variant, peer, threshold in TARGETS:
        mine = [r for r in rows if r["op"] == op and r["variant"] == variant and r["engine"] == "dspsim"
                and r["throughput"]]
        if not mine:
            out.append(dict(target=label, value=None, met=None, note="dspsim did not run"))
            continue
        size = "medium" if any(r["size"] == "medium" for r in mine) else \
            max((r["size"] for r in mine), key=SIZES.index)
        mine = next(r for r in mine if r["size"] == size)
        if peer is None:
            out.append(dict(target=label, size=size, value=mine["throughput"], met=mine["throughput"] >= threshold,
                            note=f"{mine['throughput']:.2f} Gelem/s"))
            continue
        theirs = next((r for r in rows if r["case"] == mine["case"] and r["engine"] == peer and r["throughput"]),
                      None)
        if theirs is None:
            out.append(dict(target=label, size=size, value=None, met=None, note=f"{peer} did not run"))
            continue
        ratio = mine["throughput"] / theirs["throughput"]
        out.append(dict(target=label, size=size, value=ratio, met=ratio >= threshold,
                        note=f"{ratio:.2f}x ({mine['throughput']:.2f} vs {theirs['throughput']:.2f} "
                             f"G{mine['unit']}/s; {peer} bit-exact: {theirs['bit_exact']})"))
    return out


MODEL_TARGETS = (
    # (label, models, peer, "batch1" or "batch" (per sample / stream-frame), threshold on peer time / dspsim time)
    ("batch 1 >= TFLM interpreter (person detection, speech)", ("person_detect", "micro_speech"), "tflm",
     "batch1", 1.0),
    ("batch 1 >= LiteRT BUILTIN_REF (person detection, speech)", ("person_detect", "micro_speech"), "litert",
     "batch1", 1.0),
    ("MobileNetV2 224 batch 16 >= 20x LiteRT BUILTIN_REF", ("mobilenet_v2_224",), "litert", "batch", 20.0),
    ("MobileNetV2 224 batch 16 >= 0.5x LiteRT default (XNNPACK)", ("mobilenet_v2_224",), "xnnpack", "batch",
     0.5),
    ("microWakeWord 256 streams >= 10x TFLM per stream-frame", ("okay_nabu (microWakeWord)",), "tflm", "batch", 10.0),
    ("microWakeWord v1 / v2 batch 1 >= TFLM per frame", ("okay_nabu (microWakeWord)", "mww_v1_okay_nabu",
                                                         "mww_v2_okay_nabu", "mww_v2_vad"), "tflm", "batch1", 1.0),
)


def model_targets(rows: list[dict]) -> list[dict]:
    """The issue's whole-model targets against the 1-thread rows (a bit-exact row only); every model
    of a target must meet it."""
    out = []
    for label, names, peer, mode, threshold in MODEL_TARGETS:
        mine = [r for r in rows if r["model"] in names and r["peer"] == peer and r["threads"] == 1]
        key = "batch1_speedup" if mode == "batch1" else "batch_speedup"
        done = [r for r in mine if r[key] is not None]
        # a model the engine refuses to load (LiteRT on person_detect's bias) has no figure to meet
        refused = sorted({r["model"] for r in mine if r["status"].startswith("skipped: dspsim refuses")})
        missing = sorted(set(names) - {r["model"] for r in done} - set(refused))
        if not done or missing:
            out.append(dict(target=label, value=None, met=None, note=f"not measured: {', '.join(missing or names)}"))
            continue
        refusal = f"; {', '.join(refused)}: the engine refuses the model" if refused else ""
        worst = min(r[key] for r in done)
        exact = all(r["bit_exact"] for r in done)
        cpu_key = "cpu_" + key

        def cpu(r):
            return "" if r[cpu_key] is None else f" (CPU time {r[cpu_key]:.2f}x)"
        out.append(dict(target=label, value=worst, met=worst >= threshold and exact,
                        note=", ".join(f"{r['model']} {r[key]:.2f}x{cpu(r)}" for r in done) + f"; bit-exact: {exact}"
                        + refusal))
    return out


def _fmt(v, spec, dash="-"):
    return dash if v is None else format(v, spec)


def _ok(status: str) -> str:
    return "" if status == "ok" else status


def format_table(result: dict) -> str:
    """The results, targets and cost model as Markdown."""
    th = result["threads"]
    lines = [f"# dspsim bench ({result['run']})", "",
             f"threads: {th['numba']} (numba, torch, ONNX Runtime, LiteRT); sizes: {', '.join(result['sizes'])}; "
             f"time = min of >= {result['repeats']} runs after an untimed warm-up; {result['machine']}", "",
             f"peers: {result['peers_available']}", "",
             "dspsim/engine > 1: dspsim is faster. mismatches: elements that differ from dspsim's output of "
             "the scheme named in 'compared with'. dspsim's fully_connected/conv2d weights are packed once "
             "(dspsim.pack_weights), as torch's are prepacked. gemm_s32/conv2d_s32 are the exact int32 cores "
             "(one row per SIMD path); FBGEMM's call beside them also requantizes (speed only).", "",
             "| case | shape | engine | ms | G/s | dspsim/engine | compared with | mismatches | status |",
             "|---|---|---|---:|---:|---:|---|---:|---|"]
    for r in result["rows"]:
        unit = ("GMAC/s" if r["unit"] == "MAC" else "Gelem/s") if r["throughput"] else ""
        ms = r["seconds"] * 1e3 if r["seconds"] else None
        lines.append(f"| {r['case']} | {r['shape']} | {r['engine']} | {_fmt(ms, '.3f')} | "
                     f"{_fmt(r['throughput'], '.3f')} {unit} | {_fmt(r['dspsim_over_peer'], '.2f')} | "
                     f"{r['compared_with'] or 'speed only'} | {_fmt(r['mismatches'], 'd')} | {r['status']} |")
    lines += ["", "## Targets", ""]
    lines += [f"- {t['target']}: {'MET' if t['met'] else ('NOT MET' if t['met'] is False else 'n/a')}"
              f" ({t.get('size', '-')}: {t['note']})" for t in result["targets"]]
    if result.get("models"):
        lines += ["", "## Models (ms per inference)", "",
                  "dspsim loaded with the engine that emulates each peer; batch N: Model.run_batch time / N (a "
                  "streaming model: N streams, ms per stream-frame); peer: batch 1 (its interpreter has no batch); "
                  "speedup = peer ms / dspsim ms (> 1: dspsim is faster); mismatches: output elements of dspsim's "
                  "timed calls (batch 1 and batch N; streaming: every frame from a reset) that differ from the "
                  "peer's.", "",
                  "CPU: the same figures in least process CPU time per call (fair at 1 thread on a busy host, "
                  "where a long call is preempted in every run; all threads summed at more).", "",
                  "| model | input | N | threads | dspsim engine | peer | dspsim batch 1 | dspsim batch N | peer | "
                  "speedup batch 1 | speedup batch N | CPU ms b1 / bN / peer | CPU speedup b1 / bN | "
                  "mismatches / compared | status |",
                  "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|---|---|---|"]
        for r in result["models"]:
            exact = "" if r["mismatches"] is None else f"{r['mismatches']} / {r['compared']}"
            lines.append(f"| {r['model']} | {r['input']} | {r['batch']}{' streams' if r['streaming'] else ''} | "
                         f"{r['threads']} | {r['engine']} | {r['peer']} | {_fmt(r['dspsim_ms'], '.3f')} | "
                         f"{_fmt(r['dspsim_batch_ms'], '.3f')} | {_fmt(r['peer_ms'], '.3f')} | "
                         f"{_fmt(r['batch1_speedup'], '.3f')} | {_fmt(r['batch_speedup'], '.3f')} | "
                         f"{_fmt(r['dspsim_cpu_ms'], '.3f')} / {_fmt(r['dspsim_batch_cpu_ms'], '.3f')} / "
                         f"{_fmt(r['peer_cpu_ms'], '.3f')} | {_fmt(r['cpu_batch1_speedup'], '.3f')} / "
                         f"{_fmt(r['cpu_batch_speedup'], '.3f')} | {exact} | "
                         f"{r['status']} |")
        lines += ["", "### Model targets (1 thread)", ""]
        lines += [f"- {t['target']}: {'MET' if t['met'] else ('NOT MET' if t['met'] is False else 'n/a')} "
                  f"({t['note']})" for t in result.get("model_targets", ())]
    if result.get("frontend"):
        lines += format_frontend(result["frontend"])
    cm = result.get("cost_model") or {}
    macs = cm.get("macs")
    if macs:
        lines += ["", f"## Time against MACs ({macs['op']})", "",
                  f"least squares: {_fmt(macs['overhead_us'], '.1f')} us per call + "
                  f"{_fmt(macs['ns_per_mac'], '.4f')} ns per MAC", "", "| shape | MACs | ms | GMAC/s |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {q['shape']} | {q['macs']} | {_fmt(q['seconds'] and q['seconds'] * 1e3, '.3f')} | "
                  f"{_fmt(q['gmacs'], '.2f')} {_ok(q['status'])} |" for q in macs["points"]]
    ch = cm.get("channels")
    if ch:
        lines += ["", "## Throughput against channels (3x3 SAME, C -> C)", "", "| op | C | shape | GMAC/s |",
                  "|---|---:|---|---:|"]
        lines += [f"| {q['op']} | {q['channels']} | {q['shape']} | {_fmt(q['gmacs'], '.2f')} {_ok(q['status'])} |"
                  for q in ch["points"]]
    pk = cm.get("packing")
    if pk:
        lines += ["", "## Weight packing (raw int8 weights are packed on every call)", "",
                  "| op | shape | packed ms | raw ms | raw / packed |", "|---|---|---:|---:|---:|"]
        lines += [f"| {q['op']} | {q['shape']} | {_fmt(q['packed_seconds'] and q['packed_seconds'] * 1e3, '.3f')} | "
                  f"{_fmt(q['raw_seconds'] and q['raw_seconds'] * 1e3, '.3f')} | {_fmt(q['raw_over_packed'], '.2f')} "
                  f"{_ok(q['status'])} |" for q in pk["ops"]]
    acc = cm.get("accumulator")
    if acc:
        lines += ["", "## Accumulator models", "",
                  "slowdown = time / time with the default accumulator (int32 wrap, gemm fast path); "
                  "'with stats' counts overflow events (stats=True), which is also where path and events come from.",
                  "", "| op | shape | default GMAC/s | accumulator | slowdown | with stats | path | overflows |",
                  "|---|---|---:|---|---:|---:|---|---:|"]
        for e in acc["ops"]:
            for c in e["checked"]:
                lines.append(f"| {e['op']} | {e['shape']} | {_fmt(e['fast_gmacs'], '.2f')} | {c['accumulator']} | "
                             f"{_fmt(c['slowdown'], '.1f')} | {_fmt(c['stats_slowdown'], '.1f')} | "
                             f"{c['path'] or _ok(c['status'])} | {_fmt(c['overflow_events'], 'd')} |")
    mem = cm.get("memory")
    if mem:
        lines += ["", f"## Peak memory (input {mem['input_bytes'] / 2**20:.0f} MB)", "",
                  "temporaries = peak extra resident memory during the call - the output's size", "",
                  "| call | input MB | output MB | peak extra MB | temporaries MB | temporaries / input | method |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for m in mem["rows"]:
            if m["status"] != "ok":
                lines.append(f"| {m['op']}[{m['variant']}] | {m['input_mb']:.0f} | | | | | {m['status']} |")
                continue
            lines.append(f"| {m['op']}[{m['variant']}] | {m['input_mb']:.0f} | {m['output_mb']:.0f} | "
                         f"{m['peak_extra_mb']:.0f} | {m['temporaries_mb']:.0f} | "
                         f"{m['temporaries_over_input']:.2f} | {m['method']} |")
    return "\n".join(lines) + "\n"


"""What a ``dspsim bench`` run reports: the speed targets and the Markdown table (the plot is drawn by
:func:`dspsim.harness.report.plot_bench`, like every other plot)."""
from __future__ import annotations

import os

from .frontend import format_frontend
from .host import format_header
from .workloads import REQUANT_VARIANTS, SIZES

TARGETS = (
    # (label, op, dspsim variant, peer engine or None for an absolute figure, threshold)
    ("bit-exact dense >= 1x PyTorch FBGEMM", "fully_connected", "fbgemm", "torch-fbgemm", 1.0),
    ("bit-exact conv >= 1x PyTorch FBGEMM", "conv2d", "fbgemm", "torch-fbgemm", 1.0),
    ("bit-exact depthwise >= 1x PyTorch FBGEMM", "depthwise_conv2d", "fbgemm", "torch-fbgemm", 1.0),
    ("quantize >= torch.quantize_per_tensor", "quantize", "torch", "torch", 1.0),
) + tuple((f"requantize[{v}] >= 4 Gelem/s", "requantize", v, None, 4.0) for v in REQUANT_VARIANTS)


def _gate(rows: list[dict]) -> list[dict]:
    """The rows at the fewest threads of the run (1 with ``--threads 1,N``): the count targets are judged at."""
    fewest = min((r.get("threads", 1) for r in rows), default=1)
    return [r for r in rows if r.get("threads", 1) == fewest]


def targets(rows: list[dict]) -> list[dict]:
    """Each target against the medium-size rows (else the largest size run), at the fewest threads run."""
    rows = _gate(rows)
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


def model_targets(rows: list[dict], spec=MODEL_TARGETS) -> list[dict]:
    """The whole-model targets of ``spec`` (as :data:`MODEL_TARGETS`) against the 1-thread rows (a bit-exact
    row only); every model of a target must meet it."""
    out = []
    for label, names, peer, mode, threshold in spec:
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


SPEEDUP_PER_THREAD = 0.7
"""Issue 29: at N threads dspsim's speed-up over 1 thread is at least 0.7 x N."""


def scaling(rows: list[dict]) -> list[dict]:
    """Per case and engine timed at more than one thread count: throughput at each count (``threads``
    ascending), the speed-up over the fewest and its flags: below :data:`SPEEDUP_PER_THREAD` x N (N relative
    to the fewest), slower than with fewer threads."""
    groups = {}
    for r in rows:
        if r["throughput"]:
            groups.setdefault((r["case"], r["engine"]), {})[r.get("threads", 1)] = r
    out = []
    for (case, engine), by in groups.items():
        counts = sorted(by)
        if len(counts) < 2:
            continue
        g = [by[n]["throughput"] for n in counts]
        speedup = [v / g[0] for v in g]
        flags = [f"slower at {b} threads than at {a}" for a, b, ga, gb in zip(counts, counts[1:], g, g[1:]) if gb < ga]
        flags += [f"speed-up {x:.2f} < {SPEEDUP_PER_THREAD} x {n / counts[0]:g}"
                  for n, x in zip(counts[1:], speedup[1:]) if x < SPEEDUP_PER_THREAD * n / counts[0]]
        out.append(dict(case=case, engine=engine, size=by[counts[0]]["size"], unit=by[counts[0]]["unit"],
                        threads=counts, throughput=g,
                        speedup=speedup, dspsim_over_peer=[by[n]["dspsim_over_peer"] for n in counts], flags=flags))
    return out


#: issue 29's kernel targets: (name, op) x (scheme, dspsim variant), each against FBGEMM's row of the same shape
ISSUE_KERNELS = (("dense", "fully_connected"), ("conv", "conv2d"), ("depthwise", "depthwise_conv2d"))
ISSUE_SCHEMES = (("gemmlowp", "double"), ("FBGEMM", "fbgemm"))
ISSUE_MODEL_TARGETS = (
    ("MobileNetV2 224 batch 16 >= 1x XNNPACK per inference (1 thread)", ("mobilenet_v2_224",), "xnnpack", "batch",
     1.0),
    ("microWakeWord v1 and v2 streaming batch 1 >= 1x TFLite Micro per frame (1 thread)",
     ("mww_v1_okay_nabu", "mww_v2_okay_nabu", "mww_v2_vad"), "tflm", "batch1", 1.0),
)


def _channels(op: str, shape: str) -> str:
    dims = shape.split("x")
    return f"{dims[1]} -> {dims[2]}" if op in ("fully_connected", "gemm_s32") else dims[-1]


def _find(rows, **key):
    return next((r for r in rows if r["throughput"] and all(r[k] == v for k, v in key.items())), None)


def _ratio_target(label, mine, theirs, threshold, applies=True, why=""):
    if mine is None or theirs is None:
        return dict(target=label, value=None, met=None, note="not measured" + (f" ({why})" if why else ""))
    ratio = mine["throughput"] / theirs["throughput"]
    note = (f"{mine['case']} {mine['throughput']:.2f} vs {theirs['engine']} {theirs['throughput']:.2f} "
            f"G{mine['unit']}/s, {mine['threads']} thread(s), shape {mine['shape']}")
    return dict(target=label, value=ratio, met=(ratio >= threshold) if applies else None,
                note=note + (f"; {why}" if why else ""))


def issue_targets(rows: list[dict], model_rows: list[dict], head: dict) -> list[dict]:
    """Issue 29's speed targets, each with its measured ratio and met / missed (None: not measured here,
    or not applicable on this CPU): 1 thread, dense / conv / depthwise in the gemmlowp and FBGEMM schemes
    >= 1x FBGEMM at every layer shape run (a run without 1 thread says so); with AMX >= 2x FBGEMM and dense
    >= 1x ONNX Runtime's MatMulInteger (MLAS); dspsim's speed-up >= 0.7 x N at N threads and never slower
    with more; MobileNetV2 224 batch 16 >= 1x XNNPACK and microWakeWord v1 / v2 batch 1 >= 1x TFLM
    (:data:`ISSUE_MODEL_TARGETS`)."""
    one = [r for r in rows if r.get("threads", 1) == 1]
    amx = bool(head["features"].get("amx_int8"))
    no_amx = "" if amx else "no AMX-INT8 on this CPU: not applicable, the ratio is shown"
    out = []
    names = {op: name for name, op in ISSUE_KERNELS}
    layers = sorted({(r["size"], r["op"], r["shape"]) for r in one if r["op"] in names},
                    key=lambda k: (_size_rank(k[0]), list(names).index(k[1]), [int(d) for d in k[2].split("x")]))
    if not layers and any(r["op"] in names for r in rows):
        out.append(dict(target="1 thread: dense / conv / depthwise >= 1x FBGEMM", value=None, met=None,
                        note="not measured: no row at 1 thread (run with --threads 1 or 1,N)"))
    for size, op, shape in layers:  # each layer shape run: a size's, or a --channels case
        fbgemm = _find(one, op=op, variant="fbgemm", shape=shape, engine="torch-fbgemm")
        where = f"{names[op]} ({_channels(op, shape)} channels, {size})"
        for scheme, variant in ISSUE_SCHEMES:
            why = "" if variant == "fbgemm" else "FBGEMM has no gemmlowp scheme: its FBGEMM-scheme call, speed only"
            out.append(_ratio_target(f"1 thread: {where}, {scheme} scheme >= 1x FBGEMM",
                                     _find(one, op=op, variant=variant, shape=shape, engine="dspsim"), fbgemm, 1.0,
                                     why=why))
        out.append(_ratio_target(f"with AMX: {where}, FBGEMM scheme >= 2x FBGEMM",
                                 _find(one, op=op, variant="fbgemm", shape=shape, engine="dspsim"), fbgemm, 2.0, amx,
                                 no_amx))
    default_path = head["paths"]["gemm"]  # the gemm_s32 core on the path dspsim takes here
    for mlas in (r for r in one if r["engine"] == "ort-matmulinteger" and r["throughput"]
                 and (r["op"] == "fully_connected" or r["variant"] == default_path)):
        what = "dense (ONNX Runtime scheme)" if mlas["op"] == "fully_connected" else f"gemm_s32 [{mlas['variant']}]"
        out.append(_ratio_target(f"with AMX: {what} ({mlas['shape']}) >= 1x ONNX Runtime MatMulInteger (MLAS)",
                                 _find(one, case=mlas["case"], engine="dspsim"), mlas, 1.0, amx, no_amx))
    out += _thread_targets([s for s in scaling(rows) if s["engine"] == "dspsim"], head.get("load_average"))
    return out + model_targets(model_rows, ISSUE_MODEL_TARGETS)


def _thread_targets(dspsim_scaling: list[dict], load: float | None = None) -> list[dict]:
    """The two thread targets over dspsim's rows at more than one count, of the largest size run (a smaller
    call stays on one thread by design: :func:`dspsim._jit.split_threads`); ``load``: the load average at the
    start, said in the notes (the other processes' demand on a shared host leaves the threads no idle core)."""
    kernels = [s for s in dspsim_scaling if s["unit"] == "MAC" and s["threads"][0] == 1]
    largest = max((s["size"] for s in kernels), key=_size_rank, default=None)
    kernels = [s for s in kernels if s["size"] == largest]
    label = f"threads: dspsim's speed-up >= {SPEEDUP_PER_THREAD} x N at N threads (kernels and cores)"
    slower = "threads: never slower with more threads (kernels and cores)"
    if not kernels:
        return [dict(target=t, value=None, met=None, note="not measured: run with --threads 1,N")
                for t in (label, slower)]
    n = kernels[0]["threads"][-1]
    worst = min(kernels, key=lambda s: s["speedup"][-1])
    below = [s["case"] for s in kernels if s["speedup"][-1] < SPEEDUP_PER_THREAD * s["threads"][-1]]
    slow = [s["case"] for s in kernels if any(f.startswith("slower") for f in s["flags"])]
    step = min((b / a, s["case"]) for s in kernels for a, b in zip(s["throughput"], s["throughput"][1:]))
    busy = "" if load is None else f"; load average {load:.1f} on {os.cpu_count()} CPUs at the start"
    return [dict(target=label, value=worst["speedup"][-1], met=not below,
                 note=f"worst {worst['case']} {worst['speedup'][-1]:.2f}x at {n} threads; {len(below)} of "
                      f"{len(kernels)} cases below" + _listed(below) + busy),
            dict(target=slower, value=step[0], met=not slow,
                 note=f"ratio: the least throughput with more threads / with fewer ({step[1]}); {len(slow)} of "
                      f"{len(kernels)} cases slower" + _listed(slow) + busy)]


def _size_rank(size: str) -> int:
    return SIZES.index(size) if size in SIZES else -1


def _listed(names, most=6):
    if not names:
        return ""
    return ": " + ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _fmt(v, spec, dash="-"):
    return dash if v is None else format(v, spec)


def _ok(status: str) -> str:
    return "" if status == "ok" else status


def _format_scaling(scal: list[dict]) -> list[str]:
    counts = scal[0]["threads"]
    per = " / ".join(map(str, counts))
    lines = ["", f"## Threads ({per})", "",
             f"G/s at each count; speed-up = throughput / throughput at {counts[0]} thread(s); dspsim/engine at each "
             f"count; flags: speed-up below {SPEEDUP_PER_THREAD} x N, or slower with more threads.", "",
             f"| case | engine | G/s at {per} | speed-up | dspsim/engine at {per} | flags |",
             "|---|---|---|---|---|---|"]
    for s in scal:
        lines.append(f"| {s['case']} | {s['engine']} | {' / '.join(_fmt(v, '.2f') for v in s['throughput'])} | "
                     f"{' / '.join(_fmt(v, '.2f') for v in s['speedup'][1:])} | "
                     f"{' / '.join(_fmt(v, '.2f') for v in s['dspsim_over_peer'])} | {'; '.join(s['flags'])} |")
    return lines


def format_table(result: dict) -> str:
    """The results, targets and cost model as Markdown."""
    th = result["threads"]
    counts = th.get("counts", [th["numba"]])
    lines = [f"# dspsim bench ({result['run']})", ""]
    if result.get("host"):
        lines += format_header(result["host"])
    else:
        lines += [f"peers: {result['peers_available']}", ""]
    lines += [f"threads: {', '.join(map(str, counts))} (every case at each count: numba, torch, ONNX Runtime, LiteRT "
              f"at the same count); sizes: {', '.join(result['sizes'])}; "
              f"time = min of >= {result['repeats']} runs after an untimed warm-up; {result['machine']}", "",
             "dspsim/engine > 1: dspsim is faster. mismatches: elements that differ from dspsim's output of "
             "the scheme named in 'compared with'. dspsim's fully_connected/conv2d weights are packed once "
             "(dspsim.pack_weights), as torch's are prepacked. gemm_s32/conv2d_s32 are the exact int32 cores "
             "(one row per SIMD path); FBGEMM's call beside them also requantizes (speed only).", "",
             "| case | shape | threads | engine | ms | G/s | dspsim/engine | compared with | mismatches | status |",
             "|---|---|---:|---|---:|---:|---:|---|---:|---|"]
    for r in result["rows"]:
        unit = ("GMAC/s" if r["unit"] == "MAC" else "Gelem/s") if r["throughput"] else ""
        ms = r["seconds"] * 1e3 if r["seconds"] else None
        status = r["status"] + (f" ({r['note']})" if r.get("note") else "")
        lines.append(f"| {r['case']} | {r['shape']} | {r.get('threads', th['numba'])} | {r['engine']} | "
                     f"{_fmt(ms, '.3f')} | {_fmt(r['throughput'], '.3f')} {unit} | "
                     f"{_fmt(r['dspsim_over_peer'], '.2f')} | {r['compared_with'] or 'speed only'} | "
                     f"{_fmt(r['mismatches'], 'd')} | {status} |")
    if result.get("scaling"):
        lines += _format_scaling(result["scaling"])
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
    if result.get("issue_targets"):
        lines += ["", "## Issue 29 targets", "",
                  "ratio = dspsim's throughput / the peer's (models: the peer's time / dspsim's), one run; met: "
                  "MET / MISSED, n/a where not measured or not applicable on this CPU.", "",
                  "| target | ratio | met | measured |", "|---|---:|---|---|"]
        lines += [f"| {t['target']} | {_fmt(t['value'], '.3f')} | "
                  f"{'MET' if t['met'] else ('MISSED' if t['met'] is False else 'n/a')} | {t['note']} |"
                  for t in result["issue_targets"]]
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


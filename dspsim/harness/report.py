"""Reports: ``summary.md`` (readable tables), ``results.json`` (machine-readable), PNG plots.

The only matplotlib user in dspsim: it is imported lazily, with the Agg backend, when plots are
drawn. Every writer builds the whole report in a temporary sibling directory and swaps it into
place at the end (:func:`dspsim.harness.safe_io.atomic_dir`), so an interrupted run (Ctrl-C, SIGTERM,
a full disk) leaves no half-written report, and an existing report of the same name is replaced whole.

``results.json`` schema. Common to all kinds::

    {"schema": "dspsim.<kind>/1", "kind": "suite" | "drift" | "compare",
     "run": {"name", "seconds", "started" (UTC ISO 8601), "argv", "dspsim", "python", "numpy",
             "numba", "platform", ...}, ...}

A *comparison* (bit-exact check) is ``{"name", "shape", "count", "mismatches", "passed",
"first_index" (list or null), "expected", "actual" (values at first_index), "max_abs_diff",
"unit" ("LSB" or "ULP"), "histogram" ({"<signed diff>": count, "<-16"/">16": pooled}), "sampled"
(null, or which subset was compared)}``. A *float error* is ``{"count", "mean_lsb" (bias),
"rms_lsb", "max_abs_lsb", "sqnr_db" (null when the error is 0), "saturated"}``.

- ``suite``: ``"summary": {"cases", "passed", "failed", "errors", "checks", "checked_values",
  "mismatches"}``; ``"cases": [{"name", "op", "seed", "params", "vectors", "status" ("pass" |
  "fail" | "error"), "error", "seconds", "n_outputs", "checks": [comparison], "float": float
  error | null, "schemes": [{"name", "baseline", "count", "differ", "max_abs_diff", "histogram",
  "float": float error | null, "note"}], "notes": [str]}]``.
- ``drift``: ``"x0": {"n", "seed", "low", "high"}`` (the chains' start); ``"cycles": [{"name",
  "family" ("tf" | "torch" | "onnx" | "pof2"), "family_label", "start" ("x0 spans 0" | "x0 > 0"),
  "mode", "T", "round_mode", "narrow_range", "policy", "n", "cycles", "lsb", "stats": {"mean",
  "rms", "max_abs" (real units), "mean_lsb", "rms_lsb", "max_abs_lsb", "codes_changed"} (lists,
  one value per cycle)}]``; ``"depth": [{"name", "chain", "scheme", "width", "batch", "depth",
  "stats": {same keys without codes_changed, plus "differ_from_double"} (one per layer)}]``;
  ``"findings": [str]``.
- ``compare``: ``"expected"``, ``"actual"`` (paths), ``"checks": [comparison]``, ``"problems"``
  (arrays not compared, with why), ``"notes"`` (flat dumps reshaped, dtype differences), ``"passed"``.
- ``diagnose``: the schema in :mod:`dspsim.harness.diagnose` (``dspsim.diagnose/1``).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from .clues import histogram_text as clue_hist_text
from .safe_io import atomic_dir, atomic_write_text
from .safe_io import MARKER, OutDirError, check_replaceable, check_writable  # noqa: F401 - their old home


def _json_dump_text(d: dict) -> str:
    text = json.dumps(_finite(d), indent=1, allow_nan=False)
    # one line per innermost list (per-cycle series, shapes, indices): readable and compact
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text) + "\n"


def _dump_json(d: dict, path: Path) -> None:
    path.write_text(_json_dump_text(d), encoding="utf-8")


def _finite(v):
    """JSON has no inf/nan: write them as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


#: Figures a person reads: FIG_WIDTH inches wide at DPI (900 px, a README's column), no text below FONT_PT points.
FIG_WIDTH, DPI, FONT_PT = 9.0, 100, 10
_RC = {"font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "axes.labelsize": FONT_PT, "xtick.labelsize": FONT_PT,
       "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT, "figure.titlesize": FONT_PT + 2}
#: (marker, line style) per curve, so that curves lying on each other stay visible
_LINE_STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("x", "--"), ("P", "-."), ("*", ":"))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure(rows: int, cols: int, height: float, **kw):
    """(figure, axes grid) FIG_WIDTH wide with dspsim's font sizes (:data:`_RC`); save it with :func:`_save`."""
    plt = _pyplot()
    with plt.rc_context(_RC):
        return plt.subplots(rows, cols, figsize=(FIG_WIDTH, height), squeeze=False, **kw)


def _save(fig, path, legend_rows: int = 0) -> None:
    """Lay out (keeping ``legend_rows`` rows of figure legend below the title) and write ``fig`` at :data:`DPI`."""
    plt = _pyplot()
    top = 1 - (0.3 + 0.21 * legend_rows) / fig.get_figheight()
    with plt.rc_context(_RC):
        fig.tight_layout(rect=(0, 0, 1, top))
        fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _styled_plot(ax, k: int, xs, ys, n_points: int, **kw):
    """Curve ``k`` of a panel: its own marker and line style, markers staggered so that equal curves show."""
    marker, ls = _LINE_STYLES[k % len(_LINE_STYLES)]
    every = max(1, n_points // 6)
    return ax.plot(xs, ys, marker=marker, ls=ls, lw=1.4, ms=5, alpha=0.85, markevery=(k % every, every), **kw)


def _figure_legend(fig, handles, labels, cols: int) -> int:
    """A legend under the title, outside every panel; returns the rows it takes."""
    rows = -(-len(labels) // cols)
    fig.legend(handles, labels, loc="upper center", ncol=cols, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.3 / fig.get_figheight()), fontsize=FONT_PT)
    return rows


def _fmt(v, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return f"{v:,}"
    if not math.isfinite(v):
        return str(v)
    return f"{v:.{digits}f}" if abs(v) < 1e4 else f"{v:.3g}"


def _table(header, rows) -> list:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return lines + [""]


def _run_lines(run: dict) -> list:
    keys = ["started", "seconds", "argv", "dspsim", "python", "numpy", "numba", "platform"]
    parts = [f"{k}: `{' '.join(run[k]) if k == 'argv' else run[k]}`" for k in keys if k in run]
    return ["Run: " + "; ".join(parts), ""]


# =============================================================================================
# suite
# =============================================================================================
def _hist_key(k: str) -> int:
    """Sort key of a histogram bin: the pooled "<-N" first, ">N" last."""
    return -(10**9) if k.startswith("<") else 10**9 if k.startswith(">") else int(k)


def _hist_text(h: dict, limit: int = 6) -> str:
    items = sorted(h.items(), key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"{k}: {v}" for k, v in items) + (" …" if len(h) > limit else "")


def _headlines(cases: list) -> list:
    """What the rounding choice changes, summed over the kernel cases (double-rounding baseline)."""
    kernel_ops = ("fully_connected", "conv2d", "depthwise_conv2d", "relu")
    rows = []
    for scheme in ("single", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack"):
        tot = {True: [0, 0], False: [0, 0]}
        for c in cases:
            if c["op"] not in kernel_ops:
                continue
            for sc in c["schemes"]:
                if sc["name"] == scheme and sc["baseline"] == "double" and sc["differ"] is not None:
                    t = tot["ties" in c["name"]]
                    t[0] += sc["differ"]
                    t[1] += sc["count"]
        if tot[True][1] or tot[False][1]:
            rows.append([f"double → {scheme}"] + [f"{d:,} / {n:,} ({100.0 * d / n:.2f} %)" if n else "–"
                                                   for d, n in (tot[False], tot[True])])
    out = []
    if rows:
        out += ["## Headlines", "",
                "Kernel outputs (FC, conv, depthwise, ReLU) that change when TFLite's double-rounding",
                "requantization is replaced by another scheme, on the same inputs:", ""]
        out += _table(["change", "random data", "exact-tie cases"], rows)
    pairs = {}
    for c in cases:
        if c["op"] == "affine_quantize" and "ties" in c["name"]:
            for sc in c["schemes"]:
                key = tuple(sorted((sc["baseline"], sc["name"])))
                if sc["differ"] is not None and key not in pairs:
                    pairs[key] = (sc["differ"], sc["count"], c["name"])
    if pairs:
        out += ["Affine quantization of exact ties (x / scale = k + 1/2, odd zero point): codes that differ",
                "between conventions (PyTorch adds the zero point before rounding; ONNX Runtime rounds ties",
                "to even, TFLite away from zero):", ""]
        out += _table(["conventions", "codes differing", "case"],
                      [[f"{a} vs {b}", f"{d:,} / {n:,}", f"`{name}`"] for (a, b), (d, n, name) in sorted(pairs.items())])
    return out


def render_suite_md(d: dict) -> str:
    s, cases = d["summary"], d["cases"]
    ok = s["failed"] == 0 and s["errors"] == 0
    lines = [f"# dspsim suite: {d['run']['name']}", ""] + _run_lines(d["run"])
    lines += [f"**{'PASS' if ok else 'FAIL'}**: {s['cases']} cases ({s['passed']} pass, {s['failed']} fail, "
              f"{s['errors']} error); {s['checks']} bit-exact checks over {s['checked_values']:,} values, "
              f"{s['mismatches']:,} mismatches.", ""]
    lines += _headlines(cases)
    bad = [c for c in cases if c["status"] != "pass"]
    if bad:
        lines += ["## Failures", ""]
        rows = []
        for c in bad:
            if c["status"] == "error":
                rows.append([c["name"], c["op"], "error", "–", "–", "–", c["error"]])
            for ch in c["checks"]:
                if not ch["passed"]:
                    rows.append([c["name"], c["op"], ch["name"], f"{ch['mismatches']:,} / {ch['count']:,}",
                                 ch["first_index"], f"{ch['expected']} → {ch['actual']}",
                                 f"max {ch['max_abs_diff']} {ch['unit']}; {_hist_text(ch['histogram'])}"])
        lines += _table(["case", "op", "check", "mismatches", "first index", "expected → actual", "diff"], rows)

    lines += ["## Bit-exactness against the oracle (dspsim.oracle)", ""]
    rows = []
    for c in cases:
        n_chk = len(c["checks"])
        mism = sum(ch["mismatches"] for ch in c["checks"])
        vals = sum(ch["count"] for ch in c["checks"])
        sampled = any(ch["sampled"] for ch in c["checks"])
        rows.append([c["name"], c["op"], c["n_outputs"], n_chk, f"{vals:,}{' (sampled)' if sampled else ''}", mism,
                     c["status"].upper() if c["status"] != "pass" else "pass", f"{c['seconds']:.2f}"])
    lines += _table(["case", "op", "outputs", "checks", "values checked", "mismatches", "status", "s"], rows)

    lines += ["## Error against the float model", "",
              "Error of dspsim's result (the case's own scheme) against the exact float computation, in LSB of",
              "the output (the float model is clamped to the representable/activation range; clamped",
              "elements are counted under *saturated*).", ""]
    rows = [[c["name"], _fmt(f["mean_lsb"], 4), _fmt(f["rms_lsb"], 4), _fmt(f["max_abs_lsb"]), _fmt(f["sqnr_db"], 1),
             f["saturated"]] for c in cases if (f := c["float"])]
    lines += _table(["case", "bias (LSB)", "RMS (LSB)", "max |err| (LSB)", "SQNR (dB)", "saturated"], rows)

    lines += ["## Across schemes", "",
              "Same inputs, other scheme: outputs that differ from the case's own scheme (kernels: integer",
              "outputs; TF modes: dequantized values; affine: codes), and that scheme's error against the",
              "float model. This is what changes if the hardware rounds differently.", ""]
    agg = {}
    for c in cases:
        for sc in c["schemes"]:
            if sc["differ"] is None:
                continue
            base = sc["baseline"] if c["op"] != "tf_quantize" else f"each mode, {c['params'].get('T', 'qint8')}"
            key = (c["op"], base, sc["name"])
            a = agg.setdefault(key, {"cases": 0, "count": 0, "differ": 0, "max": 0, "bias": [], "rms": []})
            a["cases"] += 1
            a["count"] += sc["count"]
            a["differ"] += sc["differ"]
            a["max"] = max(a["max"], sc["max_abs_diff"] if isinstance(sc["max_abs_diff"], (int, float)) else 0)
            if sc["float"]:
                a["bias"].append(sc["float"]["mean_lsb"])
                a["rms"].append(sc["float"]["rms_lsb"])
    rows = []
    order = ("fully_connected", "conv2d", "depthwise_conv2d", "relu", "affine_quantize", "pof2_quantize", "tf_quantize")
    for (op, base, name), a in sorted(agg.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else 9,
                                                                   kv[0][1] != "double", kv[0])):
        pct = 100.0 * a["differ"] / a["count"] if a["count"] else 0.0
        mb = sum(a["bias"]) / len(a["bias"]) if a["bias"] else None
        mr = sum(a["rms"]) / len(a["rms"]) if a["rms"] else None
        rows.append([op, base, name, a["cases"], f"{a['differ']:,} / {a['count']:,}", f"{pct:.2f} %",
                     _fmt(a["max"]), _fmt(mb, 4), _fmt(mr, 4)])
    lines += _table(["op", "baseline", "scheme", "cases", "outputs differing", "%", "max |diff| (LSB)",
                     "mean bias (LSB)", "mean RMS (LSB)"], rows)
    notes = sorted({f"`{c['name']}`, scheme {sc['name']} not run: {sc['note']}" for c in cases for sc in c["schemes"]
                    if sc["note"]} | {f"`{c['name']}`: {n}" for c in cases for n in c["notes"]})
    sampled = [(c["name"], ch["sampled"]) for c in cases for ch in c["checks"] if ch["sampled"]]
    if sampled or notes:
        lines += ["## Notes", ""]
        seen = set()
        for name, desc in sampled:
            if name not in seen:
                lines.append(f"- `{name}`: oracle checked on a deterministic sample ({desc}).")
                seen.add(name)
        lines += [f"- {n}" for n in notes]
        lines.append("")
    return "\n".join(lines)


def _suite_plots(d: dict, out: Path) -> list:
    made = []
    cases = d["cases"]
    # error vs scheme: bias and RMS in LSB, averaged over the kernel cases that ran every scheme
    kernel_ops = ("fully_connected", "conv2d", "depthwise_conv2d", "relu")
    names = ("double", "single", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack")
    groups = {"random data": [], "exact-tie cases": []}
    for c in cases:
        if c["op"] not in kernel_ops or not c["float"] or c["status"] == "error":
            continue
        per = {c["params"].get("scheme", "double"): c["float"]}
        per.update({sc["name"]: sc["float"] for sc in c["schemes"] if sc["float"]})
        if all(n in per for n in names):
            groups["exact-tie cases" if "ties" in c["name"] else "random data"].append(per)
    groups = {k: v for k, v in groups.items() if v}
    if groups:
        fig, axes = _figure(1, len(groups), 4.6)
        for ax, (label, pers) in zip(axes[0], groups.items()):
            rms = [sum(p[n]["rms_lsb"] for p in pers) / len(pers) for n in names]
            bias = [sum(p[n]["mean_lsb"] for p in pers) / len(pers) for n in names]
            xs = range(len(names))
            bars = (ax.bar([x - 0.2 for x in xs], rms, 0.4, color="C0", label="RMS error"),
                    ax.bar([x + 0.2 for x in xs], bias, 0.4, color="C1", hatch="//", label="bias (mean error)"))
            for b in bars:  # the values, over (under) each bar
                ax.bar_label(b, fmt="%.2g", padding=2, rotation=90, fontsize=FONT_PT)
            ax.set_xticks(list(xs), names, rotation=90)
            ax.set_title(f"{label} ({len(pers)} cases)")
            ax.axhline(0, color="k", lw=0.6)
            lo, hi = min(0.0, *bias), max(rms)
            ax.set_ylim(lo - 0.35 * (hi - lo), hi + 0.35 * (hi - lo))  # room for the labels
        axes[0][0].set_ylabel("LSB of the output")
        fig.suptitle("Kernels: error against the float model, by requantization scheme")
        legend_rows = _figure_legend(fig, list(bars), [b.get_label() for b in bars], 2)
        _save(fig, out / "error_vs_scheme.png", legend_rows)
        made.append("error_vs_scheme.png")
    # histograms: failing checks if any, else the scheme differences of the kernels
    failing = [(c["name"], ch) for c in cases for ch in c["checks"] if not ch["passed"]]
    if failing:
        items = [(f"{n}: {ch['name']}", ch["histogram"]) for n, ch in failing[:6]]
        title, fname = "Mismatches against the oracle (actual - expected)", "mismatch_histograms.png"
    else:
        merged = {}
        for c in cases:
            if c["op"] not in kernel_ops:
                continue
            for sc in c["schemes"]:
                h = merged.setdefault(f"{sc['name']} vs {sc['baseline']}", {})
                for k, v in sc["histogram"].items():
                    h[k] = h.get(k, 0) + v
        items = [(k, v) for k, v in merged.items() if v][:6]
        title, fname = "Kernels: output differences between schemes (other - own, LSB)", "scheme_differences.png"
    if items:
        _histogram_figure(items, title, out / fname)
        made.append(fname)
    return made


def _histogram_figure(items, title: str, path: Path) -> None:
    """One bar chart per ``(label, {diff: count})`` item, three to a row, each bar labelled with its count,
    saved to ``path``."""
    cols = min(3, len(items))
    rows = -(-len(items) // cols)
    fig, axes = _figure(rows, cols, 0.9 + 2.9 * rows)
    for ax, (label, h) in zip(axes.ravel(), items):
        keys = sorted(h, key=_hist_key)
        bars = ax.bar(range(len(keys)), [h[k] for k in keys], color="C0")
        if len(keys) <= 8:
            ax.bar_label(bars, fmt="{:,.0f}", padding=2)
        step = -(-len(keys) // 6)  # at most 6 tick labels: they never touch
        ax.set_xticks(range(0, len(keys), step), keys[::step])
        ax.set_title(label if len(label) <= 30 else label[:29] + "…")
        ax.set_xlabel("difference (LSB)")
        ax.margins(y=0.2)
    for ax in axes.ravel()[len(items):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("count")
    fig.suptitle(title)
    _save(fig, path)


def _write_report(d: dict, out, render, plotter) -> Path:
    """Write ``results.json``, the plots made by ``plotter(d, dir)`` and ``summary.md`` atomically."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        _dump_json(d, tmp / "results.json")
        made = plotter(d, tmp) if plotter else []
        md = render(d)
        if made:
            md += "\n## Plots\n\n" + "\n".join(f"![{m}]({m})" for m in made) + "\n"
        (tmp / "summary.md").write_text(md, encoding="utf-8")
    return out


def write_suite_report(d: dict, out, plots: bool = True) -> Path:
    """Write ``summary.md``, ``results.json`` and the plots of a suite run into ``out``."""
    return _write_report(d, out, render_suite_md, _suite_plots if plots else None)


# =============================================================================================
# drift
# =============================================================================================
def _drift_row(c) -> list:
    st = c["stats"]
    return [c["name"], c.get("start", ""), c["policy"], _fmt(st["mean_lsb"][0], 4), _fmt(st["rms_lsb"][0], 4),
            _fmt(st["mean_lsb"][-1], 4), _fmt(st["rms_lsb"][-1], 4), _fmt(st["max_abs_lsb"][-1], 3),
            f"{sum(st['codes_changed'][1:]):,}"]


_DRIFT_HEADER = ["mode", "start", "policy", "bias c1 (LSB)", "RMS c1", "bias last", "RMS last", "max last",
                 "codes changed after c1"]


def render_drift_md(d: dict) -> str:
    lines = [f"# dspsim drift: {d['run']['name']}", ""] + _run_lines(d["run"])
    if d.get("findings"):
        lines += ["## Findings", ""] + [f"- {f}" for f in d["findings"]] + [""]
    cyc = d["cycles"]
    n_cycles = cyc[0]["cycles"] if cyc else 0
    lines += ["## Quantize → dequantize cycles", "",
              f"x₀ is quantized, dequantized and fed back, {n_cycles} times. Policies: `fixed` = request",
              "[min x₀, max x₀] every cycle, dequantize with the returned range; `returned` = request the range",
              "returned by the previous cycle; `data` = request [min, max] of the previous cycle's output;",
              "`fixed_dq_requested` = like `fixed`, but dequantize with the requested range (a misuse). Starts:",
              "`x0 spans 0` (uniform in [-1, 1.3]) and `x0 > 0` (the same mapped to [0.25, 1.3], a range TF",
              "widens to [0, 1.3]). Errors are against x₀, in LSB of the first cycle's step; bias = mean error.", ""]
    tf = [c for c in cyc if c["family"] == "tf"]
    moving = [c for c in cyc if sum(c["stats"]["codes_changed"][1:])]
    lines += [f"{len(cyc) - len(moving)} of {len(cyc)} runs are stable: no code changes after cycle 1. "
              "The runs that move:", ""]
    lines += _table(_DRIFT_HEADER, [_drift_row(c) for c in moving]) if moving else ["(none)", ""]
    types = sorted({c["T"] for c in tf}, key=lambda t: ("qint8", "quint8", "qint16", "quint16", "qint32").index(t))
    labels = list(dict.fromkeys(c["name"].rsplit("/", 1)[0] for c in tf))
    if tf:
        lines += ["### Bias and RMS by mode (range fixed, x0 spans 0, cycle 1)", "",
                  "What the choice of mode costs on the same data: mean error (bias) / RMS, in LSB.", ""]
        by = {(c["name"].rsplit("/", 1)[0], c["T"]): c for c in tf
              if c["policy"] == "fixed" and c["start"] == "x0 spans 0"}
        rows = [[lab] + [f"{by[(lab, t)]['stats']['mean_lsb'][0]:+.4f} / {by[(lab, t)]['stats']['rms_lsb'][0]:.4f}"
                         if (lab, t) in by else "–" for t in types] for lab in labels]
        lines += _table(["mode"] + types, rows)
    other = [c for c in cyc if c["family"] != "tf"]
    if other:
        lines += ["### Affine and power-of-two chains", ""]
        lines += _table(_DRIFT_HEADER, [_drift_row(c) for c in other])
    if d.get("depth"):
        lines += ["## Requantization chains over depth", "",
                  "int8 fully-connected layers, each fed the previous layer's int8 output. Error against the",
                  "float chain (float64 on the same quantized weights, biases and input), in LSB of each layer's",
                  "output scale; *differ* = outputs that differ from the double-rounding chain.", ""]
        rows = []
        for c in d["depth"]:
            st = c["stats"]
            rows.append([c["chain"], c["scheme"], _fmt(st["mean_lsb"][0], 4), _fmt(st["rms_lsb"][0], 4),
                         _fmt(st["mean_lsb"][-1], 4), _fmt(st["rms_lsb"][-1], 4), _fmt(st["max_abs_lsb"][-1], 2),
                         f"{st['differ_from_double'][-1]:,} / {c['width'] * c.get('batch', 1):,}"])
        last = f"L{d['depth'][0]['depth']}"
        lines += _table(["chain", "scheme", "bias L1 (LSB)", "RMS L1", f"bias {last}", f"RMS {last}", f"max {last}",
                         f"differ from double ({last})"], rows)
    return "\n".join(lines)


def _drift_plots(d: dict, out: Path) -> list:
    made = []
    panels = {}
    for c in d["cycles"]:
        if c["family"] == "tf" and c["T"] == "qint8":
            panels.setdefault(f"{c['family_label']} qint8", []).append(c)
        elif c["family"] == "tf" and c["T"] == "qint32" and c["mode"] == "MIN_FIRST":
            panels.setdefault(f"{c['family_label']} qint32", []).append(c)
        elif c["family"] != "tf":
            panels.setdefault(c["family_label"], []).append(c)
    if panels:
        from matplotlib.ticker import MaxNLocator

        n = len(panels)
        cols = min(3, n)
        rows = -(-n // cols)
        fig, axes = _figure(rows, cols, 1.4 + 2.3 * rows, sharex=True)
        curves = {}  # label -> handle, for the one legend
        for ax, (label, cs) in zip(axes.ravel(), panels.items()):
            for c in cs:
                name = f"{c['policy']}{', x0 > 0' if c.get('start') == 'x0 > 0' else ''}"
                k = list(curves).index(name) if name in curves else len(curves)
                rms = c["stats"]["rms_lsb"]
                (h,) = _styled_plot(ax, k, range(1, len(rms) + 1), rms, len(rms), color=f"C{k % 10}")
                curves[name] = h
            top = max(max(c["stats"]["rms_lsb"]) for c in cs)
            low = min(min(c["stats"]["rms_lsb"]) for c in cs)
            if low > 0 and top / low > 10:
                ax.set_yscale("log")
            else:
                ax.set_ylim(0, top * 1.3 or 1)
            ax.yaxis.set_major_locator(MaxNLocator(4) if ax.get_yscale() == "linear" else ax.yaxis.get_major_locator())
            ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
            ax.set_title(label if len(label) <= 28 else label[:27] + "…")
        for ax in axes.ravel()[n:]:
            ax.axis("off")
        fig.supxlabel("cycle")
        fig.supylabel("RMS error vs x₀ (LSB)")
        fig.suptitle("Quantize → dequantize cycles: error per mode and range policy")
        legend_rows = _figure_legend(fig, list(curves.values()), list(curves), 2)
        _save(fig, out / "drift_cycles.png", legend_rows)
        made.append("drift_cycles.png")
    chains = {}
    for c in d.get("depth", []):
        chains.setdefault(c["chain"], []).append(c)
    if chains:
        from matplotlib.ticker import MaxNLocator

        schemes = list(dict.fromkeys(c["scheme"] for cs in chains.values() for c in cs))
        fig, axes = _figure(2, len(chains), 7.4, sharex=True)
        handles = {}
        for j, (label, cs) in enumerate(chains.items()):
            for c in cs:
                k = schemes.index(c["scheme"])
                depth = range(1, len(c["stats"]["rms_lsb"]) + 1)
                (handles[c["scheme"]],) = _styled_plot(axes[0][j], k, depth, c["stats"]["rms_lsb"], len(depth),
                                                       color=f"C{k % 10}")
                _styled_plot(axes[1][j], k, depth, c["stats"]["mean_lsb"], len(depth), color=f"C{k % 10}")
            axes[0][j].set_title(label if len(label) <= 30 else label[:29] + "…")
            axes[1][j].set_xlabel("layer")
            axes[1][j].axhline(0, color="k", lw=0.6)
            for ax in axes[:, j]:
                ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
                ax.yaxis.set_major_locator(MaxNLocator(5))
        axes[0][0].set_ylabel("RMS error (LSB)")
        axes[1][0].set_ylabel("bias (LSB)")
        fig.suptitle("Requantization chains: error against the float chain vs depth")
        legend_rows = _figure_legend(fig, [handles[s] for s in schemes], schemes, 4)
        _save(fig, out / "drift_depth.png", legend_rows)
        made.append("drift_depth.png")
    return made


def write_drift_report(d: dict, out, plots: bool = True) -> Path:
    """Write ``summary.md``, ``results.json`` and the drift plots into ``out``."""
    return _write_report(d, out, render_drift_md, _drift_plots if plots else None)


# =============================================================================================
# compare
# =============================================================================================
def render_compare_md(d: dict) -> str:
    lines = [f"# dspsim compare: {d['run']['name']}", ""] + _run_lines(d["run"])
    lines += [f"Expected: `{d['expected']}`  ", f"Actual: `{d['actual']}`", "",
              f"**{'PASS' if d['passed'] else 'FAIL'}**", ""]
    rows = [[ch["name"], ch["shape"], f"{ch['mismatches']:,} / {ch['count']:,}", ch["first_index"],
             f"{ch['expected']} → {ch['actual']}" if ch["mismatches"] else "–", ch["max_abs_diff"], ch["unit"],
             _hist_text(ch["histogram"]) or "–"] for ch in d["checks"]]
    lines += _table(["key", "shape", "mismatches", "first index", "expected → actual", "max |diff|", "unit",
                     "histogram (diff: count)"], rows)
    if d.get("problems"):
        lines += ["## Not compared", ""] + [f"- {p}" for p in d["problems"]] + [""]
    return "\n".join(lines)


def _compare_plots(d: dict, out: Path) -> list:
    failing = [ch for ch in d["checks"] if not ch["passed"] and ch["histogram"]][:6]
    if not failing:
        return []
    _histogram_figure([(ch["name"], ch["histogram"]) for ch in failing],
                      f"actual - expected ({failing[0]['unit']})", out / "mismatch_histograms.png")
    return ["mismatch_histograms.png"]


def write_compare_report(d: dict, out, plots: bool = True) -> Path:
    """Write ``summary.md``, ``results.json`` and (on mismatch) a histogram of the differences."""
    return _write_report(d, out, render_compare_md, _compare_plots if plots else None)


# =============================================================================================
# diagnose (dspsim.harness.diagnose; schema in its docstring)
# =============================================================================================
def _variant_groups(variants: list) -> list:
    """Variants in report order, the ``same_as`` ones folded into one line per simpler variant."""
    folded = {}
    for v in variants:
        if v["same_as"] is not None:
            folded.setdefault(v["same_as"], []).append(v["variant"])
    return [(v, folded.get(v["variant"], [])) for v in variants if v["same_as"] is None], folded.get("base", [])


def _fold_variants(labels: list) -> str:
    """Variant labels with accumulator widths folded into ranges: ``accumulator=18..48,wrap``."""
    groups, order = {}, []
    for lab in labels:
        words = lab.split()
        acc = next((w for w in words if w.startswith("accumulator=")), None)
        if acc is None:
            order.append((lab, None))
            continue
        bits, _, rule = acc[len("accumulator="):].partition(",")
        key = (" ".join(w for w in words if w is not acc), rule)
        if key not in groups:
            groups[key] = []
            order.append((None, key))
        groups[key].append(int(bits))
    parts = []
    for lab, key in order:
        if key is None:
            parts.append(f"`{lab}`")
            continue
        b = sorted(groups[key])
        runs, start = [], b[0]
        for prev, cur in zip(b, b[1:] + [None]):
            if cur != prev + 1:
                runs.append(f"{start}" if start == prev else f"{start}..{prev}")
                start = cur
        prefix = f"{key[0]} " if key[0] else ""
        parts.append(f"`{prefix}accumulator={'/'.join(runs)},{key[1]}`")
    return ", ".join(parts)


def render_diagnose_md(d: dict) -> str:
    lines = [f"# dspsim diagnose: {d['model']}", ""] + (_run_lines(d["run"]) if "run" in d else [])
    lines += [f"Reference: `{d['engine']}`  ", f"Dumps: `{d['dumps']}` ({d['dumped']} tensors"
              + (f"; ignored: {', '.join(d['ignored'])}" if d["ignored"] else "") + ")", ""]
    if d["not_dumped"]["caveat"]:
        lines += [f"**Not dumped:** {d['not_dumped']['caveat']}.", ""]
    f = d["first_divergence"]
    if f is None:
        lines += ["**Every dumped tensor matches, bit for bit.**", ""]
    else:
        op = f["op_index"]
        where = "constant" if op is None else "model input" if op < 0 else f"operator {op}"
        hist = clue_hist_text(f["exact_histogram"], 12) if f["exact_histogram"] else _hist_text(f["histogram"], 12)
        lines += [f"**First divergence: {where} {f['op']}**, tensor {f['tensor']} `{f['name']}`: "
                  f"{f['mismatches']:,} of {f['count']:,} values differ, max |diff| {f['max_abs_diff']} LSB, first at "
                  f"{tuple(f['first_index'])} (dspsim {f['expected']}, device {f['actual']}); "
                  f"histogram (device - dspsim: count) {hist}.", ""]
        if f["clue"]:
            lines += [f"Clue: **{f['clue']}**.", ""]
        if f["locality"]:
            lines.append(f"Locality: **{f['locality']}** (the operator alone, on the device's own inputs where "
                         "dumped, " + ("still differs)." if f["locality"] == "local" else "agrees with the device)."))
            if f["undumped_inputs"]:
                lines.append(f"Its input tensor(s) {f['undumped_inputs']} were not dumped (dspsim's values used): "
                             "the divergence may begin upstream.")
            lines.append("")
        rep = d["reproduced_by"]
        lines += [("**Reproduced by:** " + ", ".join(f"`{r}`" for r in rep)) if rep else
                  "**No variant searched reproduces every dumped tensor.**", ""]
        if d["op_reproduced_by"]:
            lines += ["The diverging operator alone is reproduced by: "
                      + ", ".join(f"`{r}`" for r in d["op_reproduced_by"]), ""]
    lines += [f"- {s}" for s in d["search"]["skipped"]] + ([""] if d["search"]["skipped"] else [])
    if d["variants"]:
        groups, same_as_base = _variant_groups(d["variants"])
        lines += [f"## Variants ({d['search']['variants']} searched; relative to `{d['engine']}`)", ""]
        rows = [[f"`{v['variant']}`", "error: " + v["error"] if v["error"] else f"{v['mismatches']:,}",
                 "–" if v["error"] else f"{v['tensors_matched']} / {v['tensors']}",
                 _fmt(v["first_op"]), _fmt(v["op_mismatches"]),
                 _fold_variants(same)]
                for v, same in groups]
        lines += _table(["variant", "mismatches (all dumps)", "tensors matched", "first diverging op",
                         "diverging op alone: mismatches", "identical on these inputs"], rows)
        if same_as_base:
            lines += ["Identical to the reference on these inputs: " + _fold_variants(same_as_base), ""]
    diverging = [r for r in d["layers"] if r["clue"]]
    if diverging:
        lines += ["## Diverging tensors", "", "Every distinct difference (device - dspsim) and how many values "
                  "differ by it; the clue: the pattern the differences follow (`dspsim.harness.clues`).", ""]
        lines += _table(["op", "tensor", "mismatches", "histogram (device - dspsim)", "clue"],
                        [[_fmt(r["op_index"]), f"{r['tensor']} `{r['name'][:40]}`",
                          f"{r['comparison']['mismatches']:,} / {r['comparison']['count']:,}",
                          clue_hist_text(r["clue"]["histogram"], 12), r["clue"]["clue"] or "–"] for r in diverging])
    lines += ["## Layers", ""]
    rows = []
    for r in d["layers"]:
        c = r["comparison"]
        rows.append([_fmt(r["op_index"]), r["op"], f"{r['tensor']} `{r['name'][:40]}`", "x".join(map(str, r["shape"])),
                     r["dtype"] + (f" (file {r['file_dtype']})" if r["file_dtype"] else ""),
                     r["file"] or "not dumped",
                     "–" if c is None else f"{c['mismatches']:,} / {c['count']:,}",
                     "–" if c is None or not c["mismatches"] else f"{c['max_abs_diff']} {c['unit']}",
                     r["locality"] or "–"])
    lines += _table(["op", "name", "tensor", "shape", "dtype", "dump", "mismatches", "max |diff|", "locality"], rows)
    return "\n".join(lines)


def _diagnose_plots(d: dict, out: Path) -> list:
    failing = [(f"op {r['op_index']} {r['op']} t{r['tensor']}", r["comparison"]["histogram"]) for r in d["layers"]
               if r["comparison"] and r["comparison"]["mismatches"]][:6]
    if not failing:
        return []
    _histogram_figure(failing, "device - dspsim (LSB), diverging layers", out / "mismatch_histograms.png")
    return ["mismatch_histograms.png"]


def write_diagnose_report(d: dict, out, plots: bool = True) -> Path:
    """Write ``summary.md``, ``results.json`` and (on divergence) the histograms of a diagnose run."""
    return _write_report(d, out, render_diagnose_md, _diagnose_plots if plots else None)


def plot_layer_mismatches(d: dict, path) -> None:
    """The plot of a ``dspsim validate`` result (:mod:`dspsim.harness.validate`): one row per operator, the
    output elements that differ (left, summed over the data set, log scale, each bar labelled with the count and
    the max |diff|) and the samples that differ (right). One PNG at ``path``, taller with more operators."""
    rows = d["layers"]
    ys = range(len(rows))
    fig, axes = _figure(1, 2, 1.6 + 0.26 * max(len(rows), 4), sharey=True, width_ratios=(3, 1.2))
    ax, ax2 = axes[0]
    bars = ax.barh(list(ys), [r["mismatches"] for r in rows], color="C3", height=0.7)
    ax.bar_label(bars, [f"{r['mismatches']:,} (max {r['max_abs_diff']})" if r["mismatches"] else "0" for r in rows],
                 padding=3)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(0, max([r["mismatches"] for r in rows] + [1]) * 60)  # room for the labels
    ax.set_xlabel("elements differing, all samples\n(max |diff| in LSB)")
    ax.set_yticks(list(ys), [f"{r['op_index']} {r['op']}"[:24] for r in rows])
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)
    sb = ax2.barh(list(ys), [r["samples_differing"] for r in rows], color="C0", height=0.7)
    ax2.bar_label(sb, padding=3)
    ax2.set_xlim(0, max(1, d["samples"]) * 1.35)
    ax2.set_xlabel(f"samples differing\n(of {d['samples']:,})")
    fig.suptitle(f"{Path(d['model']).name}: {d['engine']} against {d['against']}")
    _save(fig, path)


def write_json_file(d: dict, path) -> None:
    """Write ``d`` as ``results.json`` is written, to ``path`` atomically (:func:`safe_io.atomic_write_text`:
    an unpredictable temporary sibling renamed into place; an interrupted run leaves the old file, or none)."""
    atomic_write_text(path, _json_dump_text(d))


def json_text(d: dict) -> str:
    """``d`` as ``results.json`` text (inf/nan as strings)."""
    return json.dumps(_finite(d), indent=1, allow_nan=False)


# =============================================================================================
# bench
# =============================================================================================
def plot_bench(result: dict, path) -> None:
    """The plot of a ``dspsim bench`` result (:func:`dspsim.bench.run.run`): throughput bars per case,
    one colour per engine, log scale; kernels and int32 cores (GMAC/s) on the left, elementwise
    operations (Gelem/s) on the right. One PNG at ``path``."""
    plt = _pyplot()
    rows = [r for r in result["rows"] if r["throughput"]]
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    colours = {e: plt.get_cmap("tab10")(i % 10) for i, e in enumerate(engines)}
    panels = [("MAC", "GMAC/s"), ("elem", "Gelem/s")]
    n_bars = max(sum(1 for r in rows if r["unit"] == u) + 2 * len({r["case"] for r in rows if r["unit"] == u})
                 for u, _ in panels)
    fig, axes = plt.subplots(1, 2, figsize=(13, 1.5 + 0.14 * n_bars))
    for ax, (unit, label) in zip(axes, panels):
        y, ticks, names = 0.0, [], []
        for name in dict.fromkeys(r["case"] for r in rows if r["unit"] == unit):
            group = [r for r in rows if r["case"] == name]
            ticks.append(y + (len(group) - 1) / 2)
            names.append(name)
            for r in group:
                ax.barh(y, r["throughput"], color=colours[r["engine"]], height=0.9)
                y += 1
            y += 1.5
        ax.set_yticks(ticks)
        ax.set_yticklabels(names, fontsize=7)
        ax.set_ylim(y, -1)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[e]) for e in engines]
    fig.legend(handles, engines, loc="upper center", bbox_to_anchor=(0.5, 0.975), ncol=max(len(engines), 1),
               fontsize=8)
    fig.suptitle(f"dspsim bench {result.get('version', '')}, {result['threads']['numba']} threads, {result['run']}",
                 y=0.995, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=100)
    plt.close(fig)

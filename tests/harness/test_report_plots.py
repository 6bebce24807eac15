"""The report figures a person reads: README width at the intended dpi, no text under 10 pt, no text on other text,
legends outside the panels, and curves that lying on each other still show (each its own marker and line style)."""
import itertools

import numpy as np
import pytest

from dspsim.harness import report

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.image import imread  # noqa: E402
from matplotlib.text import Text  # noqa: E402

SCHEMES = ("double", "single", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack")


@pytest.fixture
def figures(monkeypatch):
    """Every figure the report writes, with the path it went to, captured after it is saved."""
    saved = []
    real = report._save

    def keep(fig, path, legend_rows=0):
        real(fig, path, legend_rows)
        saved.append((fig, path))

    monkeypatch.setattr(report, "_save", keep)
    return saved


def _drift_result(cycles=25, depth=16) -> dict:
    rng = np.random.default_rng(0)
    flat = [0.29] * cycles
    rows = []
    for label, T, mode in [("TF MIN_COMBINED/HAZ", "qint8", "MIN_COMBINED"), ("TF SCALED/HTE/narrow", "qint8", "SCALED"),
                           ("TF MIN_FIRST/HAZ", "qint32", "MIN_FIRST")]:
        for policy in ("fixed", "returned", "data", "fixed_dq_requested"):
            for start in ("x0 symmetric", "x0 > 0"):
                rms = list(np.geomspace(20, 2000, cycles)) if policy == "fixed_dq_requested" else flat
                rows.append({"family": "tf", "family_label": label, "T": T, "mode": mode, "policy": policy,
                             "start": start, "stats": {"rms_lsb": rms}})
    rows += [{"family": f, "family_label": f"{f} int8", "T": "int8", "mode": None, "policy": "fixed", "start": "",
              "stats": {"rms_lsb": flat}} for f in ("torch", "onnx", "pof2")]
    chains = [{"chain": chain, "scheme": s, "stats": {"rms_lsb": list(np.linspace(0.3, 1.2, depth)),
                                                       "mean_lsb": list(rng.normal(0, 0.02, depth))}}
              for chain in ("FC, calibrated scales", "FC+ReLU, calibrated scales") for s in SCHEMES]
    return {"cycles": rows, "depth": chains}


def _suite_result() -> dict:
    def fl(rms, bias):
        return {"rms_lsb": rms, "mean_lsb": bias}

    cases = []
    for name in ("fc-random", "conv-random", "fc-ties-pow2"):
        ties = "ties" in name
        cases.append({"name": name, "op": "fully_connected", "status": "pass", "params": {"scheme": "double"},
                      "float": fl(0.37 if ties else 0.19, 0.11 if ties else -0.004), "checks": [],
                      "schemes": [{"name": s, "baseline": "double", "float": fl(0.31, -0.005 * k),
                                   "histogram": {"-1": 7 + k, "1": 11, ">1": 1}}
                                  for k, s in enumerate(SCHEMES[1:])]})
    return {"cases": cases}


def _validate_result(n_ops=30) -> dict:
    layers = [{"op_index": k, "op": "DEPTHWISE_CONV_2D" if k % 2 else "CONV_2D", "mismatches": (k * 997) % 5000,
               "max_abs_diff": 1 + k % 3, "samples_differing": k % 41} for k in range(n_ops)]
    return {"layers": layers, "samples": 40, "model": "models/mobilenet.tflite", "engine": "litert",
            "against": "xnnpack"}


def _drawn_tick_labels(axis):
    """The tick labels ``axis`` draws: those of the major ticks inside the view."""
    locs = axis.get_majorticklocs()
    lo, hi = sorted(axis.get_view_interval())
    slack = 1e-9 * (hi - lo)
    return {t.label1 for t, loc in zip(axis.get_major_ticks(len(locs)), locs) if lo - slack <= loc <= hi + slack}


def _texts(fig):
    """The text drawn on ``fig``: visible and non-empty, of the tick labels only those drawn."""
    ticks, drawn = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            ticks |= {t.label1 for t in axis.get_major_ticks()} | {t.label2 for t in axis.get_major_ticks()}
            drawn |= _drawn_tick_labels(axis) if axis.get_visible() and ax.axison else set()
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and (t not in ticks or t in drawn)]


def _check_readable(fig, path):
    h, w = imread(path).shape[:2]
    assert (w, h) == (round(report.FIG_WIDTH * report.DPI), round(fig.get_figheight() * report.DPI)), path
    assert w <= 900
    canvas = FigureCanvasAgg(fig)  # pyplot detached the closed figure from its canvas
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = _texts(fig)
    small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < report.FONT_PT]
    assert not small, f"{path.name}: text under {report.FONT_PT} pt: {small[:5]}"
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
        assert not ba.overlaps(bb), f"{path.name}: {a!r} overlaps {b!r}"
    fig_box = fig.bbox
    for _, b in boxes:  # nothing cut at the edge
        assert b.x0 >= fig_box.x0 - 1 and b.x1 <= fig_box.x1 + 1 and b.y0 >= fig_box.y0 - 1 and b.y1 <= fig_box.y1 + 1
    for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        lb = leg.get_window_extent(renderer)
        assert not any(lb.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes if ax.get_visible()
                       and ax.axison), f"{path.name}: a legend lies on a panel"


def _check_curves_distinct(fig):
    for ax in fig.axes:
        styles = [(ln.get_marker(), ln.get_linestyle(), ln.get_color()) for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
        assert len(styles) == len(set(styles)), ax.get_title()


def test_drift_figures_are_readable_at_readme_width(figures, tmp_path):
    assert report._drift_plots(_drift_result(), tmp_path) == ["drift_cycles.png", "drift_depth.png"]
    assert len(figures) == 2
    for fig, path in figures:
        _check_readable(fig, path)
        _check_curves_distinct(fig)


def test_suite_figures_label_their_bars_and_are_readable(figures, tmp_path):
    assert report._suite_plots(_suite_result(), tmp_path) == ["error_vs_scheme.png", "scheme_differences.png"]
    for fig, path in figures:
        _check_readable(fig, path)
    bars = figures[0][0].axes[0]
    labels = [t.get_text() for t in bars.texts]
    assert {"0.19", "0.31", "-0.005"} <= set(labels)  # the RMS of double and of the others, a bias, on their bars


def test_validate_figure_has_a_readable_row_per_operator(figures, tmp_path):
    report.plot_layer_mismatches(_validate_result(), tmp_path / "layer_mismatches.png")
    ((fig, path),) = figures
    _check_readable(fig, path)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()][:2] == ["0 CONV_2D", "1 DEPTHWISE_CONV_2D"]


def test_float_error_figure_has_a_readable_row_per_layer(figures, tmp_path):
    from dspsim.harness import quant_error

    pc = {"sqnr_db": [30.0, 0.0, 41.5], "float_rms": [0.5, 0.0, 0.7]}
    layers = [{"op_index": k, "layer": "CONV_2D", "name": f"model/block_{k}/conv/Relu6;BiasAdd", "sqnr_db": 40.0 - k,
               "per_channel": pc if k % 2 else None} for k in range(30)]
    quant_error.plot({"layers": layers}, "m_int8.tflite (litert) against m_float.tflite, 100 samples",
                     tmp_path / "float_error.png")
    ((fig, path),) = figures
    _check_readable(fig, path)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][:1] == ["0 CONV_2D …ck_0/conv/Relu6;BiasAdd"]
    assert [t.get_text() for t in ax.texts][:2] == ["40.0 dB", "39.0 dB"]
    (ticks,) = ax.get_lines()
    assert len(ticks.get_xdata()) == 2 * 15  # the channel 0 in float left out

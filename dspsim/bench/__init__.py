"""``dspsim bench``: throughput of dspsim's kernels, quantizers and requantizers beside peer engines.

Each *case* is one operation (``fully_connected``, ``conv2d``, ``depthwise_conv2d``, ``relu``,
``quantize``, ``requantize``, and the exact int32 cores ``gemm_s32`` / ``conv2d_s32``), one *variant*
(the requantization scheme, quantization convention or SIMD path) and one *size*. For every case
dspsim runs first; then each installed peer that emulates the same arithmetic runs on the same
integers (PyTorch/FBGEMM, ONNX Runtime's QLinear ops and MatMulInteger, the naive numpy int64 route,
the LiteRT reference interpreter, LiteRT's default XNNPACK), and its output is diffed against
dspsim's, element for element.

Timing (:mod:`.timing`, the one path that ``benches/`` under pytest-benchmark uses too): one
warm-up call (numba compilation, prepacking, caches) is never timed; then the call is repeated and
the *minimum* wall time is reported (the least disturbed run on a shared machine), with the median
beside it. Throughput is GMAC/s for kernels (multiply-accumulates of the layer, padding taps
excluded) and Gelem/s for elementwise operations. Every engine runs with the same thread count
(numba, torch, ONNX Runtime ``intra_op_num_threads``, LiteRT ``num_threads``); ``--threads 1,2`` runs every
case at each count and reports each engine's speed-up (:func:`dspsim.bench.summary.scaling`).

Modules: :mod:`.workloads` (cases, sizes, problems, dspsim's calls), :mod:`.peers` (the peer
engines, imported lazily: a missing one gives a skipped row), :mod:`.litert` (the LiteRT model
builder; LiteRT runs in-process when ai_edge_litert is importable, else in a worker process under
the interpreter named by ``DSPSIM_LITERT_PYTHON``, timed there), :mod:`.run` (rows, the run, the
command line), :mod:`.host` (the report's header: CPU, SIMD features, dspsim's paths, the peers and their
VNNI use), :mod:`.cost_model`, :mod:`.summary` (targets, issue 29's target table, thread scaling, table),
:mod:`.models` (whole-model rows: per-inference time of a .tflite model beside the TFLM interpreter,
LiteRT BUILTIN_REF and LiteRT default, each row checked bit-exact; the interpreters in
:mod:`.model_peers`), :mod:`.frontend` (the audio front end per frame beside pymicro-features, at batch 1
and over many streams, and CMSIS-DSP kernels beside cmsisdsp, run by :mod:`.cmsisdsp_peer`). The plot is
:func:`dspsim.harness.report.plot_bench`.

Sizes: ``quick`` (tiny shapes, for CI), ``small``, ``medium``, ``large`` (see :data:`SHAPES`).
"""
from . import peers
from .run import Row, main, parse_counts, run, run_case, run_engine
from .models import MODEL_SIZES, ModelCase, model_cases, run_models
from .summary import MODEL_TARGETS, TARGETS, format_table, issue_targets, model_targets, scaling, targets
from .timing import Timing, error_status, measure, set_threads
from .workloads import (
    CORE_OPS,
    KERNEL_OPS,
    OPS,
    SHAPES,
    SIZES,
    Case,
    Runner,
    cases,
    dspsim_runner,
    env_sizes,
    kernel_kwargs,
    problem,
)

__all__ = ["CORE_OPS", "KERNEL_OPS", "MODEL_SIZES", "MODEL_TARGETS", "OPS", "SHAPES", "SIZES", "TARGETS", "Case",
           "ModelCase", "Row", "Runner", "Timing", "cases", "dspsim_runner", "env_sizes", "error_status",
           "format_table", "issue_targets", "kernel_kwargs", "main", "measure", "model_cases", "model_targets",
           "parse_counts", "peers", "problem", "run", "run_case", "run_engine", "run_models", "scaling", "set_threads",
           "targets"]

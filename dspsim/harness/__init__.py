"""The harness: suites of bit-exactness cases, comparisons, drift studies, vectors and reports.

- :mod:`.suite`: cases (built-in :func:`default_suite`, or TOML), :func:`run_suite`
- :mod:`.ops`: the case vocabulary (what each op generates, checks and measures)
- :mod:`.compare`: :func:`compare` (bit-exact diff) and :func:`float_error`
- :mod:`.drift`: error growth over quantize/dequantize cycles and requantization chains
- :mod:`.vectors`: ``.npz`` / ``.npy`` in, ``.npz`` and C headers out
- :mod:`.report`: Markdown, JSON and PNG reports (the only matplotlib user)
"""
from .compare import Comparison, FloatError, compare, float_error
from .default_suite import default_suite
from .suite import Case, CaseResult, SuiteError, SuiteResult, load_suite, run_case, run_suite
from .vectors import VectorError, c_header, load_vectors, save_npz

__all__ = [
    "Case", "CaseResult", "Comparison", "FloatError", "SuiteError", "SuiteResult", "VectorError", "c_header",
    "compare", "default_suite", "float_error", "load_suite", "load_vectors", "run_case", "run_suite", "save_npz",
]

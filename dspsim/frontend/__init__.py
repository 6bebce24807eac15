"""TFLite Micro's audio microfrontend, bit-exact (docs/frontend.md): the front end of micro_speech and
microWakeWord, from int16 PCM to uint16 log-mel features.

One module per stage (window, fft, filterbank, noise_reduction, pcan, log_scale), each a numba kernel behind a
validating wrapper; :mod:`.tables` derives every table from a :class:`FrontendConfig` as the C init does;
:mod:`.microfrontend` runs them frame by frame (:mod:`.frame`; over many streams at once :mod:`.lanes`, the
streams as SIMD lanes); :mod:`.wakeword` feeds the features to a streaming model as
pymicro-wakeword does. The plain-Python oracle is :mod:`dspsim.oracle.frontend`.
"""
from .config import FrontendConfig  # noqa: F401
from .fft import fft_compute, rfft  # noqa: F401
from .filterbank import filterbank_accumulate, filterbank_energy, filterbank_sqrt  # noqa: F401
from .log_scale import log_scale  # noqa: F401
from .microfrontend import FEATURE_SCALE, MicroFrontend, features_as_float, microfrontend  # noqa: F401
from .noise_reduction import noise_reduction  # noqa: F401
from .pcan import pcan_gain_control, wide_dynamic_function  # noqa: F401
from .tables import FrontendTables, fft_tables, filterbank_tables, frontend_tables  # noqa: F401
from .wakeword import quantize_features, run_wake_word  # noqa: F401
from .window import apply_window  # noqa: F401

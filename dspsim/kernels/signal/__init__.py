"""TensorFlow Lite Micro's Signal library (``signal/src``), the audio front end's stages as custom operators:
one module per group of stages, each a numba kernel behind a validating wrapper named after the operator; the
kissfft real FFT and the integer helpers here are shared with :mod:`dspsim.frontend` (the microfrontend).
docs/frontend.md states the arithmetic."""
from .filter_bank import (  # noqa: F401
    signal_filter_bank, signal_filter_bank_log, signal_filter_bank_spectral_subtraction,
    signal_filter_bank_square_root,
)
from .pcan import signal_pcan  # noqa: F401
from .spectral import (  # noqa: F401
    signal_energy, signal_fft_auto_scale, signal_irfft, signal_rfft, signal_window,
)
from .streaming import signal_delay, signal_framer, signal_overlap_add, signal_stacker  # noqa: F401

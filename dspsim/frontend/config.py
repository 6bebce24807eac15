"""The microfrontend's options (TFLite Micro's ``FrontendConfig``) as one frozen value.

The defaults are the configuration pymicro-features 2.0.2 gives the C library and microWakeWord trains with
(``init_cfg`` of its extension): 30 ms windows every 10 ms at 16 kHz, 40 mel channels from 125 to 7500 Hz,
noise reduction (smoothing 10 bits, 0.025 / 0.06, floor 0.05), PCAN gain control (strength 0.95, offset 80,
21 gain bits) and the log scale (scale shift 6). TFLite Micro's own ``FrontendFillConfigWithDefaults`` differs
(25 ms windows, 32 channels, PCAN off); :meth:`FrontendConfig.tflm_defaults` gives that one.

The float options are C ``float``s: every derived integer is computed from their float32 values, as the C
``*PopulateState`` functions do (docs/frontend.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

FRONTEND_WINDOW_BITS = 12      # kFrontendWindowBits: window coefficients in Q12
FILTERBANK_BITS = 12           # kFilterbankBits: filterbank weights in Q12
NOISE_REDUCTION_BITS = 14      # kNoiseReductionBits
PCAN_SNR_BITS = 12             # kPcanSnrBits
PCAN_OUTPUT_BITS = 6           # kPcanOutputBits
WIDE_DYNAMIC_FUNCTION_BITS = 32
WIDE_DYNAMIC_FUNCTION_LUT_SIZE = 4 * WIDE_DYNAMIC_FUNCTION_BITS - 3
LOG_SEGMENTS_LOG2 = 7          # kLogSegmentsLog2: 128 segments
LOG_SCALE_LOG2 = 16            # kLogScaleLog2
LOG_COEFF = 45426              # kLogCoeff: round(2^16 * ln 2)


@dataclass(frozen=True)
class FrontendConfig:
    """Every option of TFLite Micro's audio microfrontend (``FrontendConfig``), plus the sample rate."""

    sample_rate: int = 16000
    window_size_ms: int = 30            # WindowConfig.size_ms
    window_step_ms: int = 10            # WindowConfig.step_size_ms
    num_channels: int = 40              # FilterbankConfig.num_channels
    lower_band_limit: float = 125.0     # FilterbankConfig.lower_band_limit (Hz)
    upper_band_limit: float = 7500.0    # FilterbankConfig.upper_band_limit (Hz)
    smoothing_bits: int = 10            # NoiseReductionConfig.smoothing_bits
    even_smoothing: float = 0.025       # NoiseReductionConfig.even_smoothing
    odd_smoothing: float = 0.06         # NoiseReductionConfig.odd_smoothing
    min_signal_remaining: float = 0.05  # NoiseReductionConfig.min_signal_remaining
    enable_pcan: bool = True            # PcanGainControlConfig.enable_pcan
    pcan_strength: float = 0.95         # PcanGainControlConfig.strength
    pcan_offset: float = 80.0           # PcanGainControlConfig.offset
    gain_bits: int = 21                 # PcanGainControlConfig.gain_bits
    enable_log: bool = True             # LogScaleConfig.enable_log
    scale_shift: int = 6                # LogScaleConfig.scale_shift

    def __post_init__(self):
        check_config(self, "FrontendConfig")

    @classmethod
    def tflm_defaults(cls, sample_rate: int = 16000) -> "FrontendConfig":
        """TFLite Micro's ``FrontendFillConfigWithDefaults``: 25 ms windows, 32 channels, PCAN off."""
        return cls(sample_rate=sample_rate, window_size_ms=25, num_channels=32, enable_pcan=False)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def window_size(self) -> int:
        """Samples per window (``size_ms * sample_rate / 1000``, C integer division)."""
        return self.window_size_ms * self.sample_rate // 1000

    @property
    def window_step(self) -> int:
        return self.window_step_ms * self.sample_rate // 1000

    @property
    def fft_size(self) -> int:
        """The smallest power of two >= the window (``FftPopulateState``)."""
        n = 1
        while n < self.window_size:
            n <<= 1
        return n


_INTS = ("sample_rate", "window_size_ms", "window_step_ms", "num_channels", "smoothing_bits", "gain_bits",
         "scale_shift")
_FLOATS = ("lower_band_limit", "upper_band_limit", "even_smoothing", "odd_smoothing", "min_signal_remaining",
           "pcan_strength", "pcan_offset")


def check_config(cfg, func: str) -> None:
    """Refuse a configuration the C code's init would refuse, or on which its integer arithmetic is undefined."""
    for name in _INTS:
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{func}: {name} must be an int, got {v!r}"[:200])
    for name in _FLOATS:
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{func}: {name} must be a finite number, got {v!r}"[:200])
    for name in ("enable_pcan", "enable_log"):
        if not isinstance(getattr(cfg, name), bool):
            raise TypeError(f"{func}: {name} must be a bool, got {getattr(cfg, name)!r}"[:200])
    if not 1000 <= cfg.sample_rate <= 192000:
        raise ValueError(f"{func}: sample_rate must be 1000..192000 Hz, got {cfg.sample_rate}")
    if cfg.window_size_ms < 1 or cfg.window_step_ms < 1:
        raise ValueError(f"{func}: window_size_ms and window_step_ms must be >= 1 ms")
    if cfg.window_step > cfg.window_size:
        raise ValueError(f"{func}: the window step ({cfg.window_step} samples) must not exceed the window "
                         f"({cfg.window_size} samples)")
    if cfg.window_size < 4 or cfg.fft_size > 32768:
        raise ValueError(f"{func}: the window must be 4..32768 samples, got {cfg.window_size}")
    if not 1 <= cfg.num_channels <= 256:
        raise ValueError(f"{func}: num_channels must be 1..256, got {cfg.num_channels}")
    if not 0.0 <= cfg.lower_band_limit < cfg.upper_band_limit:
        raise ValueError(f"{func}: the band limits need 0 <= lower_band_limit < upper_band_limit "
                         f"(CalculateCenterFrequencies' asserts)")
    if cfg.upper_band_limit > cfg.sample_rate / 2:
        raise ValueError(f"{func}: upper_band_limit {cfg.upper_band_limit} Hz is above the Nyquist frequency "
                         f"of sample_rate {cfg.sample_rate} Hz")
    if not 0 <= cfg.smoothing_bits <= 16:
        raise ValueError(f"{func}: smoothing_bits must be 0..16, got {cfg.smoothing_bits}")
    for name in ("even_smoothing", "odd_smoothing", "min_signal_remaining"):
        if not 0.0 <= getattr(cfg, name) <= 1.0:
            raise ValueError(f"{func}: {name} must be in [0, 1], got {getattr(cfg, name)}")
    if cfg.enable_pcan:
        if not 0 < cfg.gain_bits <= 31:
            raise ValueError(f"{func}: gain_bits must be 1..31, got {cfg.gain_bits}")
        if cfg.pcan_offset <= 0 or cfg.pcan_strength < 0:
            raise ValueError(f"{func}: PCAN needs pcan_offset > 0 and pcan_strength >= 0")
    if not 0 <= cfg.scale_shift <= 16:
        raise ValueError(f"{func}: scale_shift must be 0..16, got {cfg.scale_shift}")

"""The microfrontend again, slowly, in plain Python integers (TFLite Micro's ``microfrontend/lib``, kissfft v130
FIXED_POINT=16): every stage and every table, from the C sources' definitions.

Integer steps use Python's unbounded ints with the C type's wrap written out (``_s16``, ``_s32``, ``% 2**64``);
C's ``>>`` of a negative int is Python's (arithmetic, floor). Float32 steps of the tables are Python floats
rounded to float32 after each operation (``_f``; one IEEE float32 rounding, since a double holds the exact
result of a float32 +, -, * and / rounds correctly once more). ``log1pf`` is fdlibm's algorithm (what glibc 2.36
runs); ``cosf`` / ``powf`` are the float32 nearest to the double result.
"""
from __future__ import annotations

import math
import struct

_U32, _U64 = 2 ** 32, 2 ** 64


def _s16(v: int) -> int:
    return (v + 2 ** 15) % 2 ** 16 - 2 ** 15


def _s32(v: int) -> int:
    return (v + 2 ** 31) % _U32 - 2 ** 31


def _f(x: float) -> float:
    """``x`` rounded to float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _fbits(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", x))[0]


def _ffrom(b: int) -> float:
    return struct.unpack("<f", struct.pack("<i", b))[0]


# --- tables -------------------------------------------------------------------------------------------------

def window_coefficients(size: int) -> list:
    arg = _f(_f(_f(math.pi) * 2.0) / size)
    out = []
    for i in range(size):
        c = _f(math.cos(_f(arg * _f(i + 0.5))))
        v = _f(0.5 - _f(0.5 * c))
        out.append(math.floor(_f(_f(v * 4096.0) + 0.5)))
    return out


def log1pf(x: float) -> float:
    """fdlibm's float ``log1pf`` for finite x > -1, each operation rounded to float32."""
    x = _f(x)
    hx = _fbits(x)
    ax = hx & 0x7FFFFFFF
    k, c, hu, f = 1, 0.0, 0, 0.0
    if hx < 0x3ED413D7:
        if ax < 0x31000000:
            return x if ax < 0x24800000 else _f(x - _f(_f(x * x) * 0.5))
        if hx > 0 or hx <= _s32(0xBE95F61F):
            k, f, hu = 0, x, 1
    if k:
        if hx < 0x5A000000:
            u = _f(1.0 + x)
            hu = _fbits(u)
            k = (hu >> 23) - 127
            c = _f(1.0 - _f(u - x)) if k > 0 else _f(x - _f(u - 1.0))
            c = _f(c / u)
        else:
            u, hu, c = x, _fbits(x), 0.0
            k = (hu >> 23) - 127
        hu &= 0x007FFFFF
        if hu < 0x3504F7:
            u = _ffrom(hu | 0x3F800000)
        else:
            k += 1
            u = _ffrom(hu | 0x3F000000)
            hu = (0x00800000 - hu) >> 2
        f = _f(u - 1.0)
    hfsq = _f(_f(0.5 * f) * f)
    ln2_hi, ln2_lo = _ffrom(0x3F317180), _ffrom(0x3717F7D1)
    if hu == 0:
        if f == 0:
            return 0.0 if k == 0 else _f(_f(k * ln2_hi) + _f(c + _f(k * ln2_lo)))
        r = _f(hfsq * _f(1.0 - _f(_f(0.66666666666666666) * f)))
        return _f(f - r) if k == 0 else _f(_f(k * ln2_hi) - _f(_f(r - _f(_f(k * ln2_lo) + c)) - f))
    s = _f(f / _f(2.0 + f))
    z = _f(s * s)
    lp = [_ffrom(b) for b in (0x3F2AAAAB, 0x3ECCCCCD, 0x3E924925, 0x3E638E29, 0x3E3A3325, 0x3E1CD04F, 0x3E178897)]
    r = lp[6]
    for coef in reversed(lp[:6]):
        r = _f(coef + _f(z * r))
    r = _f(z * r)
    if k == 0:
        return _f(f - _f(hfsq - _f(s * _f(hfsq + r))))
    return _f(_f(k * ln2_hi) - _f(_f(hfsq - _f(_f(s * _f(hfsq + r)) + _f(_f(k * ln2_lo) + c))) - f))


def _mel(freq: float) -> float:
    return _f(1127.0 * log1pf(_f(freq / 700.0)))


def filterbank_tables(sample_rate: int, fft_size: int, num_channels: int, lower: float, upper: float) -> dict:
    """``FilterbankPopulateState``: a dict of start_index, end_index, freq_starts, weight_starts, widths, weights,
    unweights (lists of ints)."""
    n1 = num_channels + 1
    spectrum_size = fft_size // 2 + 1
    lower, upper = _f(lower), _f(upper)
    mel_low, mel_hi = _mel(lower), _mel(upper)
    spacing = _f(_f(mel_hi - mel_low) / n1)
    center = [_f(mel_low + _f(spacing * (i + 1))) for i in range(n1)]
    hz = _f(_f(0.5 * sample_rate) / _f(spectrum_size - 1.0))
    start_index = int(_f(1.5 + _f(lower / hz)))
    fs, ws, wd, act_s, act_w = [0] * n1, [0] * n1, [0] * n1, [0] * n1, [0] * n1
    chan_start, wi, needs_zeros = start_index, 0, False
    for ch in range(n1):
        fr = chan_start
        while _mel(_f(fr * hz)) <= center[ch]:
            fr += 1
        width = fr - chan_start
        act_s[ch], act_w[ch] = chan_start, width
        if width == 0:
            fs[ch], ws[ch], wd[ch] = 0, 0, 4
            if not needs_zeros:
                needs_zeros = True
                for j in range(ch):
                    ws[j] += 4
                wi += 4
        else:
            aligned = chan_start // 2 * 2
            padded = ((chan_start - aligned + width - 1) // 4 + 1) * 4
            fs[ch], ws[ch], wd[ch] = aligned, wi, padded
            wi += padded
        chan_start = fr
    weights, unweights, end_index = [0] * wi, [0] * wi, 0
    for ch in range(n1):
        frequency = act_s[ch]
        denom = mel_low if ch == 0 else center[ch - 1]
        for j in range(act_w[ch]):
            w = _f(_f(center[ch] - _mel(_f(frequency * hz))) / _f(center[ch] - denom))
            k = ws[ch] + act_s[ch] - fs[ch] + j
            weights[k] = math.floor(_f(_f(w * 4096.0) + 0.5))
            unweights[k] = math.floor(_f(_f(_f(1.0 - w) * 4096.0) + 0.5))
            frequency += 1
        end_index = max(end_index, frequency)
    return {"start_index": start_index, "end_index": end_index, "freq_starts": fs, "weight_starts": ws,
            "widths": wd, "weights": weights, "unweights": unweights}


def pcan_lut(strength: float, offset: float, gain_bits: int, input_bits: int) -> list:
    """``PcanGainControlPopulateState``'s 125-entry gain table (the unused fourth slots are 0)."""
    def gain(x):
        xf = _f(_f(float(x)) / float(1 << input_bits))
        g = _f(float(1 << gain_bits) * _f(math.pow(_f(xf + _f(offset)), -_f(strength))))
        return 32767 if g > 32767 else int(_f(g + 0.5))

    lut = [0] * 125
    lut[0], lut[1] = gain(0), gain(1)
    for interval in range(2, 33):
        x0 = 1 << (interval - 1)
        x1, x2 = x0 + (x0 >> 1), (x0 + x0 - 1) if interval == 32 else 2 * x0
        y0, y1, y2 = gain(x0), gain(x1), gain(x2)
        a1 = 4 * (y1 - y0) - (y2 - y0)
        k = 4 * interval - 6
        lut[k], lut[k + 1], lut[k + 2] = y0, _s16(a1), _s16(y2 - y0 - a1)
    return lut


def log_lut() -> list:
    return [math.floor((math.log2(1 + i / 128) - i / 128) * 65536 + 0.5) for i in range(128)] + [0, 0]


def twiddles(ncfft: int, inverse: bool = False, bits: int = 16) -> list:
    """kissfft's twiddles, ``floor(.5 + SAMP_MAX cos / sin(phase))``, SAMP_MAX = 2^(bits - 1) - 1."""
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    sign, top = (1 if inverse else -1), 2 ** (bits - 1) - 1
    return [(math.floor(.5 + top * math.cos(sign * 2 * pi * i / ncfft)),
             math.floor(.5 + top * math.sin(sign * 2 * pi * i / ncfft))) for i in range(ncfft)]


def super_twiddles(ncfft: int, inverse: bool = False, bits: int = 16) -> list:
    out, top = [], 2 ** (bits - 1) - 1
    for i in range(ncfft // 2):
        phase = (1 if inverse else -1) * 3.14159265358979323846264338327 * ((i + 1) / ncfft + .5)
        out.append((math.floor(.5 + top * math.cos(phase)), math.floor(.5 + top * math.sin(phase))))
    return out


# --- stages ---------------------------------------------------------------------------------------------------

def window(frame, coefficients) -> tuple:
    """(output, max_abs_output_value) of ``WindowProcessSamples``."""
    out, mx = [], 0
    for x, c in zip(frame, coefficients):
        v = _s16((int(x) * int(c)) >> 12)
        out.append(v)
        a = _s16(-v) if v < 0 else v
        mx = max(mx, a)
    return out, mx


def _wrap(v: int, bits: int) -> int:
    return (v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)


def _sround(x, bits=16):
    return _wrap((x + 2 ** (bits - 2)) >> (bits - 1), bits)


def _cmul(a, b, bits=16):
    return _sround(a[0] * b[0] - a[1] * b[1], bits), _sround(a[0] * b[1] + a[1] * b[0], bits)


def _fixdiv(c, k, bits=16):
    top = 2 ** (bits - 1) - 1
    return _sround(c[0] * (top // k), bits), _sround(c[1] * (top // k), bits)


def _factors(n):
    out, p, fs = [], 4, math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > fs:
                p = n
        n //= p
        out.append((p, n))
        if n <= 1:
            return out


def kiss_fft(x: list, inverse: bool = False, bits: int = 16) -> list:
    """kissfft's complex FFT (``kf_work``, recursive as written) of a list of (re, im) pairs of ``bits``-wide
    scalars (FIXED_POINT 16 or 32); ``inverse``: the inverse tables and ``kf_bfly4``'s other quarter-turn."""
    def _sb(v):
        return _wrap(v, bits)

    n = len(x)
    tw = twiddles(n, inverse, bits)
    factors = _factors(n)
    out = [None] * n

    def work(o, i0, fstride, level):
        p, m = factors[level]
        if m == 1:
            for j in range(p):
                out[o + j] = x[i0 + j * fstride]
        else:
            for j in range(p):
                work(o + j * m, i0 + j * fstride, fstride * p, level + 1)
        if p == 2:
            for k in range(m):
                a, b = _fixdiv(out[o + k], 2, bits), _fixdiv(out[o + k + m], 2, bits)
                t = _cmul(b, tw[k * fstride], bits)
                out[o + k + m] = (_sb(a[0] - t[0]), _sb(a[1] - t[1]))
                out[o + k] = (_sb(a[0] + t[0]), _sb(a[1] + t[1]))
        elif p == 4:
            for k in range(m):
                f = [_fixdiv(out[o + k + q * m], 4, bits) for q in range(4)]
                s0, s1, s2 = (_cmul(f[q], tw[q * k * fstride], bits) for q in (1, 2, 3))
                s5 = (_sb(f[0][0] - s1[0]), _sb(f[0][1] - s1[1]))
                f0 = (_sb(f[0][0] + s1[0]), _sb(f[0][1] + s1[1]))
                s3 = (_sb(s0[0] + s2[0]), _sb(s0[1] + s2[1]))
                s4 = (_sb(s0[0] - s2[0]), _sb(s0[1] - s2[1]))
                out[o + k + 2 * m] = (_sb(f0[0] - s3[0]), _sb(f0[1] - s3[1]))
                out[o + k] = (_sb(f0[0] + s3[0]), _sb(f0[1] + s3[1]))
                q = -1 if inverse else 1
                out[o + k + m] = (_sb(s5[0] + q * s4[1]), _sb(s5[1] - q * s4[0]))
                out[o + k + 3 * m] = (_sb(s5[0] - q * s4[1]), _sb(s5[1] + q * s4[0]))
        else:  # pragma: no cover - a power of two has only radix 4 and 2
            raise NotImplementedError(p)

    work(0, 0, 1, 0)
    return out


def rfft(x: list, bits: int = 16) -> list:
    """``kiss_fftr`` of the real list ``x`` (power-of-two length, ``bits``-wide scalars): nfft/2 + 1 (re, im)
    pairs. ``HALF_OF`` shifts the C int sum, which wraps at 32 bits first."""
    def _sb(v):
        return _wrap(v, bits)

    ncfft = len(x) // 2
    tmp = kiss_fft([(int(x[2 * k]), int(x[2 * k + 1])) for k in range(ncfft)], bits=bits)
    sup = super_twiddles(ncfft, bits=bits)
    out = [None] * (ncfft + 1)
    dc = _fixdiv(tmp[0], 2, bits)
    out[0], out[ncfft] = (_sb(dc[0] + dc[1]), 0), (_sb(dc[0] - dc[1]), 0)
    for k in range(1, ncfft // 2 + 1):
        fpk = _fixdiv(tmp[k], 2, bits)
        fpnk = _fixdiv((tmp[ncfft - k][0], _sb(-tmp[ncfft - k][1])), 2, bits)
        f1 = (_sb(fpk[0] + fpnk[0]), _sb(fpk[1] + fpnk[1]))
        f2 = (_sb(fpk[0] - fpnk[0]), _sb(fpk[1] - fpnk[1]))
        t = _cmul(f2, sup[k - 1], bits)
        out[k] = (_sb(_s32(f1[0] + t[0]) >> 1), _sb(_s32(f1[1] + t[1]) >> 1))
        out[ncfft - k] = (_sb(_s32(f1[0] - t[0]) >> 1), _sb(_s32(t[1] - f1[1]) >> 1))
    return out


def fft_input(windowed, input_shift: int, nfft: int) -> list:
    return [_s16((int(w) % 2 ** 16) << input_shift) for w in windowed] + [0] * (nfft - len(windowed))


def energy(spectrum, start: int, end: int) -> list:
    return [_s32(re * re + im * im) if start <= i < end else 0 for i, (re, im) in enumerate(spectrum)]


def accumulate(energy_, fb: dict) -> list:
    work, acc, unacc = [], 0, 0
    for c in range(len(fb["widths"])):
        for j in range(fb["widths"][c]):
            mag = int(energy_[fb["freq_starts"][c] + j]) % _U64
            acc = (acc + (fb["weights"][fb["weight_starts"][c] + j] % _U64) * mag) % _U64
            unacc = (unacc + (fb["unweights"][fb["weight_starts"][c] + j] % _U64) * mag) % _U64
        work.append(acc)
        acc, unacc = unacc, 0
    return work


def sqrt_bitwise(num: int, bits: int) -> int:
    """``Sqrt32`` (bits 32) / ``Sqrt64`` (bits 64): the bitwise root, +1 where the remainder exceeds it, unless the
    root is all ones in half the bits."""
    if num == 0:
        return 0
    max_bit = (bits - num.bit_length()) | 1
    bit = 1 << (bits - 1 - max_bit)
    res = 0
    for _ in range((bits - 1 - max_bit) // 2 + 1):
        if num >= res + bit:
            num -= res + bit
            res = (res >> 1) + bit
        else:
            res >>= 1
        bit >>= 2
    if num > res and res != (1 << (bits // 2)) - 1:
        res += 1
    return res


def filterbank_sqrt(work, shift: int) -> list:
    return [sqrt_bitwise(int(w), 32 if int(w) < _U32 else 64) >> shift for w in work[1:]]


def noise_reduction(signal, estimate, smoothing_bits, even, odd, min_signal_remaining) -> tuple:
    """(output, new estimate)."""
    out, new = [], []
    for i, (s, e) in enumerate(zip(signal, estimate)):
        sm = even if i % 2 == 0 else odd
        scaled = (int(s) << smoothing_bits) % _U32
        est = ((scaled * sm + int(e) * (16384 - sm)) >> 14) % _U32
        new.append(est)
        floor = ((int(s) * min_signal_remaining) >> 14) % _U32
        sub = (scaled - min(est, scaled)) >> smoothing_bits
        out.append(max(sub, floor))
    return out, new


def wide_dynamic_function(x: int, lut) -> int:
    if x <= 2:
        return lut[x]
    interval = x.bit_length()
    base = 4 * interval - 6
    frac = ((x << (11 - interval)) if interval < 11 else (x >> (interval - 11))) & 0x3FF
    r = (lut[base + 2] * frac) >> 5
    r = _s32(r + _s32((lut[base + 1] % _U32) << 5))
    r = _s32(r * frac)
    r = _s32(r + (1 << 14)) >> 15
    return _s16(r + lut[base])


def pcan(signal, noise_estimate, lut, snr_shift: int) -> list:
    out = []
    for s, n in zip(signal, noise_estimate):
        gain = wide_dynamic_function(int(n), lut) % _U32
        snr = ((int(s) * gain) % _U64 >> snr_shift) % _U32
        out.append((snr * snr) >> 20 if snr < 8192 else (snr >> 6) - 64)
    return out


def log_value(x: int, scale_shift: int, lut) -> int:
    """``Log(x, scale_shift)`` for x >= 2."""
    integer = x.bit_length() - 1
    frac = x - (1 << integer)
    frac = frac << (16 - integer) if integer < 16 else frac >> (integer - 16)
    seg = frac >> 9
    c0, c1 = lut[seg], lut[seg + 1]
    fraction = (frac + c0 + (((c1 - c0) * (frac - 512 * seg)) >> 16)) % _U32
    log2 = ((integer << 16) + fraction) % _U32
    loge = ((45426 * log2 + 32768) >> 16) % _U32
    return (((loge << scale_shift) % _U32 + 32768) % _U32) >> 16


def log_scale(signal, correction_bits: int, scale_shift: int, enable_log: bool, lut) -> list:
    out = []
    for v in signal:
        v = int(v)
        if enable_log:
            v = v >> -correction_bits if correction_bits < 0 else (v << correction_bits) % _U32
            v = log_value(v, scale_shift, lut) if v > 1 else 0
        out.append(min(v, 0xFFFF))
    return out


# --- the frontend ------------------------------------------------------------------------------------------------

class Frontend:
    """The whole frontend for 16-bit PCM, with pymicro-features' configuration by default."""

    def __init__(self, sample_rate=16000, window_ms=30, step_ms=10, num_channels=40, lower=125.0, upper=7500.0,
                 smoothing_bits=10, even=0.025, odd=0.06, min_signal=0.05, enable_pcan=True, strength=0.95,
                 offset=80.0, gain_bits=21, enable_log=True, scale_shift=6):
        self.size, self.step = window_ms * sample_rate // 1000, step_ms * sample_rate // 1000
        self.nfft = 1 << (self.size - 1).bit_length()
        self.window = window_coefficients(self.size)
        self.fb = filterbank_tables(sample_rate, self.nfft, num_channels, lower, upper)
        self.smoothing_bits = smoothing_bits
        self.nr = tuple(int(_f(_f(v) * 16384.0)) for v in (even, odd, min_signal))
        self.correction = self.nfft.bit_length() - 1 - 6
        self.enable_pcan, self.enable_log, self.scale_shift = enable_pcan, enable_log, scale_shift
        if enable_pcan:
            self.lut = pcan_lut(strength, offset, gain_bits, smoothing_bits - self.correction)
            self.snr_shift = gain_bits - self.correction - 12
        self.log_lut = log_lut()
        self.estimate = [0] * num_channels

    def frame(self, samples) -> list:
        """The features of one window of ``size`` samples (the noise estimate advances)."""
        windowed, mx = window(samples, self.window)
        shift = 15 - mx.bit_length()
        spec = rfft(fft_input(windowed, shift, self.nfft))
        sig = filterbank_sqrt(accumulate(energy(spec, self.fb["start_index"], self.fb["end_index"]), self.fb),
                              shift)
        sig, self.estimate = noise_reduction(sig, self.estimate, self.smoothing_bits, *self.nr)
        if self.enable_pcan:
            sig = pcan(sig, self.estimate, self.lut, self.snr_shift)
        return log_scale(sig, self.correction, self.scale_shift, self.enable_log, self.log_lut)

    def run(self, pcm) -> list:
        """Every complete window of ``pcm``, ``step`` apart."""
        pcm = [int(v) for v in pcm]
        return [self.frame(pcm[k:k + self.size]) for k in range(0, len(pcm) - self.size + 1, self.step)]

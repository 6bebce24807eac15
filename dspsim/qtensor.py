"""``QTensor``: integer codes together with the parameters that give them a real value.

The kernels take plain integer arrays; a :class:`QTensor` is the convenience layer around them. It
holds the codes (``int_repr()``) and either

* affine parameters: ``scale``, ``zero_point`` (scalars, or 1-D arrays along ``axis`` per
  channel) and the ``engine`` whose float <-> int arithmetic it follows ("torch", "onnx" or
  "tflite": see :mod:`dspsim.quantize`), or
* TensorFlow ``QuantizeV2`` parameters: ``min_range``/``max_range`` (the range TF *returned*, which
  is what ``Dequantize`` must be fed), ``mode`` and ``narrow_range``.

It prints like a PyTorch quantized tensor::

    >>> QTensor.quantize(np.array([-1.0, 0.0, 0.5], np.float32), 0.5, 2, "quint8")
    tensor([-1.0000,  0.0000,  0.5000], size=(3,), dtype=torch.quint8,
           quantization_scheme=torch.per_tensor_affine, scale=0.5, zero_point=2)

Indexing keeps the parameters; indexing a per-channel tensor along its axis slices the scales
and zero points with it (an integer index there leaves a per-tensor QTensor of that channel).
"""
from __future__ import annotations

import numpy as np

from ._io import load_npz
from .dtypes import int_type
from .fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from .qparams import QParams
from .quantize import (_scales, dequantize, dequantize_linear, dequantize_per_channel, dequantize_per_tensor,
                       quantize, quantize_linear, quantize_per_channel, quantize_per_tensor, tflite_dequantize,
                       tflite_quantize)

ENGINES = ("torch", "onnx", "tflite")
_TORCH_NAMES = {"uint8": "quint8", "int8": "qint8", "int32": "qint32",
                "quint8": "quint8", "qint8": "qint8", "qint32": "qint32"}


def _affine_quantize(x, scale, zero_point, dtype, axis, engine):
    per_channel = np.ndim(scale) == 1 and np.size(scale) > 1
    if per_channel:
        zero_point = np.broadcast_to(np.asarray(zero_point), np.shape(scale))
    if engine == "torch":
        if per_channel:
            return quantize_per_channel(x, scale, zero_point, axis, dtype)
        return quantize_per_tensor(x, scale, zero_point, dtype)
    if engine == "onnx":
        return quantize_linear(x, scale, zero_point, axis=axis if per_channel else 1, dtype=dtype)
    return tflite_quantize(x, scale, zero_point, dtype, axis=axis if per_channel else None)


class QTensor:
    """Integer codes plus scale / zero point / axis (or TF range and mode). See the module docstring.

    Build one with :meth:`quantize`, :meth:`from_qparams` or :meth:`quantize_tf` (from floats), or
    directly from codes: ``QTensor(codes, scale, zero_point, axis=None, engine="torch")`` or
    ``QTensor(codes, min_range=..., max_range=..., mode="MIN_COMBINED")``. The codes' numpy dtype
    is the quantized type (uint8 = quint8, ...); they are stored as given (no copy is promised).
    ``engine`` is "torch", "onnx" or "tflite" for affine tensors and "tf" for TensorFlow ones; an
    ``axis`` is kept only when the parameters are per channel.
    """

    def __init__(self, codes, scale=None, zero_point=0, *, axis=None, engine="torch", min_range=None,
                 max_range=None, mode=None, narrow_range=False):
        func = "QTensor"
        q = np.asarray(codes)
        if q.dtype.kind not in "iu" or q.dtype.itemsize > 4:
            raise TypeError(f"{func}: codes must be an integer array of at most 32 bits, got dtype {q.dtype}")
        self.codes = q
        self.dtype = int_type(q.dtype, func).name
        tf_kind = mode is not None
        if tf_kind == (scale is not None):
            raise ValueError(f"{func}: give either scale (affine) or mode with min_range/max_range (TensorFlow)")
        if axis is not None:
            if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
                raise TypeError(f"{func}: axis must be an int or None")
            if not -q.ndim <= axis < q.ndim:
                raise ValueError(f"{func}: axis {axis} is out of bounds for codes of rank {q.ndim}")
            axis = int(axis) % q.ndim
        self.axis = axis
        if tf_kind:
            lo = np.asarray(min_range, np.float32)
            hi = np.asarray(max_range, np.float32)
            if lo.shape != hi.shape or (lo.ndim and (axis is None or lo.shape != (q.shape[axis],))):
                raise ValueError(f"{func}: min_range/max_range must be scalars, or 1-D along axis")
            self.min_range, self.max_range, self.mode = lo[()], hi[()], str(mode).upper()
            self.narrow_range = bool(narrow_range)
            self.axis = axis if lo.ndim else None
            self.engine = "tf"
            self.scale = self.zero_point = None
            return
        if engine not in ENGINES:
            raise ValueError(f"{func}: engine must be one of {list(ENGINES)}, got {engine!r}")
        s = _scales(scale, func, "scale")
        z = np.asarray(zero_point, np.int64)
        if s.ndim > 1 or z.ndim > 1:
            raise ValueError(f"{func}: scale and zero_point must be scalars or 1-D")
        if s.ndim == 1:
            if axis is None or s.shape != (q.shape[axis],):
                raise ValueError(f"{func}: per-channel scale needs an axis of length {s.size}")
            z = np.broadcast_to(z, s.shape).copy()
        elif z.ndim:
            raise ValueError(f"{func}: a per-tensor scale needs a scalar zero_point")
        t = int_type(q.dtype, func)
        if np.any(z < t.min) or np.any(z > t.max):
            raise ValueError(f"{func}: zero_point must lie in [{t.min}, {t.max}] for {t.name}")
        self.scale = s[()] if s.ndim == 0 else s
        self.zero_point = int(z) if z.ndim == 0 else z
        self.axis = axis if s.ndim == 1 else None
        self.engine = engine
        self.min_range = self.max_range = self.mode = None
        self.narrow_range = False

    # ---------------------------------------------------------------------------------------
    # construction from floats
    # ---------------------------------------------------------------------------------------
    @classmethod
    def quantize(cls, x, scale, zero_point=0, dtype="quint8", *, axis=None, engine="torch") -> QTensor:
        """Quantize floats with ``engine``'s arithmetic: torch :func:`~dspsim.quantize_per_tensor` /
        :func:`~dspsim.quantize_per_channel`, onnx :func:`~dspsim.quantize_linear`, tflite
        :func:`~dspsim.tflite_quantize`. A 1-D ``scale`` of length > 1 is per channel along ``axis``."""
        if engine not in ENGINES:
            raise ValueError(f"QTensor.quantize: engine must be one of {list(ENGINES)}, got {engine!r}")
        q = _affine_quantize(x, scale, zero_point, dtype, axis, engine)
        return cls(q, scale, zero_point, axis=axis, engine=engine)

    @classmethod
    def from_qparams(cls, x, qparams: QParams, *, axis=None, engine="torch") -> QTensor:
        """Quantize with the scale / zero point of a :class:`~dspsim.QParams` (per channel along
        ``axis`` when they are arrays). Codes saturate to the full dtype, as the engines do; a
        narrower ``quant_min``/``quant_max`` of the QParams only shaped the scale."""
        if not isinstance(qparams, QParams):
            raise TypeError(f"QTensor.from_qparams: qparams must be a QParams, got {type(qparams).__name__}")
        return cls.quantize(x, qparams.scale, qparams.zero_point, qparams.dtype, axis=axis, engine=engine)

    @classmethod
    def quantize_tf(cls, x, min_range, max_range, T, mode="MIN_COMBINED", round_mode="HALF_AWAY_FROM_ZERO",
                    narrow_range=False, axis=None, ensure_minimum_range=0.01) -> QTensor:
        """TensorFlow ``QuantizeV2`` (:func:`dspsim.quantize`); keeps the range TF returned."""
        q, lo, hi = quantize(x, min_range, max_range, T, mode, round_mode, narrow_range, axis,
                             ensure_minimum_range)
        per_channel = np.ndim(lo) == 1
        return cls(q, min_range=lo, max_range=hi, mode=mode, narrow_range=narrow_range,
                   axis=axis if per_channel else None)

    # ---------------------------------------------------------------------------------------
    # views
    # ---------------------------------------------------------------------------------------
    @property
    def shape(self):
        return self.codes.shape

    @property
    def ndim(self):
        return self.codes.ndim

    def __len__(self):
        return len(self.codes)

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    @property
    def qscheme(self) -> str:
        """``per_tensor_affine`` / ``per_channel_affine`` (torch's names), or the TF mode."""
        if self.engine == "tf":
            return self.mode
        return "per_channel_affine" if self.per_channel else "per_tensor_affine"

    def int_repr(self) -> np.ndarray:
        """A copy of the integer codes (torch ``int_repr()``)."""
        return self.codes.copy()

    def dequantize(self) -> np.ndarray:
        """Float32 values by the engine's own dequantize arithmetic (see :mod:`dspsim.quantize`)."""
        if self.engine == "tf":
            return dequantize(self.codes, self.min_range, self.max_range, self.mode, self.narrow_range, self.axis)
        if self.engine == "torch":
            if self.per_channel:
                return dequantize_per_channel(self.codes, self.scale, self.zero_point, self.axis)
            return dequantize_per_tensor(self.codes, self.scale, self.zero_point)
        if self.engine == "onnx":
            return dequantize_linear(self.codes, self.scale, self.zero_point, axis=self.axis if self.per_channel else 1)
        if self.per_channel:
            raise ValueError("QTensor.dequantize: TFLite per-channel DEQUANTIZE is not modelled (per-tensor only)")
        return tflite_dequantize(self.codes, self.scale, self.zero_point)

    def _with(self, codes, scale, zero_point, axis):
        if self.engine == "tf":
            return QTensor(codes, min_range=scale, max_range=zero_point, mode=self.mode,
                           narrow_range=self.narrow_range, axis=axis)
        return QTensor(codes, scale, zero_point, axis=axis, engine=self.engine)

    def __getitem__(self, key) -> QTensor:
        """numpy indexing of the codes; per-channel parameters follow the channel axis.

        Per-tensor tensors accept any numpy index. Per-channel ones accept basic indexing (ints,
        slices, ``...``, ``None``): a slice on the channel axis slices the parameters, an int
        there selects one channel and gives a per-tensor QTensor.
        """
        codes = self.codes[key]
        p1, p2 = (self.min_range, self.max_range) if self.engine == "tf" else (self.scale, self.zero_point)
        if not self.per_channel:
            return self._with(codes, p1, p2, None)
        sub, new_axis = _channel_index(key, self.ndim, self.axis)
        return self._with(codes, p1[sub], p2[sub], new_axis)

    # ---------------------------------------------------------------------------------------
    # requantization
    # ---------------------------------------------------------------------------------------
    def requantize(self, scale, zero_point=0, dtype=None, *, method="fixed_point", rounding="double",
                   engine=None) -> QTensor:
        """The same real values on new parameters.

        ``method="fixed_point"`` (affine only): TFLite's ``QUANTIZE`` op between integer types
        (``Requantize``): ``M, shift = QuantizeMultiplier(double(s_in) / double(s_out))``,
        ``q' = clamp(zo + MultiplyByQuantizedMultiplier(q - zi, M, shift))``, the integer path a
        DSP takes (``rounding``: "double" or "single"); per channel, one multiplier per channel.
        ``method="float"``: :meth:`dequantize`, then :meth:`quantize` with ``engine`` (default:
        this tensor's engine; "torch" for a TF tensor). ``dtype`` defaults to the current one.
        """
        func = "QTensor.requantize"
        dtype = self.dtype if dtype is None else int_type(dtype, func).name
        if method == "float":
            eng = engine or ("torch" if self.engine == "tf" else self.engine)
            ax = self.axis if np.ndim(scale) == 1 and np.size(scale) > 1 else None
            return QTensor.quantize(self.dequantize(), scale, zero_point, dtype, axis=ax, engine=eng)
        if method != "fixed_point":
            raise ValueError(f"{func}: method must be 'fixed_point' or 'float', got {method!r}")
        if self.engine == "tf":
            raise ValueError(f"{func}: the fixed-point path needs affine parameters; use method='float'")
        t = int_type(dtype, func)
        s_out = np.asarray(scale, np.float32)
        z_out = np.asarray(zero_point, np.int64)
        if not np.all(np.isfinite(s_out)) or np.any(s_out <= 0):
            raise ValueError(f"{func}: scale must be positive and finite in float32")
        if np.any(z_out < t.min) or np.any(z_out > t.max):
            raise ValueError(f"{func}: zero_point must lie in [{t.min}, {t.max}] for {t.name}")
        real = np.asarray(self.scale, np.float64) / s_out.astype(np.float64)
        m, sh = quantize_multiplier(real, rounding)
        shape = [1] * self.ndim
        if np.ndim(real) == 1:
            if self.axis is None:
                raise ValueError(f"{func}: per-channel output parameters need a per-channel tensor")
            shape[self.axis] = real.size
        ax = self.axis if np.ndim(real) == 1 else None
        zi = np.reshape(self.zero_point, shape) if np.ndim(self.zero_point) else self.zero_point
        zo = np.reshape(z_out, shape) if z_out.ndim else int(z_out)
        acc = multiply_by_quantized_multiplier(self.codes.astype(np.int64) - zi, m, sh, rounding, axis=ax)
        codes = np.clip(np.asarray(acc, np.int64) + zo, t.min, t.max).astype(t.dtype)
        sc = s_out if s_out.ndim else s_out[()]
        if sc.ndim == 0 and np.ndim(self.scale) == 1:
            sc = np.full(np.size(self.scale), sc, np.float32)
            z_out = np.broadcast_to(z_out, sc.shape)
        return QTensor(codes, sc, z_out, axis=self.axis if np.ndim(sc) else None, engine=self.engine)

    # ---------------------------------------------------------------------------------------
    # files and printing
    # ---------------------------------------------------------------------------------------
    def save(self, path):
        """Write the codes and every parameter to an ``.npz`` (no pickles)."""
        d = {"codes": self.codes, "engine": np.array(self.engine),
             "axis": np.int64(-1 if self.axis is None else self.axis)}
        if self.engine == "tf":
            d.update(min_range=np.asarray(self.min_range, np.float32), max_range=np.asarray(self.max_range, np.float32),
                     mode=np.array(self.mode), narrow_range=np.bool_(self.narrow_range))
        else:
            d.update(scale=np.asarray(self.scale, np.float32), zero_point=np.asarray(self.zero_point, np.int64))
        np.savez(path, **d)

    @classmethod
    def load(cls, path) -> QTensor:
        """Read a file written by :meth:`save`.

        Raises
        ------
        ValueError
            A file that is not such an archive (not a ``.npz``, an entry missing or of the wrong kind, a header
            that claims more than the file holds: :func:`dspsim._io.load_npz`), or parameters the constructor
            refuses (a zero, negative, subnormal or non-finite scale).
        OSError
            The file cannot be opened.
        """
        func = "QTensor.load"
        z = load_npz(path, func)
        engine = str(_archive_entry(z, "engine", "U", path))
        tf = engine == "tf"
        for key in ("codes",) + (_TF_KEYS if tf else ("scale", "zero_point")):
            _archive_entry(z, key, "iu" if key in ("codes", "zero_point") else "biuf" if key == "narrow_range"
                           else "U" if key == "mode" else "fiu", path)
        axis = int(_archive_entry(z, "axis", "iu", path))
        axis = None if axis < 0 else axis
        if tf:
            return cls(z["codes"], min_range=z["min_range"], max_range=z["max_range"], mode=str(z["mode"]),
                       narrow_range=bool(z["narrow_range"]), axis=axis)
        return cls(z["codes"], z["scale"], z["zero_point"], axis=axis, engine=engine)

    def __repr__(self):
        """torch's layout (``torch/_tensor_str.py``): values to 4 decimals, then the suffixes,
        each going to a new line when the current one would pass 80 characters."""
        text = "tensor(" + np.array2string(self.dequantize(), precision=4, floatmode="fixed", separator=", ",
                                          prefix="tensor(", threshold=1000)
        size = "(" + ", ".join(str(n) for n in self.shape) + ("," if self.ndim == 1 else "") + ")"
        if self.engine == "tf":
            suffixes = [f"size={size}", f"dtype=tf.{_tf_name(self.dtype)}", f"quantization_scheme={self.mode}",
                        f"min_range={_fmt(self.min_range)}", f"max_range={_fmt(self.max_range)}"]
        else:
            dt = f"torch.{_TORCH_NAMES[self.dtype]}" if self.dtype in _TORCH_NAMES else f"dspsim.{self.dtype}"
            suffixes = [f"size={size}", f"dtype={dt}", f"quantization_scheme=torch.{self.qscheme}",
                        f"scale={_fmt(self.scale)}", f"zero_point={_fmt(self.zero_point)}"]
        if self.axis is not None:
            suffixes.append(f"axis={self.axis}")
        line = len(text) - text.rfind("\n") + 1  # torch's count (one more than the line's length)
        for suf in suffixes:
            if line + len(suf) + 2 > 80:
                text += ",\n       " + suf
                line = 7 + len(suf)
            else:
                text += ", " + suf
                line += len(suf) + 2
        return text + ")"


_TF_KEYS = ("min_range", "max_range", "mode", "narrow_range")


def _archive_entry(z: dict, key: str, kinds: str, path):
    """Entry ``key`` of a :meth:`QTensor.save` archive: a numpy array of one of ``kinds`` (a scalar, except the
    codes and per-channel parameters); ValueError naming the file otherwise."""
    if key not in z:
        raise ValueError(f"QTensor.load: {str(path)!r} is not a QTensor archive (no {key!r} entry; it has "
                         f"{sorted(z)[:8]})")
    a = z[key]
    if a.dtype.kind not in kinds or (key in ("engine", "axis", "mode", "narrow_range") and a.ndim):
        raise ValueError(f"QTensor.load: {str(path)!r} is not a QTensor archive (entry {key!r} is {a.dtype} of "
                         f"shape {a.shape})")
    return a[()] if a.ndim == 0 else a


def _tf_name(name: str) -> str:
    return name if name.startswith("q") else "q" + name


def _fmt(v) -> str:
    a = np.asarray(v)
    if a.ndim == 0:
        return str(a[()])
    return "tensor(" + np.array2string(a, separator=", ", floatmode="unique") + ")"


def _channel_index(key, ndim: int, axis: int):
    """``(index into the channel parameters, new channel axis or None)`` for a basic index."""
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice)
                or (isinstance(k, (int, np.integer)) and not isinstance(k, bool))):
            raise TypeError("QTensor.__getitem__: a per-channel QTensor takes basic indices only "
                            f"(ints, slices, ..., None), got {type(k).__name__}")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    full = []
    for k in key:
        full.extend([slice(None)] * (ndim - used) if k is Ellipsis else [k])
    if Ellipsis not in key:
        full.extend([slice(None)] * (ndim - used))
    dim = pos = 0
    for k in full:
        if k is None:
            pos += 1
            continue
        if dim == axis:
            return (k, pos) if isinstance(k, slice) else (int(k), None)
        pos += isinstance(k, slice)
        dim += 1
    raise IndexError("QTensor.__getitem__: index does not reach the channel axis")  # unreachable for valid keys

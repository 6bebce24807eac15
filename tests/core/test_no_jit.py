"""The numba kernels and their pure-Python execution agree: the oracle tests pass with NUMBA_DISABLE_JIT=1.

Under NUMBA_DISABLE_JIT the @njit functions run as plain Python on numpy scalars, where int8 values wrap
and Python float literals stay float64: a kernel that leans on numba's typing (int8*int8 -> int64,
float32 kept float32) would fail here while passing compiled.
"""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parents[1]
FILES = ["core/test_fixedpoint.py", "core/test_quantize_tf.py", "core/test_quantize_affine.py",
         "core/test_quantize_pof2.py", "kernels/test_dense.py", "kernels/test_conv.py", "kernels/test_relu.py"]


def test_oracle_tests_pass_without_jit():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *(str(HERE / f) for f in FILES)],
        env=env, capture_output=True, text=True, timeout=900, cwd=HERE.parent)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]

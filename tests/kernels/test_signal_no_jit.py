"""dspsim.kernels.signal's numba kernels run as plain Python too: tests/kernels/test_signal_kernels.py passes with
NUMBA_DISABLE_JIT=1 (numpy scalars instead of numba's typing; the uint64 sums wrap with a numpy overflow warning
there, as C's uint64_t does)."""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def test_signal_kernel_tests_pass_without_jit():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly", "-W",
         "ignore::RuntimeWarning", str(HERE / "test_signal_kernels.py")],
        check=False, env=env, capture_output=True, text=True, timeout=900, cwd=HERE.parents[1])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]

"""dspsim.dsp's numba kernels run as plain Python too: the hypothesis oracle tests of tests/dsp pass with
NUMBA_DISABLE_JIT=1 (numpy scalars instead of numba's typing; the q31 biquad's int64 sum wraps with a numpy
overflow warning there, as the C q63_t does)."""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def test_oracle_tests_pass_without_jit():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", "-W", "ignore::RuntimeWarning",
         "-k", "oracle and not golden and not no_jit", str(HERE)],
        check=False, env=env, capture_output=True, text=True, timeout=900, cwd=HERE.parents[1])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]

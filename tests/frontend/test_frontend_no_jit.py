"""dspsim.frontend's numba kernels run as plain Python too: the stage-against-oracle tests of tests/frontend pass
with NUMBA_DISABLE_JIT=1 (numpy scalars instead of numba's typing; the filterbank's uint64 sums wrap with a numpy
overflow warning there, as C's uint64_t does)."""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
STAGES = ("window or rfft or fft_compute or filterbank or noise_reduction or pcan or wide_dynamic or log_scale "
          "or oracle_matches or other_configurations")


def test_stage_tests_pass_without_jit():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", "-W",
         "ignore::RuntimeWarning", "-k", f"({STAGES}) and not no_jit", str(HERE / "test_microfrontend.py")],
        check=False, env=env, capture_output=True, text=True, timeout=900, cwd=HERE.parents[1])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]

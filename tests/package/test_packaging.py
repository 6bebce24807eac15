"""What an installation of dspsim holds and says about itself, checked outside the source checkout."""
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path
from shutil import copy2, copytree, ignore_patterns

import pytest

import dspsim

ROOT = Path(__file__).resolve().parents[1].parent


def _python(code: str, cwd) -> str:
    """Run ``code`` in a fresh interpreter in ``cwd`` (outside the checkout); return its stdout."""
    res = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_version_option_prints_the_installed_distributions_version(tmp_path):
    res = subprocess.run([sys.executable, "-m", "dspsim.cli", "--version"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"dspsim {version('dspsim-bitexact')}"
    assert dspsim.__version__ == version("dspsim-bitexact")


def test_bench_and_its_peers_import_without_the_checkout_on_sys_path(tmp_path):
    out = _python("import sys, dspsim, dspsim.bench as b\n"
                  "from dspsim.bench import peers\n"
                  "assert not any(p.rstrip('/').endswith('benches') for p in sys.path), sys.path\n"
                  "print(peers.__file__)\n"
                  "print(dspsim.__file__)\n"
                  "print(','.join(peers.engines(b.Case('fully_connected', 'double', 'quick'))))", tmp_path)
    peers_file, init_file, engines = out.splitlines()
    assert Path(peers_file).parent == Path(init_file).parent / "bench"
    assert engines == "numpy-int64,litert,litert-xnnpack"


def test_litert_worker_loads_the_timing_rule_without_dspsim():
    from dspsim.bench import litert

    timing = litert._timing_module()  # by path, as the worker does under an interpreter without dspsim
    assert timing.__name__ != "dspsim.bench.timing"
    t = timing.measure(lambda: 7, repeats=3, budget=0.0)
    assert t.result == 7 and t.runs == 3 and 0 <= t.min_seconds <= t.median_seconds


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built (with build isolation, as pip does for a user) from a copy of the packaged files."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    copytree(ROOT / "dspsim", src / "dspsim", ignore=ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        copy2(ROOT / name, src / name)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)],
                         capture_output=True, text=True, timeout=600)
    if res.returncode != 0 and "Could not find a version that satisfies the requirement setuptools" in res.stderr:
        pytest.skip("no package index reachable for the build backend")
    assert res.returncode == 0, res.stderr
    (path,) = (tmp / "dist").glob("dspsim_bitexact-*.whl")
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    return names, meta


def test_wheel_ships_py_typed_the_bench_peers_and_the_license(wheel):
    names, _ = wheel
    assert "dspsim/py.typed" in names
    assert {"dspsim/bench/__init__.py", "dspsim/bench/peers.py", "dspsim/bench/timing.py",
            "dspsim/bench/litert.py"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_wheel_metadata_has_license_version_and_tomli_for_python_3_10(wheel):
    _, meta = wheel
    lines = meta.splitlines()
    assert f"Version: {version('dspsim-bitexact')}" in lines
    assert "License-Expression: Apache-2.0" in lines
    assert "Requires-Python: >=3.10" in lines
    assert 'Requires-Dist: tomli; python_version < "3.11"' in lines
    assert "Classifier: Typing :: Typed" in lines

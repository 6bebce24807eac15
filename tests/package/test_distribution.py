"""The distribution's name and extras, and the README's install lines: each names what pyproject.toml defines."""
import re
import shlex
import sys
from importlib.metadata import metadata
from pathlib import Path

from dspsim.interpreters import PIP

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomli, a dependency there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1].parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = PROJECT["optional-dependencies"]
NAME = PROJECT["name"]
# the checkout itself, as the README's commands name it (from its root, or by its path)
CHECKOUT = (".", "path/to/dspsim")


def _requirement_name(req: str) -> str:
    return re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0].lower()


def _install_targets(text: str) -> list:
    """Every argument of every ``pip install`` in ``text`` that names something to install (options dropped)."""
    targets = []
    for cmd in re.findall(r"pip install ([^`\n]*?)(?:`|&&|$)", text, flags=re.M):
        targets += [a for a in shlex.split(cmd) if not a.startswith("-")]
    return targets


def test_distribution_is_not_named_like_the_unrelated_pypi_project():
    assert NAME == "dspsim-bitexact"  # PyPI's "dspsim" is an HDL simulator
    assert PROJECT["scripts"] == {"dspsim": "dspsim.cli:main"}


def test_installed_metadata_is_the_distributions():
    meta = metadata(NAME)
    assert meta["Name"] == NAME
    assert set(meta.get_all("Provides-Extra")) == set(EXTRAS)


def test_engines_extra_installs_every_interpreter_and_stays_out_of_the_test_extras():
    engines = {_requirement_name(r): r for r in EXTRAS["engines"]}
    assert engines.keys() == set(PIP.values()) == {"ai-edge-litert", "tflite-micro", "onnxruntime", "onnx"}
    assert engines["ai-edge-litert"] == "ai-edge-litert==2.3.0"  # the version the goldens were made with
    assert "python_version == '3.11'" in engines["tflite-micro"]  # its only wheels are cp311
    assert not {_requirement_name(r) for r in EXTRAS["test"]} & {"ai-edge-litert", "tflite-micro"}


def test_install_targets_parse_the_readme_forms():
    text = "    pip install -e '.[test,ref]' && pytest\n(`pip install -e '.[dask]'`) and `pip install pymicro-wakeword`"
    assert _install_targets(text) == [".[test,ref]", ".[dask]", "pymicro-wakeword"]


def test_readme_install_lines_name_the_distribution_and_extras_that_exist():
    targets = _install_targets((ROOT / "README.md").read_text(encoding="utf-8"))
    assert {".", ".[engines]", ".[test,ref]", ".[dask]"} <= set(targets)
    declared = {_requirement_name(r) for reqs in [PROJECT["dependencies"], *EXTRAS.values()] for r in reqs}
    for t in targets:
        base, _, extras = t.partition("[")
        if base in CHECKOUT or _requirement_name(base) == NAME:
            assert set(extras.rstrip("]").split(",")) - {""} <= set(EXTRAS), t
        else:  # a third-party package: one that some extra of ours installs too
            assert _requirement_name(base) != "dspsim", f"{t}: PyPI's dspsim is another project"
            assert _requirement_name(base) in declared, t

"""Reading back the stage vectors that export_model / export_frames wrote, in any of their formats."""
from __future__ import annotations

import numpy as np

from dspsim.harness.vectors import read_array


def assert_exported_stages(directory, manifest, want, fmt, keys=None) -> None:
    """Every stage file in ``manifest`` (``stages_<key>`` rows) is one of ``want``'s keys, and those named by
    ``keys`` (default: all of ``want``) hold ``want[key]`` exactly: read back as written for ``npz`` and the raw
    formats, declared with the right size for ``c-header`` (whose values the C tests check)."""
    rows = {r["key"].removeprefix("stages_"): r for r in manifest["stages"]["files"]}
    assert set(rows) == set(want)
    for key in want if keys is None else keys:
        r, a = rows[key], want[key]
        if fmt == "npz":
            got = np.load(directory / r["file"])[key]
        elif fmt == "c-header":
            assert f"stages_{key}[{a.size}]" in (directory / r["file"]).read_text(), key
            continue
        else:
            got = read_array(directory / r["file"], dtype=r["dtype"], shape=r["shape"])
        assert got.dtype == a.dtype and np.array_equal(got, a), key

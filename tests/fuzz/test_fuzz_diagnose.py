"""``dspsim diagnose`` on malformed dumps (issue 16): truncated, garbage, wrong-dtype and wrong-shape files,
missing tensors, names that match no tensor, empty directories, broken input files (tests/fuzz/fuzz_diagnose.py).

Property: the CLI exits 0 / 1, or 2 with one ``dspsim: error:`` line and no traceback; the API returns or
raises a one-line ValueError / TypeError naming the file or the function. The default run is bounded in
cases and seconds; ``-m slow`` runs many more.
"""
import numpy as np
import pytest

import fuzz_diagnose as fd


def test_the_unmutated_dumps_diagnose_clean(tmp_path):
    model, inputs, d = fd.make_case(tmp_path, np.random.default_rng(0), {})
    assert fd.verdict(model, inputs, d) is None


def test_the_verdict_catches_an_unexpected_exception_in_the_cli(tmp_path, monkeypatch):
    """The verdict can fail: an IndexError inside the dump reader is reported, not taken for a refusal (the CLI
    turns it into one line and exit 3)."""
    from dspsim.harness import dumps

    model, inputs, d = fd.make_case(tmp_path, np.random.default_rng(0), {})

    def broken(*a, **k):
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(dumps, "read_array", broken)
    v = fd.verdict(model, inputs, d)
    assert v.startswith("cli: unexpected error (exit 3)") and "IndexError: tuple index out of range" in v, v


@pytest.mark.parametrize("reader", ["read_array", "load_vectors"])
def test_an_npy_whose_header_does_not_tokenize_is_a_vector_error_naming_the_file(tmp_path, reader):
    """Regression (campaign seed 2026, case 983): a flipped header byte made numpy's header parser raise
    tokenize.TokenError, which escaped the CLI as a traceback."""
    from dspsim.harness import vectors

    p = tmp_path / "t12.npy"
    np.save(p, np.zeros(3, np.int8))
    data = p.read_bytes()
    p.write_bytes(data.replace(b"}", b"(", 1))
    with pytest.raises(vectors.VectorError, match=r"t12\.npy: not a readable .*TokenError"):
        getattr(vectors, reader)(p)


def test_a_bounded_diagnose_mutation_campaign_finds_no_defect():
    n, defects = fd.campaign(2016, 120, budget_s=40.0)
    assert n >= 30
    assert defects == {}, list(defects.items())[:10]


@pytest.mark.slow
def test_a_long_diagnose_mutation_campaign_finds_no_defect():
    n, defects = fd.campaign(2017, 3000, budget_s=1200.0)
    assert n >= 1000
    assert defects == {}, list(defects.items())[:10]

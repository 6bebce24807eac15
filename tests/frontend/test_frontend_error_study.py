"""The microfrontend's error study (dspsim.frontend.error_study, `dspsim frontend-drift`): its fixed path is the
bit-exact frontend, its float64 twin is on the same scale, and the report says what it measured."""
import json
import math

import numpy as np
import pytest

from dspsim.cli import main
from dspsim.frontend import microfrontend
from dspsim.frontend.error_study import STAGES, stage_errors, study_signal


@pytest.mark.parametrize("kind,level", [("noise", 0), ("tone", -30), ("chirp", -70)])
def test_the_study_runs_the_bit_exact_frontend(kind, level):
    pcm = study_signal(kind, level, 0.3)
    r = stage_errors(pcm)
    assert np.array_equal(r["fixed_features"], microfrontend(pcm))


def test_the_window_error_is_its_truncating_shift_at_most_one_lsb():
    r = stage_errors(study_signal("noise", 0, 0.3))
    assert 0.5 < r["window"].max_abs < 1.0


def test_the_float_twin_is_on_the_fixed_spectrum_scale():
    # a wrong 1/nfft or input shift in the twin would put the error at the signal's size (about 0 dB or below)
    r = stage_errors(study_signal("tone", 0, 0.3))
    assert r["fft"].sqnr_db > 50
    assert r["filterbank"].sqnr_db > 50


def test_window_sqnr_falls_six_db_per_bit_of_level():
    hi = stage_errors(study_signal("noise", -20, 0.3))["window"].sqnr_db
    lo = stage_errors(study_signal("noise", -60, 0.3))["window"].sqnr_db
    assert 38 < hi - lo < 42


def test_silence_is_exact_in_every_stage():
    r = stage_errors(np.zeros(4800, np.int16))
    for s in STAGES:
        assert r[s].sqnr_db == math.inf and r[s].max_abs == 0.0
        assert r[s].as_dict()["exact"] is True and r[s].as_dict()["sqnr_db"] is None


def test_the_drift_per_frame_has_one_value_per_frame():
    pcm = study_signal("noise", -30, 1.0, seed=3)
    r = stage_errors(pcm, per_frame=True)
    assert r["feature_rms_per_frame"].shape == (r["fixed_features"].shape[0],)


def test_a_signal_shorter_than_a_window_is_refused():
    with pytest.raises(ValueError, match="stage_errors: the signal has 100 samples"):
        stage_errors(np.zeros(100, np.int16))


def test_an_unknown_signal_kind_is_refused():
    with pytest.raises(ValueError, match="study_signal: kind must be"):
        study_signal("speech", 0, 0.1)


def test_frontend_drift_writes_the_table_json_and_plots(tmp_path, capsys):
    out = tmp_path / "fd"
    assert main(["frontend-drift", "--signals", "tone,noise", "--levels", "0,-40", "--seconds", "0.2",
                 "--out", str(out)]) == 0
    data = json.loads((out / "frontend_drift.json").read_text())
    assert [(r["signal"], r["level_dbfs"]) for r in data["rows"]] == [("tone", 0), ("tone", -40), ("noise", 0),
                                                                       ("noise", -40)]
    md = (out / "frontend_drift.md").read_text()
    assert md.count("\n| tone |") == 2 and md.count("\n| noise |") == 2
    assert len(data["long"]["feature_rms_per_frame"]) == 998
    for png in ("stages_vs_level.png", "features_over_time.png"):
        assert (out / png).stat().st_size > 10_000


def test_frontend_drift_refuses_a_level_above_full_scale(tmp_path, capsys):
    assert main(["frontend-drift", "--levels", "3", "--out", str(tmp_path / "x")]) == 2
    assert "frontend-drift: every level must be in -120..0" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()

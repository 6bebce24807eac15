"""The README's tour is real output: every ``>>>`` example in its Python blocks runs and prints what it shows."""
import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1].parent / "README.md"


def test_readme_examples_print_what_they_show(monkeypatch):
    import dspsim

    monkeypatch.setattr(dspsim, "warmup", lambda *a, **k: None)  # compile time, nothing to print
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    text = "\n".join(b for b in blocks if ">>>" in b)
    assert text.count(">>>") >= 20
    test = doctest.DocTestParser().get_doctest(text, {}, "README.md", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} README example(s) failed (see the output above)"

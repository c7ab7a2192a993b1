"""The minirad command: each subcommand, and one-line errors."""

import subprocess
import sys
import textwrap

import pytest

from minirad import LCG, examples
from minirad.cli import main


def test_demo_prints_the_figure1_wengert_list(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Figure 1" in out
    assert examples.figure1().wengert() in out


def test_trace_then_wengert(tmp_path, capsys, monkeypatch):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        from minirad import ops
        def f(x, w):
            return ops.tanh(x[0] * w + x[1])
    """))
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "prog:f", "1,2", "0.5", "-o", "f.json"]) == 0
    g = LCG.from_json(tmp_path / "f.json")
    assert [g.name(v) for v in g.inputs] == ["x[0]", "x[1]", "w"]
    capsys.readouterr()
    assert main(["wengert", "f.json"]) == 0
    assert capsys.readouterr().out.strip() == g.wengert()
    assert main(["trace", "prog.py:f", "1,2", "0.5", "-o", "g.json"]) == 0


@pytest.mark.parametrize("argv, message", [
    (["wengert", "missing.json"], "no such file: missing.json"),
    (["trace", "nocolon", "1", "-o", "x.json"], "is not MODULE:FUNCTION"),
    (["trace", "no_such_module_xyz:f", "1", "-o", "x.json"], "cannot import module"),
    (["trace", "math:nothing", "1", "-o", "x.json"], "has no function 'nothing'"),
    (["trace", "math:sin", "abc", "-o", "x.json"], "is not a number"),
])
def test_errors_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_not_an_lcg_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    assert main(["wengert", str(bad)]) == 1
    assert "not an LCG file" in capsys.readouterr().err


def test_console_script_runs():
    result = subprocess.run([sys.executable, "-m", "minirad", "demo"], capture_output=True,
                            text=True, check=True)
    assert "Wengert list" in result.stdout

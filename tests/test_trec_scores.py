"""A run's scores are read as trec_eval reads them, with C's atof: the longest prefix that is
a number, else 0. The reference is the C library's own strtod, called through ctypes."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics.inputs.trec import c_atof

_LIBC = ctypes.util.find_library("c")


def libc_atof():
    if _LIBC is None:
        pytest.skip("no C library to call strtod in (ctypes.util.find_library('c') found none)")
    strtod = ctypes.CDLL(_LIBC).strtod
    strtod.restype, strtod.argtypes = ctypes.c_double, [ctypes.c_char_p, ctypes.c_void_p]
    return lambda text: strtod(text.encode("utf-8"), None)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


SPELLED = [
    "2.5", "-0.001", "1_0", "1,5", "1.5.2", "1e", "1e+", "1e5x", ".5", "5.", ".", "+.", "-", "+",
    "-0", "0x10", "0x", "0x.p1", "0X1.8P1", "0x1p-3", "inf", "-Infinity", "infinit", "nan",
    "nan(1)", "nan(", "-nan", "1e400", "-1e400", "4.9e-325", "1e-320", "abc", "", "\u0661",
    "\uff11", "\u00b2", "1\u0661", "0.1e+308x", "00012", "+-1", "e5", "12abc34",
]  # fmt: skip


@pytest.mark.parametrize("text", SPELLED)
def test_c_atof_is_the_c_librarys(text):
    expected = libc_atof()(text)
    assert same(c_atof(text), expected), (text, c_atof(text), expected)


@settings(max_examples=400, deadline=None)
@given(st.text(string.digits + "+-.eExXpPaAbBfFiInNtTyY()_ \u0661\uff11", max_size=12))
def test_c_atof_is_the_c_librarys_on_any_text(text):
    text = text.strip()  # a field holds no blanks
    assert same(c_atof(text), libc_atof()(text)), text


@pytest.mark.parametrize(
    "written, score",
    [("1_0", 1.0), ("\u0661", 0.0), ("\uff12.5", 0.0), ("high", 0.0), ("2.5abc", 2.5), ("0x1p3", 8.0)],
)
def test_a_run_reads_a_score_as_trec_eval(tmp_path, written, score):
    """Python's float() would read 1_0 as 10 and the Arabic-Indic or full-width digits as
    numbers; trec_eval's atof reads the prefix 1, or nothing (0)."""
    path = tmp_path / "run.txt"
    path.write_text(f"301 Q0 d1 1 {written} tag\n301 Q0 d2 2 0.5 tag\n", encoding="utf-8")
    assert sqlmetrics.read_run(path).column("score").to_pylist() == [score, 0.5]


def test_the_cli_takes_a_qrels_grade_with_a_plus_sign(tmp_path, capsys):
    """trec_eval reads a grade written +2 (atol); the CLI's format sniffer took the file for
    neither a run nor qrels and refused it."""
    from sqlmetrics.cli import main

    run = tmp_path / "run"
    run.write_text("1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n2 Q0 c 1 1_0 r\n2 Q0 d 2 3.0 r\n", encoding="utf-8")
    results = {}
    for name, grade in (("plus", "+2"), ("bare", "2")):
        qrels = tmp_path / f"qrels.{name}"
        qrels.write_text(f"1 0 b {grade}\n2 0 c {grade}\n2 0 d 0\n", encoding="utf-8")
        status = main(
            ["evaluate", str(run), "--truth", str(qrels), "--metrics", "ndcg@2,mrr@2", "--format", "csv"]
        )
        out, err = capsys.readouterr()
        assert status == 0, err
        results[name] = out
    assert results["plus"] == results["bare"]
    # query 2: c's score 1_0 is 1 (not 10), below d's 3.0: c is second, mrr@2 = (1/2 + 1/2) / 2
    assert results["plus"].splitlines()[1].split(",")[-1] == "0.5"

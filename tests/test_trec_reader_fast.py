"""The TREC readers' vectorized path gives exactly the line loop's table (sqlmetrics/inputs/trec.py),
and declines (None) whatever it cannot read exactly, so the line loop raises its error."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.inputs import trec

NAMES = st.text(string.ascii_letters + string.digits + "#.+-_", min_size=1, max_size=6)
WHOLE = st.one_of(st.integers(-(2**63), 2**63 - 1).map(str), st.sampled_from(["+2", "-0", "007"]))
DECIMAL = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["2.5", "-1e-3", ".5", "5.", "1E5", "+1.5", "1e400", "4.9e-325", "0.1e+308"]),
)
TOKENS = st.one_of(
    st.sampled_from(["301", "q1", "Q0", "0", "d#1", "#", "#x", "doc", "tag", "-", "+2", "-0", "007",
                     "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                     "2.5", "-1e-3", ".5", "5.", "1E5", "1e400", "inf", "nan", "1_0", "0x10",
                     "4.9e-325", "²", "é", "\x1c"]),
    NAMES,
)
SPACE = st.sampled_from([" ", "  ", "\t", " \t", "\x0b", "\x0c"])


@st.composite
def files(draw, width: int) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["good", "good", "good", "any", "blank", "comment"]))
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", " ", "\t", "\r"])))
            continue
        if kind == "any":
            fields = [draw(TOKENS) for _ in range(draw(st.integers(1, width + 2)))]
        elif width == 6:  # qid Q0 docno rank score tag
            rank = draw(st.one_of(WHOLE, TOKENS))
            fields = [draw(NAMES), "Q0", draw(NAMES), rank, draw(DECIMAL), draw(NAMES)]
        else:  # qid iter docno rel
            fields = [draw(NAMES), "0", draw(NAMES), draw(WHOLE)]
        line = draw(SPACE).join(fields)
        if kind == "comment":
            line = draw(st.sampled_from(["#", " #", "\t# "])) + line
        lines.append(draw(st.sampled_from(["", " "])) + line + draw(st.sampled_from(["", "\r", " "])))
    ending = draw(st.sampled_from(["\n", "", "\r\n"]))
    return ("\n".join(lines) + ending).encode("utf-8")


def outcome(read, path):
    try:
        return read(path)
    except Exception as exc:  # noqa: BLE001 - the error text is what is compared
        return f"{type(exc).__name__}: {exc}"


READERS = {
    "run": (6, trec._fast_run, trec._read_run_lines, trec.read_run),
    "qrels": (4, trec._fast_qrels, trec._read_qrels_lines, trec.read_qrels),
}


@pytest.mark.parametrize("kind", sorted(READERS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fast_path_is_the_line_loop_or_declines(tmp_path, kind, data):
    width, fast_reader, line_reader, reader = READERS[kind]
    path = tmp_path / kind
    path.write_bytes(data.draw(files(width)))
    fast = fast_reader(path)
    if fast is not None:
        assert fast.equals(line_reader(path))
    assert str(outcome(reader, path)) == str(outcome(line_reader, path))


@pytest.mark.parametrize("name", ["results.test", "qrels.test", "qrels.test.with-comments",
                                  "results.comment.test", "qrels.comment.test", "results.trunc"])
def test_trec_eval_files_take_the_fast_path(name):
    from test_trec_reader import data_dir

    path = data_dir() / name
    fast = trec._fast_qrels(path) if name.startswith("qrels") else trec._fast_run(path)
    assert fast is not None and fast.num_rows > 0
    lines = trec._read_qrels_lines(path) if name.startswith("qrels") else trec._read_run_lines(path)
    assert fast.equals(lines)


def test_the_forms_the_fast_path_promises_are_read_by_it(tmp_path):
    run = tmp_path / "run"
    run.write_bytes(b"# c\n  301\tQ0 d1 +2 .5 t x\r\n\n 301 Q0 d#2 -0 5. t\n \t#301 Q0 d3 1 1 t\n"
                    b"302 Q0 d4 007 1E5 t\n302 Q0 d5 - 1e400 t")
    fast = trec._fast_run(run)
    assert fast is not None and fast.equals(trec._read_run_lines(run))
    assert fast.column("rank").to_pylist() == [2, 0, 7, None]
    qrels = tmp_path / "qrels"
    qrels.write_bytes(b"#c\n301 0 d1 +2\r\n\t301 0 d#2 -9223372036854775808\n\n302\t0 d4 007")
    fast = trec._fast_qrels(qrels)
    assert fast is not None and fast.equals(trec._read_qrels_lines(qrels))

"""Issue 33, item 3: defects of the public API and the command line found by an adversarial
review (a, b, c, d, e, f, g, h, m), each with the test that failed before its fix."""

import datetime

import duckdb
import pyarrow as pa
import pytest
from test_cli import ROOT, logs  # noqa: F401  (the fixture)
from test_cli import run as cli

import sqlmetrics
from sqlmetrics.errors import UnknownMetricError

RECS = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "c"], "score": [0.9, 0.8, 0.7]})
TRUTH = pa.table({"user_id": [1, 2], "item_id": ["b", "c"], "relevance": [1, 2]})


# c. a comma list in one string, as the command line takes it -------------------------------


def test_a_comma_list_in_one_string_is_several_metrics(con):
    listed = sqlmetrics.evaluate(con, RECS, ["ndcg@10", "map@10", "P.5,10"], truth=TRUTH)
    for text in ("ndcg@10,map@10,P.5,10", "ndcg@10, map@10 P.5,10"):
        got = sqlmetrics.evaluate(con, RECS, text, truth=TRUTH)
        assert got.column_names == listed.column_names == ["users", "ndcg@10", "map@10", "P_5", "P_10"]
        assert got.equals(listed)
    con.execute("CREATE TABLE events AS SELECT 1 user_id, 'a' item_id, 0.5 score, 1 relevance")
    assert '"map@10"' in sqlmetrics.sql(con, "events", "ndcg@10,map@10")


def test_the_command_line_and_the_api_split_with_one_function():
    from sqlmetrics.cli import options
    from sqlmetrics.names.metric_names import split_metric_list

    assert options.metric_list is split_metric_list
    assert split_metric_list("ndcg@10,map@10 recall@20") == ["ndcg@10", "map@10", "recall@20"]


# d. a space inside a name is refused (it would name the column) -----------------------------


@pytest.mark.parametrize("name", ["ndcg@ 10", "ndcg @10", "ndcg @ 10", "recall@\t5"])
def test_a_space_inside_a_metric_name_is_refused(con, name):
    fixed = "".join(name.split())
    for metrics in (name, [name]):
        refused = f"has a space in it.*write it without spaces: '{fixed}'"
        with pytest.raises(UnknownMetricError, match=refused):
            sqlmetrics.evaluate(con, RECS, metrics, truth=TRUTH)


def test_spaces_around_a_name_are_dropped(con):
    got = sqlmetrics.evaluate(con, RECS, [" ndcg@10 ", "map@10\n"], truth=TRUTH)
    assert got.column_names == ["users", "ndcg@10", "map@10"]


def test_the_command_line_refuses_a_space_after_the_at_sign(tmp_path, capsys):
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    import pyarrow.parquet as pq

    pq.write_table(RECS, recs)
    pq.write_table(TRUTH, truth)
    code, out, err = cli(["evaluate", str(recs), "--truth", str(truth), "--metrics", "ndcg@ 10"], capsys)
    assert code == 2 and out == ""
    assert "'ndcg@ 10' has a space in it" in err and "'ndcg@10'" in err


# e. --format trec prints trec_eval's names ------------------------------------------------


def _trec_files(tmp_path):
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 0.9 tag\nq1 Q0 d2 2 0.8 tag\nq2 Q0 d3 1 0.7 tag\nq2 Q0 d1 2 0.6 tag\n")
    qrels.write_text("q1 0 d2 1\nq2 0 d3 2\nq2 0 d9 1\n")
    return run, qrels


def test_the_trec_format_prints_trec_evals_names(tmp_path, capsys):
    run, qrels = _trec_files(tmp_path)
    asked = "ndcg@10,precision@5,map,mrr,r_precision,hit_rate@5,recall@10,map@10,mrr@2,P_10"
    code, out, err = cli(
        ["evaluate", run, "--truth", qrels, "--metrics", asked, "--format", "trec", "--per-user"], capsys
    )
    assert code == 0, err
    lines = [line.split("\t") for line in out.splitlines()]
    names = [name.strip() for name, qid, _ in lines if qid == "all"]
    # trec_eval's order and names; mrr@2 has none (recip_rank takes no cutoff): as requested
    assert names == [
        "map", "Rprec", "recip_rank", "P_5", "P_10", "recall_10", "ndcg_cut_10", "map_cut_10",
        "success_5", "mrr@2",
    ]  # fmt: skip
    assert {name.strip() for name, qid, _ in lines if qid == "q1"} == set(names)
    # the values are those of the names as requested
    truth = sqlmetrics.read_qrels(qrels)
    table = sqlmetrics.evaluate(duckdb.connect(), sqlmetrics.read_run(run), ["ndcg@10"], truth=truth)
    all_ndcg = next(value for name, qid, value in lines if name.strip() == "ndcg_cut_10" and qid == "all")
    assert all_ndcg == f"{table.column('ndcg@10')[0].as_py():6.4f}"


# a. several lists per user: the duplicate's message names the item and both fixes ----------

D1, D2 = datetime.date(2026, 11, 1), datetime.date(2026, 11, 2)
# two models, two days: user 1 is shown item "a" by both models on both days
LISTS = pa.table({
    "day": [D1, D1, D2, D1, D2],
    "model": ["A", "B", "A", "A", "A"],
    "user_id": [1, 1, 1, 2, 2],
    "item_id": ["a", "a", "a", "b", "c"],
    "score": [0.9, 0.8, 0.7, 0.5, 0.4],
})  # fmt: skip
EVENTS = pa.table({"day": [D1, D2], "user_id": [1, 2], "item_id": ["a", "c"]})


def test_a_duplicate_of_several_lists_per_user_names_the_item_and_the_fixes(con):
    with pytest.raises(sqlmetrics.DuplicateRowError) as caught:
        sqlmetrics.evaluate(con, LISTS, ["ndcg@10"], truth=EVENTS)
    message = str(caught.value)
    head = "recs (recs Table) has a duplicate (user_id, item_id) for user_id = 1, item_id = a;"
    assert message.startswith(head)
    assert "its rows differ in day, model" in message
    # day is in truth too (a by column there would be refused): it joins the unit; model segments
    assert "by=['model'] evaluates the lists of each model apart" in message
    assert "user=['user_id', 'day'] makes each (user_id, day) one list" in message
    # by="model" given: the rows still differ in day, and the unit is the fix
    with pytest.raises(sqlmetrics.DuplicateRowError) as caught:
        sqlmetrics.evaluate(con, LISTS, ["ndcg@10"], truth=EVENTS, by="model")
    message = str(caught.value)
    assert "differ in day:" in message and "user=['user_id', 'day']" in message and "by=" not in message
    # following the advice evaluates
    fixed = sqlmetrics.evaluate(con, LISTS, ["ndcg@10"], truth=EVENTS, by="model", user=["user_id", "day"])
    assert fixed.column("users").to_pylist() == [2, 1]  # the (user, day) units with truth


def test_a_duplicate_without_other_columns_gets_no_lists_hint(con):
    dup = pa.table({"user_id": [1, 1], "item_id": ["a", "a"], "score": [0.5, 0.4], "relevance": [1, 0]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match=r"for user_id = 1, item_id = a$"):
        sqlmetrics.evaluate(con, dup, ["ndcg@10"])


def test_other_engines_name_the_columns_recs_also_has():
    from sqlmetrics.statement.duplicates import with_lists_hint

    message = "recs (recs) has a duplicate (user_id, item_id) for user_id = 1"
    hinted = with_lists_hint(message, ["model"], False, "user_id", None, ["user_id", "item_id"])
    assert hinted == (
        f"{message}; recs also has model: several lists per user? by=['model'] evaluates the lists "
        "of each model apart (docs/inputs.md, Units and segments)"
    )
    assert with_lists_hint(message, [], False, "user_id", None) == message
    truth_message = message.replace("recs", "truth", 1)
    assert with_lists_hint(truth_message, ["model"], False, "user_id", None) == truth_message


def test_compare_gives_the_same_duplicate_message(con):
    with pytest.raises(sqlmetrics.DuplicateRowError) as caught:
        sqlmetrics.compare(con, LISTS, ["ndcg@10"], truth=EVENTS, by="model", baseline="A", test="bootstrap")
    assert "item_id = a; its rows differ in day:" in str(caught.value)
    assert "user=['user_id', 'day']" in str(caught.value)


# m. rendering is linear in the metrics, and their number is bounded -------------------------


def test_the_exact_sums_terms_are_found_in_constant_time():
    # 20,000 distinct terms: a list's `in` and index() (the defect) took seconds, quadratic
    import time

    from sqlmetrics.statement.exact_sums import SumTerms

    terms = SumTerms()
    terms.open()
    start = time.process_time()
    for i in range(20_000):
        assert terms.column(f"_t{i}", 1) == i
    assert terms.column("_t7", 1) == 7 and terms.column("_t7", 2) == 20_000
    assert time.process_time() - start < 1.0
    assert len(terms.close()) == 20_001


def test_more_metrics_than_the_bound_are_refused_with_a_clear_error(con):
    from sqlmetrics.names.metric_names import MAX_METRICS

    names = [f"ndcg@{k}" for k in range(1, MAX_METRICS + 2)]
    con.execute("CREATE TABLE events AS SELECT 1 user_id, 'a' item_id, 0.5 score, 1 relevance")
    for call in (sqlmetrics.evaluate, sqlmetrics.sql):
        refused = f"{MAX_METRICS + 1} metrics requested in one call; at most {MAX_METRICS}"
        with pytest.raises(UnknownMetricError, match=refused):
            call(con, "events", names)
    # a trec_eval group counts its members
    with pytest.raises(UnknownMetricError, match="at most"):
        sqlmetrics.sql(con, "events", "P." + ",".join(map(str, range(1, MAX_METRICS + 2))))
    # the bound itself renders (linearly: about 0.5 ms per metric)
    assert sqlmetrics.sql(con, "events", names[:MAX_METRICS]).count("ndcg@") >= MAX_METRICS


# h. an output path that names an input is refused before anything is written ---------------


def _unchanged(paths):
    return {path: path.read_bytes() for path in paths}


def test_an_output_that_names_an_input_is_refused_with_exit_2(logs, tmp_path, capsys, monkeypatch):  # noqa: F811
    import os
    import shutil

    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)
    recs, events = tmp_path / "recs.parquet", tmp_path / "events.parquet"
    shutil.copy(logs / "recommendations.parquet", recs)
    shutil.copy(logs / "events.parquet", events)
    config = tmp_path / "daily.toml"
    shutil.copy(ROOT / "warehouse_examples" / "daily_report.toml", config)
    (tmp_path / "link.parquet").symlink_to(events)
    os.link(recs, tmp_path / "hard.parquet")
    before = _unchanged([warehouse, recs, events, config])
    grades = ["--action", "event_type", "--relevance", "purchase=3,view=1"]
    on_files = ["evaluate", recs, "--truth", events, "--metrics", "ndcg@10", *grades, "--by", "model"]
    on_db = ["recommendations", "--db", warehouse, "--truth", "events", "--metrics", "ndcg@10", *grades]
    report = ["report", config, "--db", warehouse, "--date", "2026-11-01"]
    cases = [
        ([*on_files, "-o", recs], "--output", "SOURCE"),
        ([*on_files, "-o", tmp_path / "link.parquet"], "--output", "--truth"),  # a symbolic link
        ([*on_files, "-o", tmp_path / "hard.parquet"], "--output", "SOURCE"),  # a hard link
        ([*on_files, "--format", "trec", "-o", events], "--output", "--truth"),
        (["evaluate", tmp_path / "*.parquet", "--metrics", "ndcg@10", "-o", recs], "--output", "SOURCE"),
        (["sql", *on_db, "-o", warehouse], "--output", "--db"),
        (["compare", *on_db, "--by", "model", "--baseline", "A", "-o", warehouse], "--output", "--db"),
        ([*report, "--html", warehouse], "--html", "warehouse"),
        ([*report, "--html", config], "--html", "config"),
    ]
    for args, option, what in cases:
        code, out, err = cli(args, capsys)
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and f"{option} " in err and f"is the {what} " in err, err
        assert "would overwrite it" in err
        assert _unchanged(before) == before
    # a report refused wrote no period into the warehouse
    con = duckdb.connect(str(warehouse), read_only=True)
    assert "daily_ab_results" not in {t for (t,) in con.execute("SHOW TABLES").fetchall()}
    con.close()
    # an output named like a table (no such file) is written
    monkeypatch.chdir(tmp_path)
    lists = ["--by", "model", "--user", "user_id,day"]
    code, _, err = cli(["evaluate", *on_db, *lists, "-o", "recommendations", "--format", "csv"], capsys)
    assert code == 0, err
    assert (tmp_path / "recommendations").read_text().startswith('"model","users","ndcg@10"')


# f. a streaming result left open on the connection -----------------------------------------


@pytest.mark.skipif(
    not hasattr(duckdb, "ResourceInUseException"), reason="DuckDB 1.x streams no results this way"
)
def test_an_open_record_batch_reader_gives_one_clear_error(con):
    con.execute("CREATE TABLE events AS SELECT 1 user_id, 'a' item_id, 0.5 score, 1 relevance")
    reader = con.sql("SELECT * FROM range(100000)").to_arrow_reader(1000)
    calls = [
        lambda: sqlmetrics.evaluate(con, "events", ["ndcg@10"]),
        lambda: sqlmetrics.evaluate(con, RECS, ["ndcg@10"], truth=TRUTH),
        lambda: sqlmetrics.sql(con, "events", ["ndcg@10"]),
        lambda: sqlmetrics.compare(con, RECS.append_column("model", pa.array(["A", "B", "A"])), ["ndcg@10"],
                                   truth=TRUTH, by="model", baseline="A", test="bootstrap"),
    ]  # fmt: skip
    refused = r"still streaming a result .* close it \(reader.close\(\)\)"
    for call in calls:
        with pytest.raises(sqlmetrics.UnsupportedError, match=refused):
            call()
    assert reader.read_next_batch().num_rows == 1000  # the caller's result is intact
    reader.close()
    assert sqlmetrics.evaluate(con, "events", ["ndcg@10"]).column("users").to_pylist() == [1]


# g. reports: a DATE[] time column, a view as the results table -----------------------------


def _report_warehouse(logs, tmp_path):  # noqa: F811
    import shutil

    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)
    return warehouse, ["report", ROOT / "warehouse_examples" / "daily_report.toml", "--db", warehouse, "-q"]


def _retype_day(warehouse, expression):
    con = duckdb.connect(str(warehouse))
    con.execute(f"CREATE TABLE r2 AS SELECT {expression} AS day, * EXCLUDE (day) FROM recommendations")
    con.execute("DROP TABLE recommendations")
    con.execute("ALTER TABLE r2 RENAME TO recommendations")
    con.close()


@pytest.mark.parametrize("time_type", ["DATE[]", "TIMESTAMP[]", "VARCHAR"])
def test_a_time_column_of_lists_is_a_column_type_error(logs, tmp_path, capsys, time_type):  # noqa: F811
    warehouse, report = _report_warehouse(logs, tmp_path)
    value = {"DATE[]": "[day]", "TIMESTAMP[]": "[CAST(day AS TIMESTAMP)]", "VARCHAR": "CAST(day AS VARCHAR)"}
    _retype_day(warehouse, value[time_type])
    code, _, err = cli([*report, "--date", "2026-11-01"], capsys)
    assert code == 2
    assert err == (
        "sqlmetrics: daily_ab 2026-11-01: recs (recommendations): the time column 'day' must be a "
        f"DATE or a TIMESTAMP, one per row, but it is {time_type}\n"
    )


def test_every_timestamp_precision_is_a_time_column(logs, tmp_path, capsys):  # noqa: F811
    warehouse, report = _report_warehouse(logs, tmp_path)
    _retype_day(warehouse, "CAST(day AS TIMESTAMP_NS)")
    code, _, err = cli([*report, "--date", "2026-11-01"], capsys)
    assert code == 0, err


@pytest.mark.parametrize("table", ["sqlmetrics_results", "sqlmetrics_comparisons"])
def test_a_view_as_a_reports_table_is_refused_before_any_write(logs, tmp_path, capsys, table):  # noqa: F811
    warehouse, report = _report_warehouse(logs, tmp_path)
    assert cli([*report, "--date", "2026-11-01"], capsys)[0] == 0
    con = duckdb.connect(str(warehouse))
    con.execute(f"ALTER TABLE {table} RENAME TO base")
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM base")
    before = con.execute("SELECT count(*) FROM base").fetchall()
    con.close()
    code, _, err = cli([*report, "--date", "2026-11-02"], capsys)
    assert code == 2
    what = "results" if table == "sqlmetrics_results" else "comparisons"
    assert err.startswith(f"sqlmetrics: '{table}' is a view, but the {what} table must be a table")
    assert err.count("\n") == 1
    con = duckdb.connect(str(warehouse), read_only=True)
    assert con.execute("SELECT count(*) FROM base").fetchall() == before
    con.close()
    # a view of another schema named like it is no matter
    con = duckdb.connect(str(warehouse))
    con.execute(f"DROP VIEW {table}")
    con.execute(f"ALTER TABLE base RENAME TO {table}")
    con.execute("CREATE SCHEMA other")
    con.execute(f"CREATE VIEW other.{table} AS SELECT 1 AS x")
    con.close()
    code, _, err = cli([*report, "--date", "2026-11-02"], capsys)
    assert code == 0, err

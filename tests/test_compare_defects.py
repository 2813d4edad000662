"""compare()'s defects of issue 33, item 3 (i, j, j2, j3, k, l, n): each test fails without
its fix."""

from __future__ import annotations

import decimal
import os
import tempfile
import threading

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sqlmetrics
from tests.test_compare import make_data


@pytest.fixture(scope="module")
def small():
    recs, truth = make_data(40, models=("A", "B"))
    return recs, truth


# ---- j: the caller's decimal context ------------------------------------------------------------


def test_the_callers_decimal_context_is_left_alone(small):
    """compare() computes its Poisson thresholds and percentile positions in a decimal context
    of its own: the calling thread's precision is unchanged, and a low one changes nothing."""
    recs, truth = small
    results = {}

    def call(precision):
        decimal.getcontext().prec = precision
        out = sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, by="model",
                                 baseline="A", test="bootstrap", replicates=200, confidence=0.9)
        results[precision] = (decimal.getcontext().prec, out.to_pylist())

    for precision in (28, 3):  # each in a thread of its own: a fresh decimal context
        thread = threading.Thread(target=call, args=(precision,))
        thread.start()
        thread.join()
    assert results[28][0] == 28
    assert results[3][0] == 3
    assert results[3][1] == results[28][1]


# ---- j3: a by or within column named like an output column --------------------------------------


@pytest.mark.parametrize(
    ("option", "name"),
    [("by", "metric"), ("by", "users"), ("by", "p_value"), ("by", "Delta"), ("within", "wins")],
)
def test_a_column_named_like_an_output_column_is_refused(small, option, name):
    """Without the check, by="metric" came back as the metric labels in place of the systems."""
    recs, truth = small
    recs = recs.append_column(name, recs.column("model"))
    if option == "by":
        kwargs = {"by": name}
    else:
        kwargs = {"by": "model", "within": name}
        recs = recs.set_column(recs.schema.get_field_index(name), name, pa.array(["x"] * len(recs)))
    with pytest.raises(sqlmetrics.ConventionError, match=f"{option}={name!r}: the result would have two"):
        sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, baseline="A", **kwargs)


# ---- j2: bad data inside the caller's open transaction ------------------------------------------


def _with(recs, **columns):
    for name, values in columns.items():
        index = recs.schema.get_field_index(name)
        values = pa.array(values)
        recs = recs.set_column(index, name, values) if index >= 0 else recs.append_column(name, values)
    return recs


def _bad_inputs():
    """(what, compare's arguments besides con, the error): each found by the statement's checks."""
    recs = pa.table({"model": ["A", "A", "B", "B"], "user_id": [1, 2, 1, 2], "item_id": [10, 10, 10, 11],
                     "score": [0.9, 0.5, 0.8, 0.4]})  # fmt: skip
    truth = pa.table({"user_id": [1, 2], "item_id": [10, 11], "relevance": [1, 1]})
    nan = float("nan")
    bad, dup = sqlmetrics.InvalidDataError, sqlmetrics.DuplicateRowError
    return [
        ("NULL user", dict(recs=_with(recs, user_id=[1, None, 1, 2]), truth=truth), bad),
        ("NULL score", dict(recs=_with(recs, score=[0.9, None, 0.8, 0.4]), truth=truth), bad),
        ("NaN score", dict(recs=_with(recs, score=[0.9, nan, 0.8, 0.4]), truth=truth), bad),
        ("duplicate", dict(recs=_with(recs, user_id=[1, 1, 1, 2]), truth=truth), dup),
        ("tied ranks", dict(recs=_with(recs, rank=[1, 1, 1, 1], user_id=[1, 1, 1, 1], item_id=[1, 2, 1, 2]),
                            truth=truth, rank="rank"), sqlmetrics.InvalidDataError),  # fmt: skip
        ("truth duplicate", dict(recs=recs, truth=_with(truth, user_id=[1, 1], item_id=[10, 10])),
         sqlmetrics.DuplicateRowError),
        ("NaN relevance", dict(recs=_with(recs, relevance=[1.0, nan, 0.0, 1.0]), truth=None),
         sqlmetrics.InvalidDataError),
        ("partitions", dict(recs=_with(recs, score=[0.9, None, 0.8, 0.4]), truth=truth, partitions=2),
         sqlmetrics.InvalidDataError),
    ]


BAD_INPUTS = _bad_inputs()


@pytest.mark.parametrize("test", ["t", "bootstrap"])
@pytest.mark.parametrize(("what", "arguments", "error"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_data_keeps_the_callers_duckdb_transaction(tmp_path, what, arguments, error, test):
    """As evaluate(): the statement's checks hand their problem to Python, so the caller's
    transaction is not aborted, and their COMMIT keeps the work done before the call."""
    con = duckdb.connect(str(tmp_path / "work.duckdb"))
    con.execute("CREATE TABLE work (x INTEGER)")
    con.execute("BEGIN")
    con.execute("INSERT INTO work VALUES (1)")
    arguments = dict(arguments)
    with pytest.raises(error) as raised:
        sqlmetrics.compare(con, arguments.pop("recs"), "ndcg@2", by="model", baseline="A", test=test,
                           replicates=50, **arguments)  # fmt: skip
    assert "aborted" not in str(raised.value)
    con.execute("INSERT INTO work VALUES (2)")  # still usable
    con.execute("COMMIT")
    assert con.execute("SELECT list(x ORDER BY x) FROM work").fetchall() == [([1, 2],)]
    assert not con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_name LIKE '__sqlmetrics%'"
    ).fetchall()


# ---- i: the replicates do not depend on the scale of the grades ---------------------------------


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_replicates_do_not_depend_on_the_scale_of_the_grades(test):
    """Revenue as a grade: dcg's differences reach 1e13, where every unit whose |d| >= 2^31 was
    left out of the replicates (the p-value and interval of the small differences only).
    Scaled by 1e12 or 1e-12, the p-value is the same and the interval scales with the grades."""
    recs, truth = make_data(60, models=("A", "B"))
    con = duckdb.connect()

    def run(scale):
        grades = pa.array([float(g) * scale for g in truth.column("relevance").to_pylist()])
        scaled = truth.set_column(truth.schema.get_field_index("relevance"), "relevance", grades)
        return sqlmetrics.compare(con, recs, ["dcg@10", "ndcg@10"], truth=scaled, by="model",
                                  baseline="A", test=test, replicates=400).to_pylist()  # fmt: skip

    base = run(1.0)
    assert base[0]["users"] == 60 and base[0]["p_value"] < 1
    for scale in (1e12, 1e-12, 2.0**40):
        rows = run(scale)
        for row, expected in zip(rows, base, strict=True):
            factor = scale if row["metric"] == "dcg@10" else 1.0
            assert row["users"] == expected["users"]
            assert row["p_value"] == pytest.approx(expected["p_value"], abs=1e-12), (scale, row["metric"])
            for column in ("delta", "ci_low", "ci_high"):
                assert row[column] == pytest.approx(expected[column] * factor, rel=1e-9), (scale, column)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_one_huge_difference_is_not_left_out(test):
    """A unit whose difference is >= 2^31 counts: against the numpy reference (every unit in)."""
    from tests import compare_reference as ref

    users = list(range(30))
    d = [((u * 7919) % 13 - 6) / 10 for u in users]
    d[3] = 5e12  # one user's revenue
    # dcg@1 is the grade of the one item: each model's own item, B's graded A's plus d
    recs = pa.table({
        "model": ["A"] * 30 + ["B"] * 30, "user_id": users * 2, "item_id": ["a"] * 30 + ["b"] * 30,
        "score": [1.0] * 60,
    })  # fmt: skip
    truth = pa.table({
        "user_id": users * 2, "item_id": ["a"] * 30 + ["b"] * 30,
        "relevance": [1e13] * 30 + [1e13 + x for x in d],
    })  # fmt: skip
    out = sqlmetrics.compare(duckdb.connect(), recs, "dcg@1", truth=truth, by="model", baseline="A",
                             test=test, replicates=300, seed=5).to_pylist()[0]  # fmt: skip
    values = sqlmetrics.evaluate(duckdb.connect(), recs, "dcg@1", truth=truth, by="model",
                                 per_user=True).to_pylist()  # fmt: skip
    x = {r["user_id"]: r["dcg@1"] for r in values if r["model"] == "B"}
    y = {r["user_id"]: r["dcg@1"] for r in values if r["model"] == "A"}
    diffs = np.array([x[u] - y[u] for u in users])
    assert abs(diffs[3]) > 2**31
    if test == "randomization":
        assert out["p_value"] == pytest.approx(ref.randomization_p(users, diffs, 5, 300), abs=1e-12)
    else:
        p, lo, hi = ref.bootstrap(users, diffs, 5, 300, 0.95)
        assert (out["p_value"], out["ci_low"], out["ci_high"]) == pytest.approx((p, lo, hi), rel=1e-9)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_the_scale_of_the_grades_on_postgres(pg_uri, test):
    """The scale 2^e of each comparison (log2 and pow2 of the dialect) on PostgreSQL: DuckDB's
    numbers, with grades of 1e12 (differences far above 2^31) and of 1e-12."""
    import adbc_driver_postgresql.dbapi

    recs, truth = make_data(30, models=("A", "B"))
    for scale in (1e12, 1e-12):
        grades = pa.array([float(g) * scale for g in truth.column("relevance").to_pylist()])
        scaled = truth.set_column(truth.schema.get_field_index("relevance"), "relevance", grades)
        kwargs = dict(truth=scaled, by="model", baseline="A", test=test, replicates=200)
        expected = sqlmetrics.compare(duckdb.connect(), recs, "dcg@10", **kwargs).to_pylist()
        with adbc_driver_postgresql.dbapi.connect(pg_uri) as pg:
            got = sqlmetrics.compare(pg, recs, "dcg@10", **kwargs).to_pylist()
        for column in ("p_value", "ci_low", "ci_high"):
            assert got[0][column] == pytest.approx(expected[0][column], rel=1e-9), (scale, column)


# ---- l: the bootstrap's degenerate cases, numpy numbers, the replicates' bound -----------------


def _equal_differences(users: int, d: float):
    """Two models over `users` users, dcg@1 of B = dcg@1 of A + d for every user."""
    ids = list(range(users))
    recs = pa.table({"model": ["A"] * users + ["B"] * users, "user_id": ids * 2,
                     "item_id": ["a"] * users + ["b"] * users, "score": [1.0] * (2 * users)})  # fmt: skip
    truth = pa.table({"user_id": ids * 2, "item_id": ["a"] * users + ["b"] * users,
                      "relevance": [1.0] * users + [1.0 + d] * users})  # fmt: skip
    return recs, truth


@pytest.mark.parametrize("test", ["t", "bootstrap"])
def test_one_user_gives_no_p_value_and_no_interval(test):
    """One paired unit is no evidence: the bootstrap gave p = 2 / (1 + replicates) from it."""
    recs, truth = _equal_differences(1, 2.0)
    row = sqlmetrics.compare(duckdb.connect(), recs, "dcg@1", truth=truth, by="model", baseline="A",
                             test=test).to_pylist()[0]  # fmt: skip
    assert (row["users"], row["delta"]) == (1, 2.0)
    assert (row["p_value"], row["ci_low"], row["ci_high"]) == (None, None, None)


@pytest.mark.parametrize("d", [0.0, 2.0])
def test_every_difference_equal_in_the_bootstrap(d):
    """Every replicate's delta is d: the interval is [d, d]; p is 1 for d = 0, else the
    smallest the bootstrap gives, 2 / (1 + replicates kept) (the numpy reference's)."""
    from tests import compare_reference as ref

    recs, truth = _equal_differences(6, d)
    row = sqlmetrics.compare(duckdb.connect(), recs, "dcg@1", truth=truth, by="model", baseline="A",
                             test="bootstrap", replicates=300, seed=3).to_pylist()[0]  # fmt: skip
    assert (row["ci_low"], row["ci_high"]) == (d, d)
    p, lo, hi = ref.bootstrap(list(range(6)), np.full(6, d), 3, 300, 0.95)
    assert row["p_value"] == pytest.approx(p, abs=1e-12)
    assert (row["p_value"] == 1.0) is (d == 0)
    assert d == 0 or row["p_value"] < 2 / 250


@pytest.mark.parametrize("test", ["t", "bootstrap"])
def test_numpy_numbers_as_options(small, test):
    recs, truth = small
    kwargs = dict(truth=truth, by="model", baseline="A", test=test)
    expected = sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", confidence=0.9, replicates=300, seed=2,
                                  **kwargs)  # fmt: skip
    got = sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", confidence=np.float64(0.9),
                             replicates=np.int64(300), seed=np.uint32(2), **kwargs)  # fmt: skip
    assert got == expected


def test_replicates_have_an_upper_bound(small):
    recs, truth = small
    with pytest.raises(sqlmetrics.ConventionError, match=r"from 1 to 100,000, got 100001 \(each replicate"):
        sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, by="model", baseline="A",
                           test="bootstrap", replicates=100_001)  # fmt: skip
    from sqlmetrics.stats.compare import check_options

    check_options("bootstrap", 0.95, "holm", 100_000, 0)


# ---- n: many systems: the replicate stage in batches, its own bounded temporary directory -------

from benchmarks.compare_systems import DATA as MANY_SYSTEMS  # noqa: E402 - the benchmark's data


def test_many_systems_fit_in_a_memory_limit(tmp_path, monkeypatch):
    """200 systems x 300 users x 2,000 replicates under a memory limit of 100 MB, with the
    partitions=4 that the old message advised: in one statement the randomization test ran out
    of memory in its replicates (its byte sums: a row per system, block of 32 replicates, hash
    byte and byte value), which partitions do not bound; in batches of systems it fits, and no
    temporary file of compare()'s is left."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute(MANY_SYSTEMS.format(systems=200, users=300))
    con.execute("SET memory_limit = '100MB'")
    out = sqlmetrics.compare(con, "recs", "ndcg@10", truth="truth", by="model", baseline="m0",
                             test="randomization", replicates=2000, partitions=4)  # fmt: skip
    assert out.num_rows == 199 and all(p is not None for p in out.column("p_value").to_pylist())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("sqlmetrics-compare-")] == []


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_batches_give_the_one_statements_table(monkeypatch, test):
    """Comparisons in 2^k batches (by a hash of segment and system; the baseline's rows in every
    batch), their rows put back in the one statement's order: the same table to the last bit,
    with segments, a NULL system and text systems."""
    from sqlmetrics.stats import replicate_stage

    recs, truth = make_data(40, models=("A", "B", "C", "D", "E", "F"))
    models = recs.column("model").to_pylist()
    recs = recs.set_column(0, "model", pa.array([None if m == "F" else m for m in models]))
    country = ["x" if u % 3 else "y" for u in recs.column("user_id").to_pylist()]
    recs = recs.append_column("country", pa.array(country))
    kwargs = dict(truth=truth, by="model", baseline="A", within="country", test=test, replicates=300)
    one = sqlmetrics.compare(duckdb.connect(), recs, METRICS_TWO, **kwargs)
    counts = []
    original = replicate_stage.batch_count
    monkeypatch.setattr(replicate_stage, "batch_count", lambda *a: counts.append(8) or 8)
    batched = sqlmetrics.compare(duckdb.connect(), recs, METRICS_TWO, **kwargs)
    assert counts == [8] and original(10, 300, 10**9) == 1
    assert batched.equals(one)
    assert one.num_rows == 2 * 5 * 2  # segments x systems x metrics


METRICS_TWO = ["ndcg@10", "precision@5"]


def test_the_private_connection_and_its_temporary_directory(tmp_path, monkeypatch):
    """The replicate stage's connection: a share of the caller's memory limit, its threads, a temporary
    directory of its own under the system's temp (TMPDIR), at most 10x the memory limit,
    removed when the stage ends, even when it fails."""
    from sqlmetrics.stats import replicate_stage

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    con = duckdb.connect()
    con.execute("SET memory_limit = '200MB'")
    con.execute("SET threads = 1")
    with pytest.raises(RuntimeError), replicate_stage.private_connection(con) as private:
        names = "('temp_directory', 'memory_limit', 'threads', 'max_temp_directory_size')"
        query = f"SELECT name, value FROM duckdb_settings() WHERE name IN {names}"
        setting = dict(private.execute(query).fetchall())
        directory = setting["temp_directory"]
        assert directory.startswith(str(tmp_path / "sqlmetrics-compare-"))
        assert setting["threads"] == "1"
        limit = replicate_stage.size_setting(private, "memory_limit")
        assert limit == pytest.approx(replicate_stage.memory_share(con), rel=1e-3) and limit <= 200 * 10**6
        assert replicate_stage.size_setting(private, "max_temp_directory_size") <= 10 * 200 * 10**6
        assert os.path.isdir(directory)
        raise RuntimeError
    assert not os.path.exists(directory)
    assert con.execute("SELECT current_setting('temp_directory')").fetchall() == [(".tmp",)]


def test_the_private_connection_gets_what_the_callers_memory_limit_leaves():
    # both connections are in one process: the private one's limit is the caller's less what
    # the caller's buffer pool holds and the Arrow values it reads, at least a quarter of it
    from sqlmetrics.stats import replicate_stage

    con = duckdb.connect()
    con.execute("SET memory_limit = '1GB'")
    limit = replicate_stage.size_setting(con, "memory_limit")
    empty = replicate_stage.memory_share(con)
    assert limit - 50 * 10**6 < empty <= limit
    con.execute("CREATE TABLE held AS SELECT range AS a, range * 2 AS b FROM range(20000000)")
    used = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0]
    assert used > 200 * 10**6
    assert replicate_stage.memory_share(con) == limit - used
    assert replicate_stage.memory_share(con, held=100 * 10**6) == limit - used - 100 * 10**6
    assert replicate_stage.memory_share(con, held=10**10) == int(limit * replicate_stage.MIN_SHARE)


def test_out_of_memory_in_the_replicates_gives_the_right_advice(tmp_path, monkeypatch, small):
    from sqlmetrics.engines.duckdb import DuckDBEngine
    from sqlmetrics.stats import replicate_stage

    class Starved(DuckDBEngine):
        def run(self, sql):
            if "replicate_summary" in sql:
                raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")
            return super().run(sql)

    monkeypatch.setattr(replicate_stage, "DuckDBEngine", Starved)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    recs, truth = small
    with pytest.raises(sqlmetrics.OutOfMemoryError) as raised:
        sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, by="model", baseline="A",
                           test="bootstrap", replicates=100)  # fmt: skip
    message = str(raised.value)
    assert "in the replicates of test='bootstrap'" in message
    assert "partitions=N does not bound this stage" in message and "fewer replicates" in message
    assert list(tmp_path.iterdir()) == []


def test_duckdbs_hash_is_fmix32_at_the_edges_of_32_bits():
    # DuckDB multiplies in one UBIGINT product where the other engines take two BIGINT ones and
    # a split (sql/compare/hashing.sql.j2; their form is checked against the same reference by
    # tests/test_compare_engines.py): fmix32 of the numpy reference, on the values where a
    # product or a mask could go wrong
    from sqlmetrics.statement.templates import environment
    from tests.compare_reference import fmix32

    values = [0, 1, 2**16 - 1, 2**16, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1, 0x9E3779B9, 123456789]
    text = environment().from_string(
        "{% from 'compare/hashing.sql.j2' import mix with context %}"
        "{{ mix('SELECT _i, _x AS _m FROM _values', '_i, ') }}"
    ).render(dialect="duckdb")
    assert "UBIGINT" in text
    rows = ", ".join(f"({i}, CAST({v} AS BIGINT))" for i, v in enumerate(values))
    con = duckdb.connect()
    query = f"WITH _values(_i, _x) AS (VALUES {rows}) SELECT _m FROM ({text}) ORDER BY _i"
    got = con.execute(query).fetchall()
    assert [g for (g,) in got] == [int(v) for v in fmix32(np.array(values, dtype=np.uint64))]

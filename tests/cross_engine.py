"""Cross-checks of another engine against DuckDB and the plain-Python reference, on the same
random data as tests/test_against_reference.py (tests/strategies.py): every metric per user
and aggregated, equal to 1e-9."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import reference

import sqlmetrics

DUCKDB = duckdb.connect()

# the conventions of tests/test_against_reference.py (some of them combined)
CASES = [
    {},
    {"ties": "item_asc"},
    {"ties": "trec_eval"},
    {"ties": "average"},
    {"ties": "average", "gain": "exponential", "threshold": 2},
    {"ties": "evidently", "short_lists": "evidently", "empty": "skip"},
    {"gain": "exponential"},
    {"empty": "skip"},
    {"missing": "zero"},
    {"missing": "zero", "empty": "skip", "ties": "item_asc"},
    # min_k with Evidently's short lists, in one case: each Spark query costs seconds
    {"ap_denominator": "min_k", "short_lists": "evidently", "missing": "zero", "threshold": 2},
    {"threshold": 2},
    {"threshold": 2, "empty": "skip", "ties": "trec_eval"},
    {"duplicates": "all"},
]


def case_id(conventions: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in conventions.items()) or "defaults"


def metric_names(ks: list[int], ties: str, with_r_precision: bool) -> list[str]:
    # ties 'average' and 'evidently' refuse the order statistics
    names = reference.TIE_AVERAGED if ties in ("average", "evidently") else reference.CUTOFF_METRICS
    labels = [f"{name}@{k}" for name in names for k in ks]
    if with_r_precision and ties not in ("average", "evidently"):
        labels.append("r_precision")
    return labels


def close(actual, expected) -> bool:
    if expected is None:
        return actual is None
    return actual is not None and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9)


def _unit(data) -> list[str]:
    """The unit's key columns: several for strategies.UnitData, else user_id."""
    return getattr(data, "key", ["user_id"])


def _rows(con, data, metrics, per_user, conventions) -> list[dict]:
    unit = _unit(data)
    table = sqlmetrics.evaluate(
        con, data.recs_table(), metrics, truth=data.truth_table(),
        by="model" if data.grouped else None, per_user=per_user,
        user=unit if len(unit) > 1 else unit[0], **conventions,
    )
    assert isinstance(table, pa.Table)
    return table.to_pylist()


def _keyed(rows: list[dict], key) -> dict:
    out = {key(row): row for row in rows}
    assert len(out) == len(rows), "a (group, user) pair or a group is reported twice"
    return out


def check_engine(con, data, metrics, conventions) -> None:
    """`con`'s results equal DuckDB's and the reference's, per user and aggregated, to 1e-9."""
    # the random data hold no duplicate, so `duplicates` changes no number (the reference lacks it)
    options = {k: v for k, v in conventions.items() if k != "duplicates"}
    expected_users, expected_groups = reference.evaluate(data.recs, metrics, data.truth, **options)
    unit = _unit(data)
    user_key = lambda row: (  # noqa: E731
        row.get("model"), tuple(row[c] for c in unit) if len(unit) > 1 else row["user_id"]
    )
    group_key = lambda row: row.get("model")  # noqa: E731

    # (on DuckDB itself, tests/test_units.py, once: the same statement would run twice)
    actual = _keyed(_rows(con, data, metrics, True, conventions), user_key)
    duck = actual if con is DUCKDB else _keyed(_rows(DUCKDB, data, metrics, True, conventions), user_key)
    assert set(actual) == set(duck) == set(expected_users)
    for key, expected in expected_users.items():
        wrong = {
            m: (actual[key][m], duck[key][m], expected[m])
            for m in metrics
            if not (close(actual[key][m], expected[m]) and close(actual[key][m], duck[key][m]))
        }
        assert not wrong, f"(group, user) = {key}: (engine, duckdb, reference) = {wrong}"

    actual = _keyed(_rows(con, data, metrics, False, conventions), group_key)
    duck = actual if con is DUCKDB else _keyed(_rows(DUCKDB, data, metrics, False, conventions), group_key)
    assert set(actual) == set(duck)
    for group, row in duck.items():
        assert actual[group]["users"] == row["users"]
        wrong = {m: (actual[group][m], row[m]) for m in metrics if not close(actual[group][m], row[m])}
        assert not wrong, f"group {group}: (engine, duckdb) = {wrong}"
        if group in expected_groups:
            assert row["users"] == expected_groups[group]["users"]
            wrong = {
                m: (actual[group][m], expected_groups[group][m])
                for m in metrics
                if not close(actual[group][m], expected_groups[group][m])
            }
            assert not wrong, f"group {group}: (engine, reference) = {wrong}"


def assert_close_tables(actual: pa.Table, expected: pa.Table) -> None:
    """Same columns, types and rows; floats equal to 1e-9 (engines round their decimal terms
    differently in the last digits: PostgreSQL casts a double to NUMERIC with 15 digits)."""
    assert actual.schema == expected.schema
    a, e = actual.to_pylist(), expected.to_pylist()
    assert len(a) == len(e)
    for row_a, row_e in zip(a, e, strict=True):
        for name, value in row_e.items():
            if isinstance(value, float):
                assert close(row_a[name], value), (name, row_a[name], value)
            else:
                assert row_a[name] == value, (name, row_a[name], value)


# ---- checks every engine's test module runs, on its own connection ---------------------------------

# recs that every engine's own in-statement checks must refuse: (recs, error, message)
BAD_RECS = [
    (pa.table({"user_id": [1, 1], "item_id": ["a", None], "score": [0.5, 0.4]}),
     sqlmetrics.InvalidDataError, r"^recs \(recs Table\) has a NULL item_id for user_id = 1$"),
    (pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "score": [0.5, float("nan")]}),
     sqlmetrics.InvalidDataError, "has a NaN or infinite score for user_id = 1$"),
    (pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "score": [0.5, float("inf")]}),
     sqlmetrics.InvalidDataError, "has a NaN or infinite score for user_id = 1$"),
    (pa.table({"user_id": [1, 1], "item_id": ["a", "a"], "score": [0.5, 0.4]}),
     sqlmetrics.DuplicateRowError, r"has a duplicate \(user_id, item_id\) for user_id = 1$"),
    # a NULL user evaluates nobody: the statement must fail all the same
    (pa.table({"user_id": pa.array([None], pa.int64()), "item_id": ["a"], "score": [0.5]}),
     sqlmetrics.InvalidDataError, "has a NULL user_id$"),
]


def check_graded_actions_and_rank(con, odd_action: str) -> None:
    """Action grades from a truth log (several actions on one pair: the highest) with a rank
    column give DuckDB's numbers; odd_action is an action name with characters the engine's
    string literals must escape."""
    events = pa.table({
        "user_id": [1, 1, 1, 2],
        "item_id": ["a", "a", "b", "c"],
        "event_type": ["view", "purchase", odd_action, "add_to_cart"],
    })
    ranked = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "c"], "pos": [2, 1, 1]})
    options = dict(truth=events, action="event_type", rank="pos",
                   relevance={"purchase": 3, "add_to_cart": 2, "view": 1, odd_action: 0.5})
    expected = sqlmetrics.evaluate(DUCKDB, ranked, ["ndcg@2", "cg@2"], **options)
    assert_close_tables(sqlmetrics.evaluate(con, ranked, ["ndcg@2", "cg@2"], **options), expected)


BEYOND = ["fcp", "fcp_surprise", "catalog_coverage", "distributional_coverage", "gini", "novelty",
          "popularity", "diversity", "serendipity", "personalization"]


def beyond_data(seeds, text_items: bool, overlap: bool = False):
    """The random data of tests/test_beyond_accuracy.py (its case()), several seeds as ONE data
    set: seed s's users become s * 1000 + user and its lists the group (model) "s<seed>/<a|b>",
    so that one query checks them all (each query costs a second on Spark). Returns recs, truth,
    history, item_features (a vector for most items) and a catalog of every item, as Arrow."""
    import random

    from test_beyond_accuracy import case

    recs, truth, history = [], [], []
    for s in seeds:
        r, t, h = case(s, text_items=text_items, overlap=overlap, groups=True)
        recs += [{**row, "user_id": s * 1000 + row["user_id"], "model": f"s{s}/{row['model']}"} for row in r]
        truth += [{**row, "user_id": s * 1000 + row["user_id"]} for row in t]
        history += [{**row, "user_id": s * 1000 + row["user_id"]} for row in h]
    rng = random.Random(len(recs))
    items = sorted({r["item_id"] for r in recs} | {h["item_id"] for h in history})
    vectors = {i: [rng.choice((0.0, 0.5, 1.0, -2.0)) for _ in range(3)] for i in items if rng.random() < 0.8}
    vector_column = pa.array(list(vectors.values()), pa.list_(pa.float64()))
    features = pa.table({"item_id": list(vectors), "features": vector_column})
    catalog = pa.table({"item_id": items})
    rows = (pa.Table.from_pylist(r) for r in (recs, truth, history))
    return *rows, features, catalog


def _same_rows(actual: pa.Table, expected: pa.Table, key) -> None:
    """The same rows (by `key`) and values, floats to 1e-9."""
    a, e = _keyed(actual.to_pylist(), key), _keyed(expected.to_pylist(), key)
    assert set(a) == set(e)
    for k, row in e.items():
        wrong = {
            name: (a[k][name], value) for name, value in row.items() if not close_or_equal(a[k][name], value)
        }
        assert not wrong, f"{k}: (engine, duckdb) = {wrong}"


def close_or_equal(actual, expected) -> bool:
    return close(actual, expected) if isinstance(expected, float) else actual == expected


def check_beyond_accuracy(con) -> None:
    """Every beyond-accuracy metric on `con` equals DuckDB's to 1e-9, aggregated by group and
    per user, on the random data of tests/test_beyond_accuracy.py: truth and single-table
    modes, co-occurrence and vector similarity, the default and an explicit catalog, integer
    and text items, recommended items already in history."""
    by_group = lambda row: row["model"]  # noqa: E731
    by_user = lambda row: (row["model"], row["user_id"])  # noqa: E731
    for seeds, text_items, overlap in (((0, 2, 4, 6), False, False), ((1, 3, 5), True, True)):
        recs, truth, history, features, catalog = beyond_data(seeds, text_items, overlap)
        runs = [
            # every metric (and a ranking one) over truth and history, by group
            (["fcp", "fcp_surprise", "ndcg@3"] + [f"{m}@{k}" for m in BEYOND[2:] for k in (1, 3)],
             dict(truth=truth, history=history), by_group),
            # per user: the metrics with a per-user value
            (["fcp", "novelty@2", "popularity@3", "diversity@4", "serendipity@3", "recall@3"],
             dict(truth=truth, history=history, per_user=True), by_user),
            # similarity of feature vectors; an explicit catalog
            (["diversity@3", "serendipity@10", "catalog_coverage@2", "gini@4"],
             dict(truth=truth, history=history, item_features=features, catalog=catalog), by_group),
            # single-table mode: the relevance column of recs
            (["fcp", "fcp_surprise", "serendipity@4", "personalization@2"],
             dict(recs=recs.append_column("relevance", pa.array([i % 3 for i in range(recs.num_rows)])),
                  history=history), by_group),
        ]
        for metrics, options, key in runs:
            given = options.pop("recs", recs)
            expected = sqlmetrics.evaluate(DUCKDB, given, metrics, by="model", **options)
            actual = sqlmetrics.evaluate(con, given, metrics, by="model", **options)
            assert actual.schema == expected.schema
            _same_rows(actual, expected, key)


def check_beyond_accuracy_errors(con) -> None:
    """The beyond-accuracy inputs' checks run in the engine's statement: the same errors."""
    import pytest

    recs = pa.table({"user_id": [1, 1], "item_id": [1, 2], "score": [0.9, 0.5]})
    with pytest.raises(sqlmetrics.InvalidDataError, match="has a NULL user_id"):
        history = pa.table({"user_id": [1, None], "item_id": [3, 4]})
        sqlmetrics.evaluate(con, recs, ["novelty@2"], history=history)
    with pytest.raises(sqlmetrics.InvalidDataError, match="which catalog"):
        sqlmetrics.evaluate(con, recs, ["catalog_coverage@2"], catalog=pa.table({"item_id": [1, 3]}))
    bad = pa.table({"item_id": [1, 2], "features": [[1.0, 0.0], [float("nan"), 1.0]]})
    with pytest.raises(sqlmetrics.InvalidDataError, match="NaN or infinite element"):
        sqlmetrics.evaluate(con, recs, ["diversity@2"], item_features=bad)
    bad = pa.table({"item_id": [1, 2], "features": [[1.0], [1.0, 2.0]]})
    with pytest.raises(sqlmetrics.InvalidDataError, match="vectors of different lengths"):
        sqlmetrics.evaluate(con, recs, ["diversity@2"], item_features=bad)


# sums whose terms cancel, or sit at the edges of a scale (2^53 and up, once scaled), where an
# engine's conversion of a double to its wide integer must be exact
CANCELLING_SUMS = [[1.0, -(1 - 2**-52)], [2.0**-80] * 3, [0.3, 0.7, 1e-9], [-(2**53 + 2) * 2.0**-85],
                   [1e-3, -1e-3 + 1e-12, 5e-13]]


def check_exact_sum_forms(scalar, dialect: str) -> None:
    """Every form of exact_sum (fast, counted, wide) over CANCELLING_SUMS, run by `scalar`
    (SQL text -> its one value) on the engine of `dialect`: math.fsum's value, to the bit
    for the fast forms, or NaN (the fast forms only: then the wide form runs), and within
    1e-15 of the largest term for the wide form."""
    import math

    from sqlmetrics.statement.templates import environment

    double = {"duckdb": "DOUBLE", "spark": "DOUBLE", "postgres": "DOUBLE PRECISION"}[dialect]
    template = ("{% import 'exact_sum.sql.j2' as sums with context %}"
                "{{ sums.exact_sum('x', 1, rounding=rounding) }}")
    for values in CANCELLING_SUMS:
        rows = ", ".join(f"(CAST('{v!r}' AS {double}))" for v in values)
        for form, rounding in (("fast", False), ("fast", True), ("wide", False)):
            text = environment().from_string(template).render(
                dialect=dialect, exact_sums=form, rounding=rounding
            )
            got, want = scalar(f"SELECT {text} AS s FROM (VALUES {rows}) AS t(x)"), math.fsum(values)
            if form == "wide":
                assert abs(got - want) <= 1e-15 * max(abs(v) for v in values), (values, form, got, want)
            else:  # exact terms give the exact sum; the last case's rounded terms cancel: NaN
                exact_terms = values is not CANCELLING_SUMS[-1]
                assert got == want or (math.isnan(got) and not exact_terms), (values, form, rounding, got)


def graded_across(seed: int, users: int, items: int, top_score: int, share: float, exponent: float):
    """recs of `items` items per user (integer scores 0..top_score, so ties) and truth with a
    `share` of them graded 10^u, u uniform in +-exponent: grades across the double range."""
    import random

    rng = random.Random(seed)
    recs, truth = [], []
    for user in range(users):
        for item in range(items):
            recs.append((user, item, float(rng.randint(0, top_score))))
            if rng.random() < share:
                truth.append((user, item, 10.0 ** rng.uniform(-exponent, exponent)))
    def table(names: tuple[str, ...], rows: list[tuple]) -> pa.Table:
        return pa.Table.from_pylist([dict(zip(names, row, strict=True)) for row in rows])

    return table(("user_id", "item_id", "score"), recs), table(("user_id", "item_id", "relevance"), truth)


def check_exact_sums(con) -> None:
    """Sums over the whole range of finite doubles on `con` (tests/test_exact_sums.py on
    DuckDB): grades from 1e-150 to 1e150 (PostgreSQL fails a division that underflows: ndcg
    of 1e-300 / 1e300) and exponential gains from grade 67 give DuckDB's
    numbers to 1e-15, per user and as means, and the same bits for shuffled rows."""

    def table(names, rows):
        return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})

    recs, truth = graded_across(5, users=40, items=6, top_score=3, share=0.7, exponent=150)
    metrics = ["ndcg@3", "dcg@3", "idcg@3", "cg@6", "map@6"]
    for per_user in (False, True):
        options = dict(truth=truth, threshold=1e-300, per_user=per_user)
        expected = sqlmetrics.evaluate(DUCKDB, recs, metrics, **options)
        actual = sqlmetrics.evaluate(con, recs, metrics, **options)
        for want, got in zip(expected.to_pylist(), actual.to_pylist(), strict=True):
            for m in metrics:
                assert got[m] == want[m] or abs(got[m] - want[m]) <= 1e-15 * abs(want[m]), (m, got, want)
    backwards = [t.take(list(reversed(range(t.num_rows)))) for t in (recs, truth)]
    assert (sqlmetrics.evaluate(con, backwards[0], metrics, truth=backwards[1], threshold=1e-300).to_pylist()
            == sqlmetrics.evaluate(con, recs, metrics, truth=truth, threshold=1e-300).to_pylist())
    # exponential gain from grade 67 (2^67 - 1 > 1e20) and ties="average"
    grades = table(["user_id", "item_id", "relevance"], [(1, 0, 67.0), (1, 1, 3.0), (1, 2, 70.0)])
    lists = table(["user_id", "item_id", "score"], [(1, 0, 1.0), (1, 1, 1.0), (1, 2, 0.5)])
    for ties in ("item_desc", "average"):
        options = dict(truth=grades, gain="exponential", ties=ties)
        [want] = sqlmetrics.evaluate(DUCKDB, lists, ["ndcg@2", "dcg@3"], **options).to_pylist()
        [got] = sqlmetrics.evaluate(con, lists, ["ndcg@2", "dcg@3"], **options).to_pylist()
        assert all(abs(got[m] - want[m]) <= 1e-15 * abs(want[m]) for m in ("ndcg@2", "dcg@3")), (got, want)


def event_log_data(seed: int = 18):
    """Random recs in two groups and a truth log that repeats (user, item) rows, each copy with
    its own grade (negative and fractional ones too), as reference rows and as Arrow tables."""
    import random

    from strategies import SCORES, STR_ITEMS

    rng = random.Random(seed)
    recs, truth = [], []
    for user in range(1, 41):
        for group in ("m1", "m2"):
            if rng.random() < 0.8:
                for item in rng.sample(STR_ITEMS, rng.randint(1, 6)):
                    recs.append({"user": user, "item": item, "score": rng.choice(SCORES), "group": group})
        if rng.random() < 0.85:
            for item in rng.sample(STR_ITEMS, rng.randint(1, 5)):
                for _ in range(rng.choice((1, 1, 2, 3, 4))):
                    grade = rng.choice((-1, 0, 0.5, 1, 1, 2, 3))
                    truth.append({"user": user, "item": item, "relevance": grade})
    rng.shuffle(truth)
    recs_table = pa.table({
        "user_id": [r["user"] for r in recs], "item_id": [r["item"] for r in recs],
        "score": [float(r["score"]) for r in recs], "model": [r["group"] for r in recs],
    })  # fmt: skip
    truth_table = pa.table({
        "user_id": [r["user"] for r in truth], "item_id": [r["item"] for r in truth],
        "relevance": [float(r["relevance"]) for r in truth],
    })  # fmt: skip
    return recs, truth, recs_table, truth_table


def check_truth_duplicates(con) -> None:
    """truth_duplicates='max' and 'sum' on `con` equal the reference per user and DuckDB per
    group, to 1e-9; action grades add up under 'sum'; fcp and serendipity read the same
    grades; the default still refuses the repeated pairs."""
    import pytest

    recs, truth, recs_table, truth_table = event_log_data()
    metrics = [f"{m}@{k}" for m in reference.CUTOFF_METRICS for k in (1, 3, 5)] + ["r_precision"]
    for how, conventions in (("max", {"threshold": 2}), ("sum", {"threshold": 2, "missing": "zero"})):
        options = dict(truth=truth_table, by="model", truth_duplicates=how, **conventions)
        expected, _ = reference.evaluate(recs, metrics, truth, truth_duplicates=how, **conventions)
        rows = sqlmetrics.evaluate(con, recs_table, metrics, per_user=True, **options).to_pylist()
        actual = _keyed(rows, lambda row: (row["model"], row["user_id"]))
        assert set(actual) == set(expected)
        for key, values in expected.items():
            wrong = {m: (actual[key][m], values[m]) for m in metrics if not close(actual[key][m], values[m])}
            assert not wrong, f"{how} {key}: (engine, reference) = {wrong}"
        assert_close_tables(
            sqlmetrics.evaluate(con, recs_table, metrics, **options),
            sqlmetrics.evaluate(DUCKDB, recs_table, metrics, **options),
        )
        history = recs_table.select(["user_id", "item_id"])
        beyond = dict(options, history=history)
        assert_close_tables(
            sqlmetrics.evaluate(con, recs_table, ["fcp", "serendipity@3", "ndcg@3"], **beyond),
            sqlmetrics.evaluate(DUCKDB, recs_table, ["fcp", "serendipity@3", "ndcg@3"], **beyond),
        )
    names = ["purchase", "add_to_cart", "view", "dislike", "share"]
    events = truth_table.drop(["relevance"]).append_column(
        "event_type", pa.array([names[i % len(names)] for i in range(truth_table.num_rows)])
    )
    grades = {"purchase": 3, "add_to_cart": 2, "view": 1, "dislike": -2}
    graded = [{**r, "relevance": grades.get(names[i % len(names)], 0)} for i, r in enumerate(truth)]
    options = dict(truth=events, by="model", action="event_type", relevance=grades, truth_duplicates="sum")
    expected, _ = reference.evaluate(recs, ["ndcg@5", "precision@3"], graded, truth_duplicates="sum")
    rows = sqlmetrics.evaluate(con, recs_table, ["ndcg@5", "precision@3"], per_user=True, **options)
    actual = _keyed(rows.to_pylist(), lambda row: (row["model"], row["user_id"]))
    assert set(actual) == set(expected)
    assert all(close(actual[k][m], v[m]) for k, v in expected.items() for m in ("ndcg@5", "precision@3"))
    with pytest.raises(sqlmetrics.DuplicateRowError, match="has a duplicate .*truth_duplicates='max'"):
        sqlmetrics.evaluate(con, recs_table, ["ndcg@3"], truth=truth_table, by="model")


def check_beyond_accuracy_units(con) -> None:
    """The beyond-accuracy metrics over (user, day) units equal DuckDB's: recs and truth keyed
    by both columns, history by the user only (joined on the key columns it has)."""
    import datetime

    recs, truth, history, features, _ = beyond_data((0, 3), text_items=False, overlap=True)
    day0 = datetime.date(2026, 11, 1)

    def rekey(table: pa.Table, with_day: bool) -> pa.Table:
        rows = table.to_pylist()
        for row in rows:
            user = row.pop("user_id")
            row["user_id"] = user // 2
            if with_day:
                row["day"] = day0 + datetime.timedelta(days=user % 2)
        return pa.Table.from_pylist(rows)

    recs, truth, history = rekey(recs, True), rekey(truth, True), rekey(history, False)
    unit = ["user_id", "day"]
    by_group = lambda row: row["model"]  # noqa: E731
    by_unit = lambda row: (row["model"], row["user_id"], row["day"])  # noqa: E731
    runs = [
        (["fcp", "ndcg@3", "novelty@2", "popularity@3", "diversity@3", "serendipity@3",
          "personalization@2", "catalog_coverage@2", "gini@3"], {}, by_group),
        (["fcp", "novelty@2", "diversity@3", "serendipity@3", "recall@3"], {"per_user": True}, by_unit),
        (["diversity@3", "serendipity@4"], {"item_features": features}, by_group),
    ]  # fmt: skip
    for metrics, options, key in runs:
        options = dict(truth=truth, history=history, user=unit, by="model", **options)
        expected = sqlmetrics.evaluate(DUCKDB, recs, metrics, **options)
        actual = sqlmetrics.evaluate(con, recs, metrics, **options)
        assert actual.schema == expected.schema
        _same_rows(actual, expected, key)


# trec_eval's measures and the whole-list names (tests/test_trec_measures.py checks DuckDB's
# against trec_eval); the tie-averaged subset under ties="average"
TREC_MEASURES = [
    "bpref", "gm_map", "gm_map@3", *(f"iprec_at_recall_{level / 10:.2f}" for level in range(11)),
    "11pt_avg", "num_q", "num_ret", "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F",
    "set_F.0.5", "success@2", "judged@2", "judged", "ndcg", "map", "recall", "mrr", "precision",
]
TREC_AVERAGED = ["num_q", "num_ret", "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F",
                 "set_F.2", "success@2", "judged@2", "judged", "ndcg", "recall", "precision"]
TREC_CASES = [{}, {"threshold": 2, "missing": "zero"}, {"ties": "average", "empty": "skip"}]


def check_trec_measures(con, data) -> None:
    """`con`'s trec_eval measures equal DuckDB's, per user and aggregated (sums, geometric
    means), to 1e-9, under each of TREC_CASES."""
    by = "model" if data.grouped else None
    for conventions in TREC_CASES:
        metrics = TREC_AVERAGED if conventions.get("ties") == "average" else TREC_MEASURES
        for per_user in (True, False):
            options = dict(truth=data.truth_table(), by=by, per_user=per_user, **conventions)
            expected = sqlmetrics.evaluate(DUCKDB, data.recs_table(), metrics, **options)
            actual = sqlmetrics.evaluate(con, data.recs_table(), metrics, **options)
            assert_close_tables(actual.cast(expected.schema), expected)


# the rest of trec_eval's all_trec (test_all_trec_oracle.py checks DuckDB's against trec_eval)
ALL_TREC_REST = [
    "infAP", "gm_bpref", "Rprec_mult_0.20", "Rprec_mult_1.40", "utility", "binG", "G", "ndcg_rel",
    "Rndcg", "relative_P@2", "relative_P", "set_relative_P", "set_map", "num_nonrel_judged_ret",
    "rbp", "rbp_resid", "unj@2", "unj", "relstring",
    # and err@k, nerr@k, RBP under the peers' names
    "err@3", "err", "nerr@3", "nERR(max_grade=2)@4", "rbp_gain@3", "RBP(p=0.5)", "rbp.95",
]  # fmt: skip
ALL_TREC_CASES = [{}, {"threshold": 2, "missing": "zero"}, {"empty": "skip"}]


def check_all_trec(con, data) -> None:
    """`con`'s values of ALL_TREC_REST equal DuckDB's, per user and aggregated, to 1e-9 (the
    text of relstring exactly), under each of ALL_TREC_CASES."""
    by = "model" if data.grouped else None
    for conventions in ALL_TREC_CASES:
        for per_user in (True, False):
            options = dict(truth=data.truth_table(), by=by, per_user=per_user, **conventions)
            expected = sqlmetrics.evaluate(DUCKDB, data.recs_table(), ALL_TREC_REST, **options)
            actual = sqlmetrics.evaluate(con, data.recs_table(), ALL_TREC_REST, **options)
            assert_close_tables(actual.cast(expected.schema), expected)

"""Other tools' metric names: a table per peer of what each name means (the pure mapping,
sqlmetrics/names/peer_names.py), then evaluation through those names, for the metrics this version
has (read from the registry at run time, so metrics added later are covered too), against the
pure-Python reference and against ranx itself."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest
import reference
from trec_eval_data import DATA

import sqlmetrics
from sqlmetrics.errors import SqlMetricsError, UnknownMetricError
from sqlmetrics.names.metric_names import parse_metrics
from sqlmetrics.names.peer_names import PeerName, resolve, trec_position

T2 = (("threshold", 2),)
EXP = (("gain", "exponential"),)

# name -> (sqlmetrics name, conventions of that metric alone)
TREC_EVAL = {
    "P_10": ("precision@10", ()),
    "P_1000": ("precision@1000", ()),
    "recall_5": ("recall@5", ()),
    "ndcg_cut_10": ("ndcg@10", ()),
    "map_cut_100": ("map@100", ()),
    "success_1": ("hit_rate@1", ()),
    "recip_rank": ("mrr", ()),
    "Rprec": ("r_precision", ()),
    "map": ("map", ()),
    "ndcg": ("ndcg", ()),
    "recall": ("recall", ()),
    "bpref": ("bpref", ()),
    "gm_map": ("gm_map", ()),
    "iprec_at_recall_0.50": ("iprec_at_recall_0.50", ()),
    "iprec_at_recall_1.00": ("iprec_at_recall_1.00", ()),
    "11pt_avg": ("11pt_avg", ()),
    "num_q": ("num_q", ()),
    "num_ret": ("num_ret", ()),
    "num_rel": ("num_rel", ()),
    "num_rel_ret": ("num_rel_ret", ()),
    "set_P": ("set_P", ()),
    "set_recall": ("set_recall", ()),
    "set_F": ("set_F", ()),
    "infAP": ("infAP", ()),
    "utility": ("utility", ()),
    "relative_P_5": ("relative_P@5", ()),
    "unj_10": ("unj@10", ()),
    "rbp": ("rbp", ()),
}
RANX = {
    "ndcg@10": ("ndcg@10", ()),
    "ndcg_burges@10": ("ndcg@10", EXP),
    "ndcg@10-l2": ("ndcg@10", (*T2, ("gain_from_threshold", True))),
    "ndcg_burges@5-l3": ("ndcg@5", (("threshold", 3), *EXP, ("gain_from_threshold", True))),
    "map@100": ("map@100", ()),
    "map@100-l2": ("map@100", T2),
    "mrr": ("mrr", ()),
    "mrr@10": ("mrr@10", ()),
    "hit_rate@5": ("hit_rate@5", ()),
    "r_precision": ("r_precision", ()),
    "r-precision-l2": ("r_precision", T2),
    "f1@10": ("f1@10", ()),
    "f1": ("set_F", ()),
    "precision@5-l2": ("precision@5", T2),
    "recall@20": ("recall@20", ()),
}
IR_MEASURES = {
    "nDCG@10": ("ndcg@10", ()),
    "nDCG": ("ndcg", ()),
    "P(rel=2)@5": ("precision@5", T2),
    "P@5": ("precision@5", ()),
    "AP": ("map", ()),
    "AP@100": ("map@100", ()),
    "AP(rel=2)@10": ("map@10", T2),
    "RR": ("mrr", ()),
    "RR@10": ("mrr@10", ()),
    "R@100": ("recall@100", ()),
    "Judged@10": ("judged@10", ()),
    "nDCG(dcg='exp-log2')@10": ("ndcg@10", EXP),
    "Success@5": ("hit_rate@5", ()),
    "Bpref": ("bpref", ()),
    "IPrec@0.5": ("iprec_at_recall_0.50", ()),
    "NumRet(rel=1)": ("num_rel_ret", (("threshold", 1),)),
    "SetF": ("set_F", ()),
}
TABLES = [("trec_eval", TREC_EVAL), ("ranx", RANX), ("ir_measures", IR_MEASURES)]
ROWS = [(peer, name, *meaning) for peer, table in TABLES for name, meaning in table.items()]


@pytest.mark.parametrize("peer, name, canonical, overrides", ROWS, ids=[r[1] for r in ROWS])
def test_each_name_maps_to_its_metric_and_conventions(peer, name, canonical, overrides):
    assert resolve(name).names == (PeerName(name, canonical, overrides, peer),)


def test_names_that_are_no_peers_are_not_resolved():
    for name in ["foo", "p_10", "ndcg_cut", "Ndcg@10", "P_", "AP@x"]:
        found = resolve(name)
        assert found is None or found.group, name


def _measures(expected_file: str) -> list[str]:
    lines = (DATA / expected_file).read_text().splitlines()
    return list(dict.fromkeys(line.split("\t")[0].strip() for line in lines))


def test_official_and_all_trec_list_trec_eval_s_measures_in_its_order():
    """The groups' members, put in trec_eval's print order, are the measures of the outputs
    trec_eval printed for -m official (its default) and -m all_trec."""
    for group, expected_file in [("official", "out.test"), ("all_trec", "out.test.a")]:
        mapped = [n.label for n in resolve(group).names if n.canonical is not None]
        if group == "all_trec":  # printed per query only (-q), in out.test.aq
            assert "relstring" in mapped and "relstring" in _measures("out.test.aq")
            mapped.remove("relstring")
        printed = _measures(expected_file)
        assert set(mapped) <= set(printed), group  # the default cutoffs and levels
        ours = sorted(mapped, key=lambda x: trec_position(x))
        assert ours == [m for m in printed if m in mapped], group  # trec_eval's order
        unmapped = {m for m in printed if resolve(m) is None or resolve(m).names[0].canonical is None}
        assert {m for m in printed if m not in mapped} == unmapped  # only those left out
    assert len(mapped) >= 60


def test_trec_eval_groups_with_parameters_read_cutoffs_as_trec_eval_does():
    assert [n.label for n in resolve("P").names] == [
        f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    ]
    assert [n.label for n in resolve("success").names] == ["success_1", "success_5", "success_10"]
    assert [n.label for n in resolve("P.5,7,3").names] == ["P_3", "P_5", "P_7"]  # sorted
    assert [n.label for n in resolve("ndcg_cut.10,20,23.4").names] == [  # atol("23.4") = 23
        "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23",
    ]  # fmt: skip
    assert [n.canonical for n in resolve("recall.20,2000").names] == ["recall@20", "recall@2000"]
    levels = resolve("iprec_at_recall..10,.5").names
    assert [n.label for n in levels] == ["iprec_at_recall_0.10", "iprec_at_recall_0.50"]
    with pytest.raises(UnknownMetricError, match="given twice"):
        resolve("P.5,5")
    with pytest.raises(UnknownMetricError, match="positive"):
        resolve("P.0,5")
    printed = set(_measures("out.test.meas_params"))
    for argument in ["P.5,7,3", "recall.20,2000", "ndcg_cut.10,20,23.4", "success.2,5,20"]:
        assert {n.label for n in resolve(argument).names} <= printed, argument


def test_group_members_are_the_ones_this_version_has():
    members = [m for m in resolve("all_trec").names if m.canonical is not None]
    parsed = parse_metrics(["all_trec"])
    have = []
    for m in members:
        try:
            parse_metrics([m.canonical])
        except UnknownMetricError:
            continue
        have.append(m.label)
    assert [m.label for m in parsed] == have
    assert len(have) >= 40


@pytest.mark.parametrize(
    "name, hint",
    [("P@10x", "unknown metric"), ("p_10", "did you mean 'P_10'"), ("Rprek", "did you mean 'Rprec'"),
     ("ndcg_cutt_10", "did you mean 'ndcg_cut_10'"), ("offical", "did you mean 'official'"),
     ("ndgc@10", "did you mean 'ndcg'"), ("runid", "does not compute"),
     ("nDCG(gains='x')@10", "no equivalent"), ("P(rel=0)@5", "positive")],
)  # fmt: skip
def test_unknown_names_suggest_every_accepted_name(name, hint):
    with pytest.raises(UnknownMetricError, match=hint):
        parse_metrics([name])


def test_a_name_is_requested_once_whatever_its_spelling():
    with pytest.raises(UnknownMetricError, match="requested twice"):
        parse_metrics(["P_10", "precision@10"])
    assert len(parse_metrics(["P_10", "P(rel=2)@10"])) == 2  # other conventions: another metric


# --- evaluation --------------------------------------------------------------------------------

CON = duckdb.connect()


def _data(seed: int, ties: bool):
    """Users with graded truth (0..3, -1 unjudged-negative), unretrieved truth, users without
    relevant items and (with ties) tied scores; every user has a list of 8 items."""
    rng = random.Random(seed)
    recs, truth = [], []
    for u in range(12):
        items = rng.sample(range(30), 8)
        for i, item in enumerate(items):
            score = float(rng.randint(0, 3)) if ties else float(100 - i) + rng.random() / 10
            recs.append({"user": f"u{u}", "item": f"d{item}", "score": score, "model": u % 2})
        for item in rng.sample(range(30), 10):
            truth.append({"user": f"u{u}", "item": f"d{item}", "relevance": rng.choice([-1, 0, 1, 1, 2, 3])})
    return recs, truth


def _tables(recs, truth):
    recs_t = pa.table({
        "user_id": [r["user"] for r in recs], "item_id": [r["item"] for r in recs],
        "score": [r["score"] for r in recs], "model": [r["model"] for r in recs],
    })  # fmt: skip
    truth_t = pa.table({
        "user_id": [r["user"] for r in truth], "item_id": [r["item"] for r in truth],
        "relevance": [r["relevance"] for r in truth],
    })  # fmt: skip
    return recs_t, truth_t


def _has(name: str) -> bool:
    try:
        parse_metrics([name])
    except SqlMetricsError:
        return False
    return True


# every row whose metric this version has; the reference knows the metrics of tests/reference.py
EVALUATED = [r for r in ROWS if r[2] is not None and _has(r[1])]


def test_enough_names_are_evaluated():
    assert len(EVALUATED) >= 25, [r[1] for r in EVALUATED]


@pytest.mark.parametrize("ties", [False, True])
def test_peer_names_give_their_metric_under_their_conventions(ties):
    """Per user, each name's column equals its sqlmetrics metric with the name's conventions
    passed as keywords, and the pure-Python reference where it has the metric."""
    recs, truth = _data(7, ties)
    recs_t, truth_t = _tables(recs, truth)
    by_user: dict = {}
    for r in recs:
        by_user.setdefault(r["user"], {})[r["item"]] = r["score"]
    judged: dict = {u: {} for u in by_user}
    for r in truth:
        judged[r["user"]][r["item"]] = r["relevance"]
    checked = 0
    for _, name, canonical, overrides in EVALUATED:
        if ("gain_from_threshold", True) in overrides:
            continue  # no keyword says it: checked against ranx below
        per_user = parse_metrics([canonical])[0].definition.per_user  # (num_q: only a sum)
        peer = sqlmetrics.evaluate(CON, recs_t, [name], truth=truth_t, per_user=per_user).to_pylist()
        own = sqlmetrics.evaluate(
            CON, recs_t, [canonical], truth=truth_t, per_user=per_user, **dict(overrides)
        ).to_pylist()
        assert list(peer[0]) == ["user_id" if per_user else "users", name]  # the column as typed
        assert [row[name] for row in peer] == [row[canonical] for row in own], name
        metric, k = reference.parse(canonical)
        if metric in reference.ALL_METRICS and (k is not None or metric == "r_precision"):
            for row in peer:
                u = row["user_id"]
                want = reference.user_metrics(by_user[u], judged[u], [canonical], **dict(overrides))
                assert row[name] == pytest.approx(want[canonical], abs=1e-12), (name, u)
            checked += 1
    assert checked >= 15


def test_metrics_with_their_own_conventions_run_apart_and_join_by_group():
    recs, truth = _data(3, False)
    recs_t, truth_t = _tables(recs, truth)
    names = ["P_5", "P(rel=2)@5", "ndcg@5-l2", "ndcg_cut_5", "nDCG(dcg='exp-log2')@5"]
    for per_user in (False, True):
        joined = sqlmetrics.evaluate(CON, recs_t, names, truth=truth_t, by="model", per_user=per_user)
        assert joined.column_names == ["model", "user_id" if per_user else "users", *names]
        for name in names:
            alone = sqlmetrics.evaluate(CON, recs_t, [name], truth=truth_t, by="model", per_user=per_user)
            assert joined.select(alone.column_names).to_pylist() == alone.to_pylist(), name
    # and the override really is the metric's alone: the default threshold elsewhere
    means = sqlmetrics.evaluate(CON, recs_t, ["P_5", "P(rel=2)@5"], truth=truth_t).to_pylist()[0]
    assert means["P_5"] > means["P(rel=2)@5"]


def test_metrics_with_their_own_conventions_share_one_statement():
    """P_5 (threshold 1) and P(rel=2)@5 in one call: one statement (sql() runs in plain DuckDB
    to evaluate()'s table), each column equal to its metric evaluated alone."""
    recs_t, truth_t = _tables(*_data(1, False))
    con = duckdb.connect()
    con.register("recs_t", recs_t)
    con.register("truth_t", truth_t)
    con.execute("CREATE TABLE recs AS SELECT * FROM recs_t; CREATE TABLE truth AS SELECT * FROM truth_t")
    names = ["P_5", "P(rel=2)@5"]
    together = sqlmetrics.evaluate(con, "recs", names, truth="truth", per_user=True)
    text = sqlmetrics.sql(con, "recs", names, truth="truth", per_user=True)
    assert con.sql(text).fetchall() == [tuple(row.values()) for row in together.to_pylist()]
    for name in names:
        alone = sqlmetrics.evaluate(con, "recs", [name], truth="truth", per_user=True)
        assert together.select(["user_id", name]).to_pylist() == alone.to_pylist()
    assert together.column("P_5") != together.column("P(rel=2)@5")  # the conventions differ


def test_ranx_names_give_ranx_numbers():
    """ranx itself (its conventions: no score ties here, lists longer than every k, every user
    in both inputs, so that its tie order and its short-list precision do not arise)."""
    ranx = pytest.importorskip("ranx")
    recs, truth = _data(11, False)
    recs_t, truth_t = _tables(recs, truth)
    names = [
        "ndcg@5", "ndcg@5-l2", "ndcg_burges@5", "ndcg_burges@5-l2", "map@5-l2", "mrr", "mrr@3",
        "precision@3-l2", "recall@5", "hit_rate@3", "r-precision-l2", "f1@3", "f1@3-l2", "ndcg",
    ]  # fmt: skip
    names = [n for n in names if _has(n)]
    assert len(names) >= 11
    grades: dict = {}
    for r in truth:
        if r["relevance"] >= 0:  # ranx takes no negative grade; below 1 it is not relevant anyway
            grades.setdefault(r["user"], {})[r["item"]] = r["relevance"]
    qrels = ranx.Qrels(grades)
    run = ranx.Run({u: {r["item"]: r["score"] for r in recs if r["user"] == u} for u in grades})
    theirs = ranx.evaluate(qrels, run, names, return_mean=False)
    ours = sqlmetrics.evaluate(CON, recs_t, names, truth=truth_t, per_user=True).to_pylist()
    ours = sorted((row for row in ours if row["user_id"] in grades), key=lambda row: row["user_id"])
    for name in names:
        assert [row[name] for row in ours] == pytest.approx(list(theirs[name]), abs=1e-9), name


def test_the_command_line_splits_metric_lists_around_peer_syntax():
    from sqlmetrics.cli.options import metric_list as _metric_list

    assert _metric_list("P.5,10,ndcg@10 map@5") == ["P.5,10", "ndcg@10", "map@5"]
    assert _metric_list("iprec_at_recall..10,.20,P_5") == ["iprec_at_recall..10,.20", "P_5"]
    assert _metric_list("nDCG(dcg='exp-log2', judged_only=True)@10,AP") == [
        "nDCG(dcg='exp-log2', judged_only=True)@10", "AP",
    ]  # fmt: skip


@pytest.mark.parametrize("command", ["sql", "compare"])
def test_sql_and_compare_still_need_metrics(command, capsys, tmp_path):
    from sqlmetrics.cli import main

    recs = tmp_path / "recs.csv"
    recs.write_text("user_id,item_id,score,relevance,model\n1,a,0.5,1,A\n")
    extra = ["--by", "model", "--baseline", "A"] if command == "compare" else []
    assert main([command, str(recs), *extra]) == 2
    assert "--metrics LIST is required" in capsys.readouterr().err


def test_a_peer_name_s_gain_reaches_a_profile_s_rule_for_its_metric():
    """Recommenders' ndcg reads the grades only with a gain other than binary: ndcg_burges@k
    (exponential gain by its name) under that profile is its ndcg with gain="exponential"."""
    recs_t, truth_t = _tables(*_data(3, False))
    named = sqlmetrics.evaluate(CON, recs_t, ["ndcg_burges@5"], truth=truth_t, profile="recommenders")
    keyword = sqlmetrics.evaluate(
        CON, recs_t, ["ndcg@5"], truth=truth_t, profile="recommenders", gain="exponential"
    )
    binary = sqlmetrics.evaluate(CON, recs_t, ["ndcg@5"], truth=truth_t, profile="recommenders")
    assert named.column("ndcg_burges@5").to_pylist() == keyword.column("ndcg@5").to_pylist()
    assert named.column("ndcg_burges@5") != binary.column("ndcg@5")


def test_compare_with_partitions_refuses_metrics_of_different_conventions():
    recs_t, truth_t = _tables(*_data(1, False))
    with pytest.raises(sqlmetrics.ConventionError, match="partitions=N"):
        sqlmetrics.compare(
            CON, recs_t, ["P_5", "P(rel=2)@5"], truth=truth_t, by="model", baseline=0, partitions=2
        )

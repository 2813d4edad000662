import os
import warnings

# ranx (a peer of tests/test_peer_names.py, test_profiles.py and test_compare.py) runs as the
# Python it is written in, not compiled by numba: on the tests' few users the compilation was
# all of its cost (a fresh environment, as in CI: test_ranx_names_give_ranx_numbers 68 s, 11.6 s
# with numba's cache; its ranx.evaluate call 0.02 s uncompiled against 4.9 s from that cache;
# the same numbers). The benchmarks run ranx compiled and check its numbers (benchmarks/run.py,
# compare_ranx.py; CI runs both). Set before anything imports numba, which reads it once.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

import duckdb  # noqa: E402
import pytest  # noqa: E402
from engines import postgres_server, spark_session, unavailable  # noqa: E402

# scripts the peers' own interpreters run (--doctest-modules would import them here, and
# obp_run.py puts a stand-in torch into sys.modules, which breaks pyspark's import in the same
# worker)
collect_ignore = ["obp_run.py", "recommenders_run.py", "evidently_run.py", "rbo_run.py"]


def pytest_xdist_auto_num_workers(config):
    """-n auto (pyproject.toml): a worker per core, at most 4. The Spark tests share one worker
    (pytest_collection_modifyitems); each worker that meets a PostgreSQL test starts its own
    server."""
    return max(1, min(os.cpu_count() or 1, 4))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups off the marks
def pytest_collection_modifyitems(config, items):
    """Every test of the Spark session runs in one xdist worker (`--dist loadgroup` in
    pyproject.toml): one JVM starts and warms up, instead of one per worker (a session takes
    about 10 s to start and its first statements run several times slower than later ones)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Say so when the xdist groups were lost (pytest-xdist names a group in the node id, which
    pytest 9.2 no longer lets it change): every worker would start and warm its own JVM (and
    run the peers' interpreters of tests/test_profiles.py)."""
    if not getattr(session.config.option, "loadgroup", False):  # (set in xdist's workers)
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        message = (f"the xdist_group of {len(lost)} tests did not reach pytest-xdist (pytest "
                   f"{pytest.__version__}): each worker starts its own Spark session")
        warnings.warn(pytest.PytestWarning(message), stacklevel=1)


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def spark():
    """THE SparkSession of the run (local[2], tests/engines.py): a JVM takes half a minute to
    start and longer to warm up, so every test that needs Spark shares this one."""
    with spark_session() as session:
        yield session


@pytest.fixture(scope="session")
def pg_uri():
    """THE throwaway PostgreSQL server of the run (tests/engines.py), shared by every test
    that needs one."""
    try:
        import adbc_driver_postgresql.dbapi  # noqa: F401
    except ImportError:
        unavailable("adbc-driver-postgresql is not installed: pip install -e '.[postgres]'")
    with postgres_server() as uri:
        yield uri


def table(con, name, columns, rows):
    """Create table `name` with `columns` ("user_id VARCHAR, ...") from a list of tuples."""
    con.execute(f"CREATE TABLE {name} ({columns})").fetchall()
    if rows:
        marks = ", ".join("?" for _ in rows[0])
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    return name

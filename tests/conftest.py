import os

import duckdb
import pytest
from engines import postgres_server, spark_session, unavailable


def pytest_xdist_auto_num_workers(config):
    """-n auto (pyproject.toml): a worker per core, at most 4. The Spark tests share one worker
    (pytest_collection_modifyitems); each worker that meets a PostgreSQL test starts its own
    server."""
    return max(1, min(os.cpu_count() or 1, 4))


def pytest_collection_modifyitems(config, items):
    """Every test of the Spark session runs in one xdist worker (`--dist loadgroup` in
    pyproject.toml): one JVM starts and warms up, instead of one per worker (a session takes
    about 10 s to start and its first statements run several times slower than later ones)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


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

import duckdb
import pytest
from engines import spark_session


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


def table(con, name, columns, rows):
    """Create table `name` with `columns` ("user_id VARCHAR, ...") from a list of tuples."""
    con.execute(f"CREATE TABLE {name} ({columns})").fetchall()
    if rows:
        marks = ", ".join("?" for _ in rows[0])
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    return name

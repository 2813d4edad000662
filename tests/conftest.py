import duckdb
import pytest


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def table(con, name, columns, rows):
    """Create table `name` with `columns` ("user_id VARCHAR, ...") from a list of tuples."""
    con.execute(f"CREATE TABLE {name} ({columns})").fetchall()
    if rows:
        marks = ", ".join("?" for _ in rows[0])
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    return name

"""Exceptions raised by sqlmetrics. The input errors are ValueErrors that describe the problem
in the caller's terms (column, table, metric names), never a SQL engine's internals; running out
of memory is DuckDB's own exception, with what to do about it."""

from __future__ import annotations

import duckdb


class SqlMetricsError(ValueError):
    """Base class of every error sqlmetrics raises about its inputs."""


class UnknownMetricError(SqlMetricsError):
    """A metric name that sqlmetrics does not know, or a bad cutoff in a metric name."""


class InvalidCutoffError(SqlMetricsError):
    """k is not a positive integer."""


class ConventionError(SqlMetricsError):
    """An unknown convention value, or a metric that cannot follow the chosen convention."""


class UnknownTableError(SqlMetricsError):
    """The input names no table, view or file that exists."""


class MissingColumnError(SqlMetricsError):
    """A named column is not in the input."""


class ColumnTypeError(SqlMetricsError):
    """A column has a type the metric cannot use (say, a text score)."""


class InvalidDataError(SqlMetricsError):
    """The data breaks a rule: NULL user, item or score, NaN or infinite score, tied ranks."""


class DuplicateRowError(InvalidDataError):
    """A (user, item) pair occurs twice in the recommendations or in the truth."""


class UnsupportedError(SqlMetricsError):
    """A metric, input or connection that the chosen engine or SQL dialect does not support."""


class MissingExtraError(SqlMetricsError):
    """An optional dependency that the requested computation needs is not installed."""

    @classmethod
    def scipy(cls, what: str) -> MissingExtraError:
        return cls(
            f"{what} needs scipy's distribution functions, which are not installed: "
            "pip install 'sqlmetrics[stats]'"
        )


class SqlMetricsWarning(UserWarning):
    """Base class of the warnings sqlmetrics gives: a result that is computed but likely not
    what was meant."""


class UnmatchedUnitsWarning(SqlMetricsWarning):
    """No unit (user) of the recommendations is in the truth (`U1` against `u1`): nothing was
    evaluated. The message gives both sides' counts and an example id of each."""


class OutOfMemoryError(duckdb.OutOfMemoryException):
    """DuckDB ran out of memory; the message says how partitions=N avoids it. Still a
    duckdb.OutOfMemoryException, so code that catches DuckDB's own keeps working."""

    @classmethod
    def hint(cls, exc: BaseException, partitions: int) -> OutOfMemoryError:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        more = f"more than partitions={partitions}" if partitions > 1 else "partitions=N"
        return cls(
            f"DuckDB ran out of memory ({first}). Each user's top-k state stays in memory, so "
            f"memory grows with the users of one statement: {more} (CLI: --partitions N) "
            "evaluates the users N slices at a time, with the same numbers (the command line "
            "suggests an N from the users and the memory limit)"
        )

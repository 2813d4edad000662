"""Exceptions raised by sqlmetrics. All are ValueErrors that describe the problem in the
caller's terms (column, table, metric names), never a SQL engine's internals."""


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

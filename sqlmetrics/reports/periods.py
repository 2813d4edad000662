"""Report periods: a day, an ISO week (Monday to Sunday) or a calendar month, as [start, end).

A period is always a whole number of days, so its bounds are dates, and a row belongs to it
when start <= time_column < end (a DATE or a TIMESTAMP column alike)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from ..errors import SqlMetricsError

UNITS = ("day", "week", "month")
_SPELLINGS = {
    "day": "day", "1 day": "day", "daily": "day",
    "week": "week", "1 week": "week", "weekly": "week",
    "month": "month", "1 month": "month", "monthly": "month",
}  # fmt: skip


@dataclass(frozen=True, order=True)
class Period:
    """One period [start, end): start is included, end is not."""

    start: date
    end: date

    @property
    def label(self) -> str:
        """'2026-11-01' (a day or a week, by its first day) or '2026-11' (a month).

        >>> Period(date(2026, 11, 1), date(2026, 12, 1)).label
        '2026-11'
        """
        is_month = self.start.day == 1 and (self.end - self.start).days >= 28
        return self.start.strftime("%Y-%m") if is_month else self.start.isoformat()


def parse_unit(text: str) -> str:
    """'1 day', 'day' or 'daily' -> 'day' (likewise week and month).

    >>> parse_unit("1 week")
    'week'
    """
    unit = _SPELLINGS.get(" ".join(str(text).lower().split())) if isinstance(text, str) else None
    if unit is None:
        raise SqlMetricsError(
            f"period = {text!r} is not one of '1 day', '1 week' (Monday to Sunday), '1 month'"
        )
    return unit


def period_of(unit: str, day: date) -> Period:
    """The period of `unit` that contains `day`. A period must end by 9999-12-31 (its end,
    excluded, is a date too), so the last day of the calendar has no period.

    >>> period_of("week", date(2026, 11, 4))
    Period(start=datetime.date(2026, 11, 2), end=datetime.date(2026, 11, 9))
    >>> period_of("day", date(9999, 12, 31))
    Traceback (most recent call last):
    ...
    sqlmetrics.errors.SqlMetricsError: the 1 day period of 9999-12-31 ends after 9999-12-31, the last date
    """
    try:
        return _period_of(unit, day)
    except OverflowError:
        raise SqlMetricsError(
            f"the 1 {unit} period of {day.isoformat()} ends after 9999-12-31, the last date"
        ) from None


def _period_of(unit: str, day: date) -> Period:
    if unit == "day":
        return Period(day, day + timedelta(days=1))
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return Period(start, start + timedelta(days=7))
    if unit == "month":
        start = day.replace(day=1)
        if start.year + start.month // 12 > date.max.year:
            raise OverflowError
        end = date(start.year + start.month // 12, start.month % 12 + 1, 1)
        return Period(start, end)
    raise SqlMetricsError(f"unknown period unit {unit!r}")


def periods_between(unit: str, first: date, last: date) -> list[Period]:
    """Every period that contains a day of [first, last] (both included), in order.

    >>> [p.label for p in periods_between("day", date(2026, 11, 1), date(2026, 11, 3))]
    ['2026-11-01', '2026-11-02', '2026-11-03']
    """
    if last < first:
        raise SqlMetricsError(f"--from {first} is after --to {last}")
    period_of(unit, last)  # the last one must end by 9999-12-31 (before building the others)
    periods = []
    period = period_of(unit, first)
    periods.append(period)
    while period.end <= last:
        period = period_of(unit, period.end)
        periods.append(period)
    return periods


def count_between(unit: str, first: date, last: date) -> int:
    """How many periods periods_between(unit, first, last) returns, without building them.

    >>> count_between("week", date(2026, 11, 1), date(2026, 11, 3))
    2
    >>> count_between("month", date(1000, 1, 1), date(9000, 12, 31))
    96012
    """
    start, end = period_of(unit, first).start, period_of(unit, last).start
    if end < start:
        return 0
    if unit == "day":
        return (end - start).days + 1
    if unit == "week":
        return (end - start).days // 7 + 1
    return (end.year - start.year) * 12 + end.month - start.month + 1


def last_complete(unit: str, today: date) -> Period:
    """The latest period that ended by `today`: yesterday for daily reports.

    >>> last_complete("day", date(2026, 11, 8)).label
    '2026-11-07'
    """
    return period_of(unit, period_of(unit, today).start - timedelta(days=1))


def parse_date(text: str, option: str) -> date:
    """'2026-11-01' -> date(2026, 11, 1); anything else is a usage error naming the option.

    >>> parse_date("2026-11-01", "--date")
    datetime.date(2026, 11, 1)
    """
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise SqlMetricsError(f"{option} {text!r} is not a date like 2026-11-01") from None

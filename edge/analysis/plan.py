"""The analysis plan: its JSON Schema, validation, and resolution of its time ranges.

Owns the package copy of ``plan.schema.json`` (read through :mod:`importlib.resources`, the only
data this pure module touches). Every parser backend (:mod:`edge.analysis.parser`,
:mod:`edge.llm`) calls :func:`validate_plan` before handing a plan on; the engine calls
:func:`resolve_time_range` to turn a plan's ``time_range`` into a UTC window.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import jsonschema

from edge.errors import PlanError, TimeRangeError

logger = logging.getLogger(__name__)

_DURATION = re.compile(r"^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?$")


@functools.cache
def plan_schema() -> dict[str, Any]:
    """The plan JSON Schema (draft 2020-12) shipped in ``edge/schemas/plan.schema.json``."""
    text = importlib.resources.files("edge").joinpath("schemas/plan.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = plan_schema()
    cls = jsonschema.validators.validator_for(schema)  # the schema itself is checked in tests/test_plan.py
    validator: jsonschema.protocols.Validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return validator


def plan_errors(plan: Any) -> list[str]:
    """Every schema violation of ``plan`` as ``path: message`` lines (empty when valid)."""
    errors = sorted(_validator().iter_errors(plan), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors:
        path = ".".join(str(p) for p in err.absolute_path) or "(plan)"
        out.append(f"{path}: {err.message}")
    for tr_path, tr in _time_ranges(plan):
        for key in ("since", "until"):
            if key in tr and isinstance(tr[key], str):
                try:
                    _parse_rfc3339(tr[key])
                except ValueError:
                    out.append(f"{tr_path}.{key}: {tr[key]!r} is not an RFC 3339 date-time")
    return out


def validate_plan(plan: Any) -> None:
    """Raise :class:`PlanError` unless ``plan`` is valid under ``plan.schema.json``."""
    errors = plan_errors(plan)
    if errors:
        raise PlanError(
            "the question was turned into an invalid analysis plan: " + "; ".join(errors[:5]),
            hint="this is a bug in the question parser; please report the question",
        )


def _time_ranges(plan: Any) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(plan, dict):
        return found
    filters = plan.get("filters")
    if isinstance(filters, dict) and isinstance(filters.get("time_range"), dict):
        found.append(("filters.time_range", filters["time_range"]))
    compare = plan.get("compare")
    if isinstance(compare, dict) and isinstance(compare.get("periods"), list):
        for i, p in enumerate(compare["periods"]):
            if isinstance(p, dict) and isinstance(p.get("time_range"), dict):
                found.append((f"compare.periods.{i}.time_range", p["time_range"]))
    return found


def _parse_rfc3339(text: str) -> datetime:
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.fromisoformat(t)
    if "T" not in text.upper() and " " not in text:
        raise ValueError("date-time needs a time part")
    if dt.tzinfo is None:
        raise ValueError("date-time needs an offset")
    return dt


#: the earliest instant a window may start at: a span counted back past it starts here (the
#: memory holds nothing older, so the coverage check still sees the whole asked span as missing)
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
#: the latest instant a window may reach (a day short of datetime.max, so zone shifts stay valid)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def add_months(dt: datetime, months: int) -> datetime:
    """``dt`` moved by whole calendar months (negative = back), the day clamped to the month's end.

    Raises ``OverflowError`` when the result would leave the years 1-9999."""
    total = dt.year * 12 + (dt.month - 1) + months
    year, month0 = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise OverflowError(f"year {year} is out of range")
    month = month0 + 1
    if month == 12:
        last_day = 31
    else:
        last_day = (dt.replace(year=year, month=month + 1, day=1) - timedelta(days=1)).day
    return dt.replace(year=year, month=month, day=min(dt.day, last_day))


def subtract_duration(now: datetime, duration: str) -> datetime:
    """``now`` minus an ISO 8601 duration of the plan's form ``PnYnMnWnD`` (calendar years/months).

    A duration reaching back past the calendar's first years gives :data:`EARLIEST` (in ``now``'s
    zone): every real memory starts later, so the span counts as not held rather than failing."""
    m = _DURATION.match(duration)
    if not m or duration == "P":
        raise PlanError(f"time range 'last' = {duration!r} is not a duration like P3M or P8W")
    years, months, weeks, days = (int(g) if g else 0 for g in m.groups())
    floor = EARLIEST.astimezone(now.tzinfo) if now.tzinfo else EARLIEST.replace(tzinfo=None)
    if years * 12 + months > 12 * 10000 or weeks * 7 + days > 366 * 10000:
        return floor
    try:
        out = add_months(now, -(years * 12 + months))
        out = out - timedelta(weeks=weeks, days=days)
    except OverflowError:
        return floor
    return max(out, floor)


def resolve_time_range(
    time_range: dict[str, Any] | None, now: datetime, tz: str, *, wall_clock: bool = False
) -> tuple[datetime | None, datetime | None]:
    """A plan ``time_range`` as a half-open UTC window ``(since, until)``; ``None`` = unbounded.

    ``last`` counts back from ``now`` in the store's local calendar (``tz``, an IANA name), so
    ``P3M`` on 2025-12-15 starts 2025-09-15 at the same local wall time; with ``last`` the window
    ends at ``now``. ``since``/``until`` are RFC 3339 and win over ``last`` where both are given.
    A naive ``now`` is read as store-local time.

    ``wall_clock`` (a window each store applies in its own zone, ``EventFilter.wall_clock_zone``
    = ``tz``): an RFC 3339 bound means the wall-clock time it is written in (whatever its offset),
    so it is returned as the instant that reads that time in ``tz``.
    """
    if not time_range:
        return None, None
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise PlanError(
            f"the store time zone {tz!r} is not an IANA time zone name", hint="set it with adamm import --tz"
        ) from None
    try:
        local_now = now.replace(tzinfo=zone) if now.tzinfo is None else now.astimezone(zone)
    except (OverflowError, ValueError):
        raise _out_of_calendar(str(now)) from None
    since: datetime | None = None
    until: datetime | None = None
    last = time_range.get("last")
    if last:
        since = subtract_duration(local_now.replace(tzinfo=None), last).replace(tzinfo=zone)
        until = local_now
    try:
        if time_range.get("since"):
            since = _parse_rfc3339(time_range["since"])
        if time_range.get("until"):
            until = _parse_rfc3339(time_range["until"])
    except ValueError as exc:
        raise PlanError(f"time range {time_range!r} has an unreadable date-time: {exc}") from None
    if wall_clock:
        try:
            if time_range.get("since") and since is not None:
                since = since.replace(tzinfo=None).replace(tzinfo=zone)
            if time_range.get("until") and until is not None:
                until = until.replace(tzinfo=None).replace(tzinfo=zone)
        except (OverflowError, ValueError):
            raise _out_of_calendar(str(since or until)) from None
    try:
        since_utc = since.astimezone(UTC) if since else None
        until_utc = until.astimezone(UTC) if until else None
    except (OverflowError, ValueError):
        raise _out_of_calendar(str(since or until)) from None
    if since_utc is not None and until_utc is not None and since_utc >= until_utc:
        if since_utc == until_utc:
            raise TimeRangeError(
                "the time range is empty (it ends where it starts): ask for a span of at least a day",
                "时间范围为空（开始和结束相同）：请至少问一天的范围",
            )
        raise TimeRangeError(
            f"the time range starts ({since_utc.date()}) after it ends ({until_utc.date()})",
            f"时间范围的开始（{since_utc.date()}）晚于结束（{until_utc.date()}）",
        )
    return since_utc, until_utc


def _out_of_calendar(text: str) -> TimeRangeError:
    return TimeRangeError(
        f"the time {text} is outside the calendar adamm can compute (years 1-9999)",
        f"时间 {text} 超出了可以计算的日历范围（公元 1-9999 年）",
    )

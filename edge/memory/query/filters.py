"""The one compiler from an :class:`~edge.analysis.source.EventFilter` to SQL over ``events``.

Owns the meaning of every hard filter and of every grouping key of :mod:`edge.analysis.source`
in SQL: :func:`compile_filter` turns a filter (plus optional periods) into CTEs, a WHERE expression
and its bound parameters; :func:`key_expr` turns a grouping key into a SQL expression. Called by
:mod:`edge.memory.query.events_source` (aggregation, evidence, coverage) and by the hybrid retrieval of
:mod:`edge.memory.search.retrieval` (the attribute channel), so a filter means the same everywhere.

Safety: no SQL is ever built from input. Keys are whitelisted (the keys of ``source.KEYS``,
``attr:<identifier>``, stats keys that are identifiers; anything else raises
:class:`~edge.errors.UsageError` naming the key) and every value is a bound ``?`` parameter.

Parameters are positional ``?`` in text order: a compiled piece's ``params`` follow its SQL, and
:class:`CompiledFilter` lists the CTEs' parameters first, then the WHERE's, so
``WITH <ctes> SELECT ... FROM events AS e WHERE <where>`` binds ``params`` as they are (put any
parameters of the SELECT list between the two, see :meth:`CompiledFilter.sql`).

Semantics (the EventFilter docstring is the spec):

- ``store_ids``, ``event_types``: ``IN`` over bound values; ``since`` inclusive and ``until``
  exclusive on ``ts_epoch``; ``hours`` / ``days_of_week`` on the store-local ``local_hour`` /
  ``local_weekday`` (0 = Monday).
- ``attributes``: a well-known stats key compares its typed column (``weather`` and ``promotion``
  with the day fallback below); any other key matches through ``event_attrs``: numbers against
  ``value_num``, booleans as ``'true'``/``'false'`` and strings against ``value_text``.
- ``entities``: the event names every listed entity.
- ``key_equals``: the grouping key's expression is one of the values (``None`` matches NULL).
- ``event_ids``: ``None`` means no restriction, an empty tuple matches nothing.
- ``periods``: the event lies in at least one period's window.
- ``wall_clock_zone`` (per-store local windows, :mod:`edge.analysis.source`): the time window and
  every period's window become one condition per zone (:func:`window_sql`): ``store_id IN
  (stores of that zone) AND ts_epoch`` within the bounds applied in that zone, the stores of the
  default zone as ``store_id NOT IN (the others)``; the compiler then needs the stores' zones
  (``zones``, a :class:`~edge.analysis.source.StoreZones`). Without it the SQL is as before.
- ``weather`` / ``promotion`` are day attributes: an event without its own value takes its
  store-local day's value, computed in a materialised CTE only for the days that hold events
  without one (partial indexes of migration ``0003_day_attribute_indexes`` make that cheap).
  The day's weather is its most frequent non-null weather (ties: the alphabetically first);
  the day's promotion is its most frequent promotion *name*, else ``"true"`` when the day has a
  ``promotion_broadcast`` event or a truthy promotion, else ``"false"``. Boolean-like promotion
  values (true/1/yes/on, false/0/no/off/none/"") are normalised to ``"true"``/``"false"``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from edge.analysis.source import (
    KEYS,
    EventFilter,
    Period,
    Scalar,
    StoreZones,
    is_valid_key,
    store_window,
    zone_groups,
)
from edge.errors import UnknownKeyError, UsageError
from edge.memory.db.migrations import WELL_KNOWN_STATS

logger = logging.getLogger(__name__)

#: grouping keys that are a plain column of ``events``
_COLUMN_KEYS: dict[str, str] = {
    "store_id": "store_id",
    "product_category": "product_category",
    "product_id": "product_id",
    "zone": "zone",
    "source": "source",
    "staff_id": "staff_id",
    "event_type": "event_type",
    "speech_emotion": "speech_emotion",
    "event_id": "event_id",
    "date": "local_date",
    "week": "local_week",
    "month": "local_month",
    "hour": "local_hour",
    "day_of_week": "local_weekday",
}

TRUTHY = ("true", "1", "yes", "y", "on", "t")
FALSY = ("false", "0", "no", "n", "off", "f", "", "none", "null")

WEATHER_CTE = "_day_weather"
PROMOTION_CTE = "_day_promotion"

_NUMERIC_TYPES = ("INTEGER", "REAL")


class Sql(NamedTuple):
    """A SQL fragment and its positional parameters (in text order)."""

    sql: str
    params: tuple[Any, ...] = ()


class KeyExpr(NamedTuple):
    """A grouping key as SQL: the expression, the CTEs it needs (``name AS (...)``) and the
    parameters of the CTEs then of the expression, in that order."""

    sql: str
    ctes: list[str]
    cte_params: list[Any]
    params: list[Any]


@dataclass(frozen=True)
class CompiledFilter:
    """A compiled filter: ``WITH <ctes> ... WHERE <where>`` binding ``params`` in order.

    ``ctes`` are ``name(cols) AS MATERIALIZED (...)`` fragments without the ``WITH`` keyword
    (join them with ``", "``); ``params`` are the CTEs' parameters followed by the WHERE's
    (``cte_params`` / ``where_params`` hold the two parts).
    """

    ctes: list[str]
    where: str
    params: list[Any]
    cte_params: list[Any] = field(default_factory=list)
    where_params: list[Any] = field(default_factory=list)

    def sql(self, select: str, *, select_params: Sequence[Any] = (), tail: str = "", alias: str = "e") -> Sql:
        """A whole statement ``WITH ... SELECT select FROM events AS alias WHERE ... tail``."""
        with_sql = f"WITH {', '.join(self.ctes)} " if self.ctes else ""
        return Sql(
            f"{with_sql}SELECT {select} FROM events AS {alias} WHERE {self.where} {tail}".rstrip(),
            (*self.cte_params, *select_params, *self.where_params),
        )


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


def _check_key(key: str, what: str) -> None:
    if not (isinstance(key, str) and key.isidentifier() and key.isascii()):
        raise UnknownKeyError(f"{what} {key!r} is not a valid key: use ASCII letters, digits and _ only")


def normalise_promotion(value: Scalar | None) -> str | None:
    """A promotion value as the store reports it: ``"true"``/``"false"`` for boolean-like values,
    else the promotion's name."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value in (0, 1):
            return "true" if value else "false"
        return str(value)
    low = str(value).strip().lower()
    if low in TRUTHY:
        return "true"
    if low in FALSY:
        return "false"
    return str(value)


def _sql_norm_promotion(col: str) -> str:
    truthy = ", ".join(f"'{v}'" for v in TRUTHY)  # constants of this module, not input
    falsy = ", ".join(f"'{v}'" for v in FALSY)
    return (
        f"CASE WHEN lower(trim({col})) IN ({truthy}) THEN 'true' "
        f"WHEN lower(trim({col})) IN ({falsy}) THEN 'false' ELSE {col} END"
    )


class _Compiler:
    """Collects the CTEs a filter or key needs (once each) and builds the SQL pieces."""

    def __init__(
        self, flt: EventFilter | None, periods: Sequence[Period], alias: str, zones: StoreZones | None = None
    ) -> None:
        if not alias.isidentifier():
            raise UsageError(f"table alias {alias!r} is not an identifier")
        self.flt = flt or EventFilter()
        self.periods = tuple(periods)
        self.a = alias
        self.zones = zones
        self._ctes: dict[str, Sql] = {}

    def window(self, since: datetime | None, until: datetime | None) -> Sql:
        """``[since, until)`` on the row's time (per store with ``wall_clock_zone``)."""
        return window_sql(self.a, since, until, self.flt, self.zones)

    # -- CTEs ----------------------------------------------------------------------------------

    def ctes(self) -> tuple[list[str], list[Any]]:
        params: list[Any] = []
        for piece in self._ctes.values():
            params.extend(piece.params)
        return [piece.sql for piece in self._ctes.values()], params

    def _day_scope(self) -> Sql:
        """Restrict day computations to the filter's stores and (whole) local days of its window."""
        parts: list[str] = []
        params: list[Any] = []
        if self.flt.store_ids:
            parts.append(f"store_id IN ({_placeholders(len(self.flt.store_ids))})")
            params.extend(self.flt.store_ids)
        lo, hi = self.flt.since, self.flt.until
        if self.periods and all(p.since is not None for p in self.periods):
            plo = min(p.since for p in self.periods if p.since is not None)
            lo = plo if lo is None else max(lo, plo)
        if self.periods and all(p.until is not None for p in self.periods):
            phi = max(p.until for p in self.periods if p.until is not None)
            hi = phi if hi is None else min(hi, phi)
        # a store's local date is within a day of the UTC date; extra whole days are harmless (a
        # per-store window's bounds move by up to 26 hours more)
        margin = timedelta(days=1 if self.flt.wall_clock_zone is None else 3)
        if lo is not None:
            parts.append("local_date >= ?")
            params.append((lo - margin).strftime("%Y-%m-%d"))
        if hi is not None:
            parts.append("local_date <= ?")
            params.append((hi + margin).strftime("%Y-%m-%d"))
        return Sql(" AND ".join(f"{p}" for p in parts), tuple(params))

    def _need_day_weather(self) -> None:
        if WEATHER_CTE in self._ctes:
            return
        scope = self._day_scope()
        extra = f" AND {scope.sql}" if scope.sql else ""
        # only the days that hold an event without weather; each day's values from the covering
        # index events_day_weather (store_id, local_date, weather)
        sql = (
            f"{WEATHER_CTE}(store_id, local_date, value) AS MATERIALIZED ("
            "SELECT n.store_id, n.local_date, (SELECT w.weather FROM events AS w "
            "WHERE w.store_id = n.store_id AND w.local_date = n.local_date AND w.weather IS NOT NULL "
            "GROUP BY w.weather ORDER BY count(*) DESC, w.weather LIMIT 1) "
            f"FROM (SELECT DISTINCT store_id, local_date FROM events WHERE weather IS NULL{extra}) AS n)"
        )
        self._ctes[WEATHER_CTE] = Sql(sql, scope.params)

    def _need_day_promotion(self) -> None:
        if PROMOTION_CTE in self._ctes:
            return
        scope = self._day_scope()
        extra = f" AND {scope.sql}" if scope.sql else ""
        norm = _sql_norm_promotion("w.promotion")
        same_day = "w.store_id = n.store_id AND w.local_date = n.local_date AND w.promotion IS NOT NULL"
        sql = (
            f"{PROMOTION_CTE}(store_id, local_date, value) AS MATERIALIZED ("
            "SELECT n.store_id, n.local_date, coalesce("
            f"(SELECT w.promotion FROM events AS w WHERE {same_day} AND {norm} NOT IN ('true', 'false') "
            "GROUP BY w.promotion ORDER BY count(*) DESC, w.promotion LIMIT 1), "
            "CASE WHEN b.store_id IS NOT NULL "
            f"OR EXISTS (SELECT 1 FROM events AS w WHERE {same_day} AND {norm} = 'true') "
            "THEN 'true' ELSE 'false' END) "
            f"FROM (SELECT DISTINCT store_id, local_date FROM events WHERE promotion IS NULL{extra}) AS n "
            "LEFT JOIN (SELECT DISTINCT store_id, local_date FROM events "
            "WHERE event_type = 'promotion_broadcast') AS b "
            "ON b.store_id = n.store_id AND b.local_date = n.local_date)"
        )
        self._ctes[PROMOTION_CTE] = Sql(sql, scope.params)

    # -- expressions ---------------------------------------------------------------------------

    def weather(self) -> str:
        self._need_day_weather()
        a = self.a
        return (
            f"COALESCE({a}.weather, (SELECT d.value FROM {WEATHER_CTE} AS d "
            f"WHERE d.store_id = {a}.store_id AND d.local_date = {a}.local_date))"
        )

    def promotion(self) -> str:
        self._need_day_promotion()
        a = self.a
        return (
            f"CASE WHEN {a}.promotion IS NOT NULL THEN {_sql_norm_promotion(a + '.promotion')} "
            f"ELSE COALESCE((SELECT d.value FROM {PROMOTION_CTE} AS d "
            f"WHERE d.store_id = {a}.store_id AND d.local_date = {a}.local_date), 'false') END"
        )

    def stats_column(self, name: str) -> str:
        """A well-known stats key's expression (day attributes with their fallback)."""
        if name == "weather":
            return self.weather()
        if name == "promotion":
            return self.promotion()
        return f"{self.a}.{name}"

    def period(self) -> Sql:
        """CASE giving the label of the first period whose window holds the event, else NULL."""
        if not self.periods:
            raise UnknownKeyError("the key 'period' needs the query's periods")
        whens: list[str] = []
        params: list[Any] = []
        for p in self.periods:
            if self.flt.wall_clock_zone is not None:
                w = self.window(p.since, p.until)
                whens.append(f"WHEN {w.sql} THEN ?")
                params.extend(w.params)
                params.append(p.label)
                continue
            conds: list[str] = []
            if p.since is not None:
                conds.append(f"{self.a}.ts_epoch >= ?")
                params.append(_epoch(p.since))
            if p.until is not None:
                conds.append(f"{self.a}.ts_epoch < ?")
                params.append(_epoch(p.until))
            whens.append(f"WHEN {' AND '.join(conds) or '1'} THEN ?")
            params.append(p.label)
        return Sql(f"(CASE {' '.join(whens)} END)", tuple(params))

    def key(self, key: str) -> Sql:
        if not isinstance(key, str) or not is_valid_key(key):
            raise UnknownKeyError(f"unknown key {key!r}: use one of {', '.join(KEYS)} or attr:<stats key>")
        a = self.a
        if key in _COLUMN_KEYS:
            return Sql(f"{a}.{_COLUMN_KEYS[key]}")
        if key == "is_weekend":
            return Sql(f"({a}.local_weekday >= 5)")
        if key == "date_hour":
            return Sql(f"({a}.local_date || 'T' || printf('%02d', {a}.local_hour))")
        if key == "bill":
            return Sql(f"COALESCE({a}.bill_id, {a}.event_id)")
        if key == "weather":
            return Sql(self.weather())
        if key == "promotion":
            return Sql(self.promotion())
        if key == "period":
            return self.period()
        name = key[5:]  # attr:<identifier>, validated above
        if name in WELL_KNOWN_STATS:
            return Sql(self.stats_column(name))
        return Sql(
            "(SELECT COALESCE(x.value_text, x.value_num) FROM event_attrs AS x "
            f"WHERE x.event_rowid = {a}.id AND x.key = ?)",
            (name,),
        )

    # -- the WHERE -----------------------------------------------------------------------------

    def where(self) -> Sql:
        f = self.flt
        a = self.a
        parts: list[str] = []
        params: list[Any] = []

        def add_in(expr: str, values: Sequence[Any]) -> None:
            parts.append(f"{expr} IN ({_placeholders(len(values))})" if values else "0")
            params.extend(values)

        if f.store_ids:
            add_in(f"{a}.store_id", [str(s) for s in f.store_ids])
        if f.event_types:
            add_in(f"{a}.event_type", [str(t) for t in f.event_types])
        if f.wall_clock_zone is not None and (f.since is not None or f.until is not None):
            w = self.window(f.since, f.until)
            parts.append(w.sql)
            params.extend(w.params)
        else:
            if f.since is not None:
                parts.append(f"{a}.ts_epoch >= ?")
                params.append(_epoch(f.since))
            if f.until is not None:
                parts.append(f"{a}.ts_epoch < ?")
                params.append(_epoch(f.until))
        if f.hours:
            add_in(f"{a}.local_hour", [_int(h, "hour", 0, 23) for h in f.hours])
        if f.days_of_week:
            add_in(f"{a}.local_weekday", [_int(d, "day of week", 0, 6) for d in f.days_of_week])
        for key, values in f.attributes:
            piece = self._attribute(key, tuple(values))
            parts.append(piece.sql)
            params.extend(piece.params)
        for entity in f.entities:
            parts.append(f"{a}.id IN (SELECT n.event_rowid FROM entities AS n WHERE n.entity = ?)")
            params.append(str(entity))
        for key, values in f.key_equals:
            piece = self._key_equals(key, tuple(values))
            parts.append(piece.sql)
            params.extend(piece.params)
        if f.event_ids is not None:
            if f.event_ids:
                import json

                parts.append(f"{a}.event_id IN (SELECT j.value FROM json_each(?) AS j)")
                params.append(json.dumps([str(i) for i in f.event_ids]))
            else:
                parts.append("0")
        if self.periods:
            window = self.period()
            parts.append(f"{window.sql} IS NOT NULL")
            params.extend(window.params)
        return Sql(" AND ".join(parts) if parts else "1", tuple(params))

    def _attribute(self, key: str, values: tuple[Scalar, ...]) -> Sql:
        _check_key(key, "filter key")
        if not values:
            return Sql("0")
        if key in WELL_KNOWN_STATS:
            kind = WELL_KNOWN_STATS[key]
            expr = self.stats_column(key)
            bound: list[Any] = []
            for v in values:
                if key == "promotion":
                    bound.append(normalise_promotion(v))
                elif kind in _NUMERIC_TYPES:
                    bound.append(int(v) if isinstance(v, bool) else v)
                else:
                    bound.append(_text(v))
            return Sql(f"{expr} IN ({_placeholders(len(bound))})", tuple(bound))
        postings = attribute_postings(key, values)
        return Sql(f"{self.a}.id IN ({postings.sql})", postings.params)

    def _key_equals(self, key: str, values: tuple[Scalar | None, ...]) -> Sql:
        return key_equals(key, self.key(key), values)


def key_equals(key: str, expr: Sql, values: tuple[Scalar | None, ...]) -> Sql:
    """``expr`` (the SQL of filter key ``key``) equal to one of ``values`` (None: IS NULL), each
    value bound the way the key is stored; shared by the event filters and the hourly rollup."""
    if not values:
        return Sql("0")
    bound: list[Any] = []
    has_null = False
    for v in values:
        if v is None:
            has_null = True
        elif key == "is_weekend":
            bound.append(1 if _truthy(v) else 0)
        elif key == "promotion" or key == "attr:promotion":
            bound.append(normalise_promotion(v))
        elif key.startswith("attr:") and isinstance(v, bool):
            bound.append(_text(v) if key[5:] not in WELL_KNOWN_STATS else int(v))
        else:
            bound.append(v)
    conds: list[str] = []
    params: list[Any] = []
    if bound:
        conds.append(f"{expr.sql} IN ({_placeholders(len(bound))})")
        params.extend(expr.params)
        params.extend(bound)
    if has_null:
        conds.append(f"{expr.sql} IS NULL")
        params.extend(expr.params)
    return Sql(f"({' OR '.join(conds)})", tuple(params))


def window_sql(
    alias: str, since: datetime | None, until: datetime | None, flt: EventFilter, zones: StoreZones | None
) -> Sql:
    """``[since, until)`` on ``alias.ts_epoch``; with ``flt.wall_clock_zone``, one condition per
    zone of the stores (``flt.store_ids`` narrows them), each with the bounds applied in that zone.
    Shared by the event filters and the rollup (both tables have ``store_id`` and ``ts_epoch``)."""
    frame = flt.wall_clock_zone
    if frame is None or (since is None and until is None):
        conds = []
        params: list[Any] = []
        if since is not None:
            conds.append(f"{alias}.ts_epoch >= ?")
            params.append(_epoch(since))
        if until is not None:
            conds.append(f"{alias}.ts_epoch < ?")
            params.append(_epoch(until))
        return Sql(" AND ".join(conds) or "1", tuple(params))
    if zones is None:
        raise UsageError("internal: a per-store local window needs the stores' time zones")
    for t in (since, until):
        if t is not None:
            _epoch(t)  # an aware time, or the usage error
    ors: list[str] = []
    params = []
    los: list[float] = []
    his: list[float] = []
    for zone, stores, others in zone_groups(zones, flt.store_ids):
        conds = []
        if stores:
            conds.append(f"{alias}.store_id {'NOT IN' if others else 'IN'} ({_placeholders(len(stores))})")
            params.extend(stores)
        lo, hi = store_window(since, until, frame, zone)
        if lo is not None:
            conds.append(f"{alias}.ts_epoch >= ?")
            params.append(_epoch(lo))
            los.append(_epoch(lo))
        if hi is not None:
            conds.append(f"{alias}.ts_epoch < ?")
            params.append(_epoch(hi))
            his.append(_epoch(hi))
        ors.append(f"({' AND '.join(conds)})")
    if not ors:
        return Sql("0")
    # the envelope of every zone's window first, so an index on the time can drive the scan
    envelope: list[str] = []
    head: list[Any] = []
    if los:
        envelope.append(f"{alias}.ts_epoch >= ?")
        head.append(min(los))
    if his:
        envelope.append(f"{alias}.ts_epoch < ?")
        head.append(max(his))
    return Sql(f"({' AND '.join([*envelope, '(' + ' OR '.join(ors) + ')'])})", (*head, *params))


def _epoch(t: datetime) -> float:
    if t.tzinfo is None:
        raise UsageError(f"time {t.isoformat()} has no time zone; give it an offset (e.g. Z)")
    return t.timestamp()


def _int(v: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise UsageError(f"{what} {v!r} is not a whole number from {lo} to {hi}")
    return v


def _text(v: Scalar) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return str(int(v))
    return str(v)


def _truthy(v: Scalar) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in TRUTHY
    return bool(v)


def attribute_postings(key: str, values: Sequence[Scalar]) -> Sql:
    """``SELECT x.event_rowid FROM event_attrs AS x WHERE ...``: the events whose stats key ``key``
    (one that is *not* well known, so it lives in ``event_attrs``) is one of ``values``.

    The one definition of such a match: numbers compare with ``value_num``, strings and booleans
    (``'true'``/``'false'``) with ``value_text``. Used inside compiled filters and on its own by
    the postings cache of :mod:`edge.memory.search.vector_index`. Raises for a key that is not an
    identifier or is well known.
    """
    _check_key(key, "filter key")
    if key in WELL_KNOWN_STATS:
        raise UsageError(f"{key} is a well-known stats key: it is a column of events, not an attribute row")
    nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    texts = [_text(v) for v in values if isinstance(v, str | bool)]
    conds: list[str] = []
    params: list[Any] = [key]
    if texts:
        conds.append(f"x.value_text IN ({_placeholders(len(texts))})")
        params.extend(texts)
    if nums:
        conds.append(f"x.value_num IN ({_placeholders(len(nums))})")
        params.extend(nums)
    where = " OR ".join(conds) if conds else "0"
    return Sql(f"SELECT x.event_rowid FROM event_attrs AS x WHERE x.key = ? AND ({where})", tuple(params))


def compile_filter(
    flt: EventFilter, periods: Sequence[Period] = (), *, alias: str = "e", zones: StoreZones | None = None
) -> CompiledFilter:
    """Compile ``flt`` (and, when given, "in one of ``periods``") to SQL over ``events AS alias``
    (``zones``: the stores' zones, needed by a per-store local window).

    Raises :class:`~edge.errors.UsageError` for a key that is not whitelisted or a bad value.
    """
    c = _Compiler(flt, periods, alias, zones)
    where = c.where()
    ctes, cte_params = c.ctes()
    return CompiledFilter(
        ctes=ctes,
        where=where.sql,
        params=[*cte_params, *where.params],
        cte_params=cte_params,
        where_params=list(where.params),
    )


def key_expr(
    key: str,
    periods: Sequence[Period] = (),
    *,
    alias: str = "e",
    wall_clock_zone: str | None = None,
    zones: StoreZones | None = None,
) -> KeyExpr:
    """The SQL expression of grouping key ``key`` over ``events AS alias`` (``wall_clock_zone``
    and ``zones``: the periods are per-store local windows).

    Returns the expression, the CTEs it needs and their parameters, and the expression's own
    parameters. Raises :class:`~edge.errors.UsageError` for an unknown key.
    """
    c = _Compiler(EventFilter(wall_clock_zone=wall_clock_zone), periods, alias, zones)
    expr = c.key(key)
    ctes, cte_params = c.ctes()
    return KeyExpr(expr.sql, ctes, cte_params, list(expr.params))


class QueryBuilder:
    """Builds one statement from a filter and grouping keys sharing the same CTEs.

    Used by :mod:`edge.memory.query.events_source`: ``key(k)`` gives a key's SQL and registers its
    CTEs; :meth:`build` assembles ``WITH ... SELECT ... FROM events ... WHERE ...`` with the
    parameters in text order.
    """

    def __init__(
        self,
        flt: EventFilter,
        periods: Sequence[Period] = (),
        *,
        alias: str = "e",
        zones: StoreZones | None = None,
    ) -> None:
        self._c = _Compiler(flt, periods, alias, zones)
        self.alias = alias

    def key(self, key: str) -> Sql:
        return self._c.key(key)

    def stats_column(self, name: str) -> str:
        return self._c.stats_column(name)

    def build(
        self,
        select: Sequence[Sql],
        *,
        extra_where: Sequence[Sql] = (),
        tail: str = "",
        tail_params: Sequence[Any] = (),
        from_sql: str | None = None,
    ) -> Sql:
        """``from_sql``: the FROM clause instead of ``events AS <alias>`` (it must name the events
        ``<alias>``; fixed SQL, no parameters), e.g. a join that narrows or widens the rows."""
        where = self._c.where()  # before ctes(): the WHERE may register CTEs
        ctes, cte_params = self._c.ctes()
        with_sql = f"WITH {', '.join(ctes)} " if ctes else ""
        conds = [where.sql, *(w.sql for w in extra_where)]
        params: list[Any] = [*cte_params]
        for s in select:
            params.extend(s.params)
        params.extend(where.params)
        for w in extra_where:
            params.extend(w.params)
        params.extend(tail_params)
        sql = (
            f"{with_sql}SELECT {', '.join(s.sql for s in select)} FROM {from_sql or f'events AS {self.alias}'} "
            f"WHERE {' AND '.join(f'({c})' for c in conds)} {tail}"
        ).rstrip()
        return Sql(sql, tuple(params))

"""The hub's rollups as an analysis source: the engine's port (:mod:`edge.analysis.source`) over
``hub_rollup``, so ``adamm-hub ask`` runs the same pure engine, operators and honesty rules as a
store (no copy of them).

What the hub holds: per store, per store-local day, one *slice* per dimension (``total``,
``hour``, ``weather``, ``promotion``, ``zone``, ``product_category``), each row summed per slice
value and event type. A question is answered from the one slice it needs:

- keys and filters on ``store_id``, ``date``, ``week``, ``month``, ``day_of_week``,
  ``is_weekend``, ``event_type`` and ``period`` work on every slice (``total`` when nothing else
  is asked);
- ``hour`` / ``date_hour`` keys and the ``hours`` filter read the ``hour`` slice; ``weather``,
  ``promotion``, ``zone`` and ``product_category`` (as keys, attribute filters or
  ``key_equals``) read their own slice;
- a question that needs two of those dimensions at once (rain *and* 14:00), or anything below a
  day's summary (``bill``, ``event_id``, ``product_id``, ``source``, ``staff_id``,
  ``speech_emotion``, ``attr:*``, entities, event ids) raises :class:`HubQueryError` (a
  ``ValueError``, which the engine answers as ``insufficient_data`` saying why).

Time: a plan's calendar bound means the same wall-clock date in each store's zone. The engine
resolves a plan's window in one zone (the single store's when the plan names one, else the
hub's default zone, :meth:`HubSource.vocabulary`'s ``timezone``); this source turns it back into
store-local dates in that zone (each bound rounded to the nearest local midnight: the hub holds
whole days) and applies those dates to every store's own local days.

Evidence: the rows' ``first_event_id`` / ``last_event_id``, the stores' own event ids.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from edge.analysis.source import (
    AGGREGATE,
    BILL_STATS,
    COMPONENT_EVENT_TYPES,
    COMPONENTS,
    AggResult,
    Coverage,
    EventFilter,
    EventRow,
    Period,
    Scalar,
    Vocabulary,
    check_aggregate_args,
    filter_conditions,
)
from edge.sync.messages import ROLLUP_FIELDS
from hub.db import HubDB

logger = logging.getLogger(__name__)

#: the dimensions that each have their own slice, and the keys that read them
DIMENSION_SLICES = ("hour", "weather", "promotion", "zone", "product_category")
_KEY_SLICE = {
    "hour": "hour",
    "date_hour": "hour",
    "weather": "weather",
    "promotion": "promotion",
    "zone": "zone",
    "product_category": "product_category",
}
#: keys every slice can answer (columns of every hub_rollup row)
_DAY_KEYS = ("store_id", "date", "week", "month", "day_of_week", "is_weekend", "event_type", "period")
_KEY_COLUMN = {
    "store_id": "store_id",
    "date": "local_date",
    "week": "local_week",
    "month": "local_month",
    "day_of_week": "local_weekday",
    "is_weekend": "local_weekday",
    "event_type": "event_type",
    "period": "local_date",
}
#: keys below a day's summary: not held by the hub
_EVENT_LEVEL = ("bill", "event_id", "product_id", "source", "staff_id", "speech_emotion")
VOCAB_VALUES_PER_KEY = 50


class HubQueryError(ValueError):
    """A question the hub's daily summaries cannot answer (the engine says so honestly)."""


def _per_dimension(what: str) -> HubQueryError:
    return HubQueryError(
        f"the hub holds each store's daily summaries per dimension ({', '.join(DIMENSION_SLICES)}), "
        f"one dimension at a time: {what}; ask the store itself (adamm ask) for that detail"
    )


def _zone(tz: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(tz or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _text(v: Scalar) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass(frozen=True)
class _Query:
    slice: str
    where: str
    params: tuple[Any, ...]


class HubSource:
    """:class:`~edge.analysis.source.AggregateSource` (and bill statistics) over the hub store."""

    capabilities: frozenset[str] = frozenset({AGGREGATE, BILL_STATS})

    def __init__(self, db: HubDB) -> None:
        self.db = db
        self._zones: dict[str, str] | None = None
        self._vocab: Vocabulary | None = None

    # -- zones -----------------------------------------------------------------------------------

    def zones(self) -> dict[str, str]:
        """store id -> IANA zone (from the summaries)."""
        if self._zones is None:
            self._zones = {
                str(s): str(tz or "UTC") for s, tz in self.db.query("SELECT store_id, tz FROM hub_stores")
            }
        return self._zones

    def default_zone(self) -> str:
        """The zone most stores are in (ties: the first by name): where plans resolve windows."""
        counts = Counter(self.zones().values())
        if not counts:
            return "UTC"
        return sorted(counts, key=lambda z: (-counts[z], z))[0]

    def _window_zone(self, flt: EventFilter) -> ZoneInfo:
        """The zone the engine resolved this filter's window in (see the module docstring)."""
        if len(flt.store_ids) == 1:
            return _zone(self.zones().get(flt.store_ids[0], self.default_zone()))
        return _zone(self.default_zone())

    @staticmethod
    def _dates(
        since: datetime | None, until: datetime | None, zone: ZoneInfo
    ) -> tuple[str | None, str | None]:
        """The store-local dates ``[lo, hi)`` of a UTC window, as seen in ``zone``: each bound
        rounded to the nearest local midnight (the hub holds whole days; a window on midnights,
        which calendar questions resolve to, is exact)."""
        return (_nearest_day(since, zone) if since is not None else None,
                _nearest_day(until, zone) if until is not None else None)  # fmt: skip

    # -- what a filter the hub applies ----------------------------------------------------------

    def applied(self, flt: EventFilter) -> frozenset[str]:
        """The conditions of ``flt`` the daily summaries apply: stores, event types and weekdays
        always; a window when it is whole local days or at least a day long (its bounds are
        rounded to the nearest local midnight: a window within a day cannot be told from its
        day); ``hours`` and one dimension's attribute (``weather``, ``promotion``, ``zone``,
        ``product_category``) from that dimension's slice, one dimension at a time; never other
        attributes or entities."""
        out: set[str] = {c for c in ("store_id", "event_type", "days_of_week") if c in filter_conditions(flt)}
        if flt.since is not None or flt.until is not None:
            zone = self._window_zone(flt)
            whole = all(b is None or _on_midnight(b, zone) for b in (flt.since, flt.until))
            long = flt.since is None or flt.until is None or flt.until - flt.since >= timedelta(days=1)
            if whole or long:
                out.add("time_range")
        sl = self._slice_for(flt, (), strict=False)
        if flt.hours and sl == "hour":
            out.add("hours")
        out.update(f"attributes.{k}" for k, _ in flt.attributes if k == sl)
        return frozenset(out)

    # -- compiling a filter ----------------------------------------------------------------------

    def _slice_for(self, flt: EventFilter, keys: Sequence[str], *, strict: bool = True) -> str:
        needs: list[str] = []

        def need(dim: str, what: str) -> None:
            if dim not in needs:
                needs.append(dim)

        for k in keys:
            if k in _KEY_SLICE:
                need(_KEY_SLICE[k], k)
            elif strict and (k in _EVENT_LEVEL or k.startswith("attr:")):
                raise HubQueryError(
                    f"the hub holds daily summaries, not single events or bills: it cannot group by {k}"
                )
        if flt.hours:
            need("hour", "hours")
        for k, _vals in flt.attributes:
            if k in DIMENSION_SLICES and k != "hour":
                need(k, k)
            elif strict:
                raise HubQueryError(
                    f"the hub's daily summaries carry no {k!r} attribute (only {', '.join(DIMENSION_SLICES[1:])})"
                )
        for k, _vals in flt.key_equals:
            if k in _KEY_SLICE:
                need(_KEY_SLICE[k], k)
            elif strict and k not in _DAY_KEYS:
                raise HubQueryError(f"the hub's daily summaries cannot pick out {k!r}")
        if strict and (flt.entities or flt.event_ids is not None):
            raise HubQueryError("the hub's daily summaries name no entities or single events")
        if len(needs) > 1:
            if strict:
                raise _per_dimension(f"this question needs {' and '.join(needs)} together")
            needs = needs[:1]
        return needs[0] if needs else "total"

    def _compile(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        periods: Sequence[Period] = (),
        *,
        strict: bool = True,
        windowed: bool = True,
    ) -> _Query:
        sl = self._slice_for(flt, keys, strict=strict)
        conds = ["slice = ?"]
        params: list[Any] = [sl]

        def inlist(col: str, values: Iterable[Any]) -> None:
            vals = list(values)
            conds.append(f"{col} IN ({', '.join('?' * len(vals))})" if vals else "1 = 0")
            params.extend(vals)

        if flt.store_ids:
            inlist("store_id", flt.store_ids)
        if flt.event_types:
            inlist("event_type", flt.event_types)
        zone = self._window_zone(flt)
        if windowed:
            lo, hi = self._dates(flt.since, flt.until, zone)
            if lo is not None:
                conds.append("local_date >= ?")
                params.append(lo)
            if hi is not None:
                conds.append("local_date < ?")
                params.append(hi)
        if flt.hours:
            inlist("value", [str(int(h)) for h in flt.hours])
        if flt.days_of_week:
            inlist("local_weekday", [int(d) for d in flt.days_of_week])
        for k, vals in flt.attributes:
            if k == sl:
                inlist("value", [_text(v) for v in vals])
        for k, vals in flt.key_equals:
            self._key_equals(k, vals, sl, zone, periods, conds, params)
        return _Query(sl, " AND ".join(conds), tuple(params))

    def _key_equals(
        self,
        key: str,
        vals: Sequence[Scalar],
        sl: str,
        zone: ZoneInfo,
        periods: Sequence[Period],
        conds: list[str],
        params: list[Any],
    ) -> None:
        def inlist(col: str, values: list[Any]) -> None:
            conds.append(f"{col} IN ({', '.join('?' * len(values))})" if values else "1 = 0")
            params.extend(values)

        none = any(v is None for v in vals)
        real = [v for v in vals if v is not None]
        if key == "is_weekend":
            days = [d for v in real for d in ((5, 6) if _truthy(v) else (0, 1, 2, 3, 4))]
            inlist("local_weekday", days)
        elif key == "period":
            spans = []
            for p in periods:
                if p.label in [str(v) for v in real]:
                    lo, hi = self._dates(p.since, p.until, zone)
                    spans.append((lo, hi))
            ors = []
            for lo, hi in spans:
                part = []
                if lo is not None:
                    part.append("local_date >= ?")
                    params.append(lo)
                if hi is not None:
                    part.append("local_date < ?")
                    params.append(hi)
                ors.append("(" + (" AND ".join(part) or "1 = 1") + ")")
            conds.append("(" + " OR ".join(ors) + ")" if ors else "1 = 0")
        elif key == "date_hour":
            ors = []
            for v in real:
                d, _, h = str(v).partition("T")
                ors.append("(local_date = ? AND value = ?)")
                params.extend([d, str(int(h or 0))])
            conds.append("(" + " OR ".join(ors) + ")" if ors else "1 = 0")
        elif key in _KEY_SLICE:
            texts = [str(int(v)) if key == "hour" else _text(v) for v in real]
            if none:
                conds.append(
                    "(value IS NULL" + (f" OR value IN ({', '.join('?' * len(texts))}))" if texts else ")")
                )
                params.extend(texts)
            else:
                inlist("value", texts)
        elif key in _KEY_COLUMN:
            col = _KEY_COLUMN[key]
            inlist(col, [int(v) if key == "day_of_week" else str(v) for v in real])

    # -- aggregation -----------------------------------------------------------------------------

    def aggregate(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> AggResult:
        """Group the hub's rows for ``flt`` by ``keys``; sums of the rollup's columns."""
        check_aggregate_args(keys, components, periods, known=[*COMPONENTS, "bill_sq"])
        q = self._compile(flt, keys, periods)
        abouts = [COMPONENT_EVENT_TYPES.get(c) for c in components]
        where, params = q.where, list(q.params)
        if components and all(a is not None for a in abouts):
            types = sorted({t for a in abouts if a is not None for t in a})
            where += f" AND event_type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        per_day = any(c in ("days", "first_ts", "last_ts") for c in components)
        base: list[str] = []
        for k in keys:
            col = "value" if k in _KEY_SLICE else _KEY_COLUMN[k]
            if k == "date_hour" and "local_date" not in base:
                base.append("local_date")
            if col not in base:
                base.append(col)
        if per_day:
            for col in ("store_id", "local_date"):
                if col not in base:
                    base.append(col)
        sums = [c for c in ROLLUP_FIELDS if c in components]
        select = [*base, *(f"sum({c})" for c in sums)]
        sql = f"SELECT {', '.join(select)} FROM hub_rollup WHERE {where}"
        if base:
            sql += f" GROUP BY {', '.join(base)}"
        else:
            sql += " HAVING count(*) > 0"
        zone = self._window_zone(flt)
        spans = [(p.label, *self._dates(p.since, p.until, zone)) for p in periods]
        zones = self.zones()
        groups: dict[tuple[Any, ...], dict[str, Any]] = {}
        for r in self.db.query(sql, params):
            at = dict(zip(base, r[: len(base)], strict=True))
            key = tuple(self._key_value(k, at, spans) for k in keys)
            if "period" in keys and key[list(keys).index("period")] is None:
                continue
            g = groups.get(key)
            if g is None:
                g = groups[key] = {c: 0.0 for c in sums}
                if per_day:
                    g["_days"] = set()
            for c, v in zip(sums, r[len(base) :], strict=True):
                g[c] += float(v or 0.0)
            if per_day:
                g["_days"].add((at["store_id"], at["local_date"]))
        rows = []
        for key, g in groups.items():
            vals: list[Any] = []
            for c in components:
                if c == "days":
                    vals.append(len(g["_days"]))
                elif c in ("first_ts", "last_ts"):
                    vals.append(_day_edge(g["_days"], zones, first=c == "first_ts"))
                else:
                    vals.append(_num(g[c]))
            rows.append((*key, *vals))
        return AggResult(columns=(*keys, *components), rows=tuple(rows))

    @staticmethod
    def _key_value(key: str, at: dict[str, Any], spans: Sequence[tuple[str, str | None, str | None]]) -> Any:
        if key == "hour":
            v = at["value"]
            return None if v is None else int(v)
        if key == "date_hour":
            v = at["value"]
            return None if v is None else f"{at['local_date']}T{int(v):02d}"
        if key in _KEY_SLICE:
            return at["value"]
        if key == "day_of_week":
            return int(at["local_weekday"])
        if key == "is_weekend":
            return int(at["local_weekday"]) >= 5
        if key == "period":
            d = at["local_date"]
            for label, lo, hi in spans:
                if (lo is None or d >= lo) and (hi is None or d < hi):
                    return label
            return None
        return at[_KEY_COLUMN[key]]

    def bill_stats(
        self, flt: EventFilter, key: str, periods: Sequence[Period] = ()
    ) -> dict[Any, tuple[int, float, float]]:
        """Per group of ``key``: ``(bills, sum, sum of squares)`` of the bill totals (the rows'
        ``bills``, ``revenue`` and ``bill_sq``)."""
        res = self.aggregate(
            flt.narrowed(event_types=("purchase",)), [key], ["bills", "revenue", "bill_sq"], periods
        )
        out: dict[Any, tuple[int, float, float]] = {}
        for g, n, total, sq in res.rows:
            if n and n > 0:
                out[g] = (int(n), float(total or 0.0), float(sq or 0.0))
        return out

    # -- evidence, coverage, vocabulary ----------------------------------------------------------

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        """Up to ``limit`` event ids cited by the matching rows (spread over their days, most
        recent first) and the number of events behind them."""
        if limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        q = self._compile(flt, (), periods)
        (total, count) = self.db.one(
            f"SELECT coalesce(sum(events), 0), count(*) FROM hub_rollup WHERE {q.where}", q.params
        ) or (0, 0)
        if limit == 0 or not total:
            return [], int(total or 0)
        # rows numbered in time, the evenly spaced ones kept (first and last among them)
        want = list(range(1, count + 1)) if count <= limit else (
            [count] if limit == 1 else sorted({1 + (i * (count - 1)) // (limit - 1) for i in range(limit)})
        )  # fmt: skip
        rows = self.db.query(
            "SELECT store_id, local_date, event_type, first_event_id, last_event_id FROM ("
            "SELECT store_id, local_date, event_type, first_event_id, last_event_id, row_number() OVER "
            f"(ORDER BY local_date, store_id, event_type, vkey) AS rn FROM hub_rollup WHERE {q.where}) AS r "
            f"WHERE rn IN ({', '.join('?' * len(want))}) ORDER BY rn",
            (*q.params, *want),
        )
        cited: list[tuple[str, str, str, str]] = []
        seen: set[str] = set()
        for i, (s, d, et, first, last) in enumerate(rows):
            for eid in (first, last) if i == 0 else (last, first):
                if eid and eid not in seen:
                    seen.add(eid)
                    cited.append((str(eid), str(s), str(d), str(et)))
                    break
        cited = cited[:limit]
        zones = self.zones()
        out = [
            EventRow(
                event_id=eid,
                timestamp=_day_start(d, zones.get(s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                event_type=et,
                store_id=s,
            )
            for eid, s, d, et in cited
        ]
        return list(reversed(out)), int(total)

    def coverage(self, flt: EventFilter) -> Coverage:
        """The days held for ``flt`` (its window ignored): from the first held day's local
        midnight to the end of the last, and the number of events. Read from ``hub_catalog``
        unless the filter names weekdays or groups (then from the rows)."""
        q = self._compile(flt, (), strict=False, windowed=False)
        if not flt.days_of_week and not flt.key_equals:
            table, lo_col, hi_col = "hub_catalog", "first_date", "last_date"
        else:
            table, lo_col, hi_col = "hub_rollup", "local_date", "local_date"
        zones = self.zones()
        lo_t: datetime | None = None
        hi_t: datetime | None = None
        n = 0
        for s, lo, hi, c in self.db.query(
            f"SELECT store_id, min({lo_col}), max({hi_col}), sum(events) FROM {table} "
            f"WHERE {q.where} GROUP BY store_id",
            q.params,
        ):
            if not c:
                continue
            n += int(c)
            a = _day_start(lo, zones.get(s))
            b = _day_start(hi, zones.get(s)) + timedelta(days=1) - timedelta(seconds=1)
            lo_t = a if lo_t is None or a < lo_t else lo_t
            hi_t = b if hi_t is None or b > hi_t else hi_t
        return Coverage(lo_t, hi_t, n)

    def vocabulary(self) -> Vocabulary:
        """Store ids and zones, event types and the dimension values the hub holds."""
        if self._vocab is not None:
            return self._vocab
        zones = self.zones()
        types = [
            str(t)
            for t, _n in self.db.query(
                "SELECT event_type, sum(events) FROM hub_catalog WHERE slice = 'total' "
                "GROUP BY event_type ORDER BY 2 DESC, 1"
            )
        ]
        attributes: dict[str, tuple[str, ...]] = {}
        for sl in DIMENSION_SLICES[1:]:
            vals = [
                str(v)
                for v, _n in self.db.query(
                    "SELECT value, sum(events) FROM hub_catalog WHERE slice = ? AND value IS NOT NULL "
                    "GROUP BY value ORDER BY 2 DESC, 1",
                    (sl,),
                )
            ][:VOCAB_VALUES_PER_KEY]
            if vals:
                attributes[sl] = tuple(vals)
        keys: dict[str, list[str]] = {}
        for t, sl in self.db.query(
            "SELECT event_type, slice FROM hub_catalog WHERE slice <> 'total' AND slice <> 'hour' "
            "AND value IS NOT NULL GROUP BY event_type, slice ORDER BY 1, 2"
        ):
            keys.setdefault(str(t), []).append(str(sl))
        cov = self.coverage(EventFilter())
        self._vocab = Vocabulary(
            timezone=self.default_zone(),
            timezones=dict(zones),
            store_ids=tuple(sorted(zones)),
            event_types=tuple(types),
            attributes=attributes,
            entities=(),
            earliest=cov.earliest,
            latest=cov.latest,
            keys_by_type={t: tuple(k) for t, k in keys.items()},
        )
        return self._vocab


def _nearest_day(t: datetime, zone: ZoneInfo) -> str:
    local = t.astimezone(zone)
    day = local.date()
    start = datetime.combine(day, time(0), tzinfo=zone)
    if local - start >= timedelta(hours=12):
        day += timedelta(days=1)
    return day.isoformat()


def _on_midnight(t: datetime, zone: ZoneInfo) -> bool:
    local = t.astimezone(zone)
    return (local.hour, local.minute, local.second, local.microsecond) == (0, 0, 0, 0)


def _truthy(v: Any) -> bool:
    return v is True or str(v).lower() in ("true", "1", "yes")


def _num(v: float) -> int | float:
    """Counts back as integers (sums of counts are whole); money and seconds stay floats."""
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


def _day_start(day: str, tz: str | None) -> datetime:
    return datetime.combine(date.fromisoformat(day), time(0), tzinfo=_zone(tz)).astimezone(UTC)


def _day_edge(days: set[tuple[str, str]], zones: dict[str, str], *, first: bool) -> str | None:
    if not days:
        return None
    if first:
        t = min(_day_start(d, zones.get(s)) for s, d in days)
    else:
        t = max(_day_start(d, zones.get(s)) + timedelta(days=1) - timedelta(seconds=1) for s, d in days)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

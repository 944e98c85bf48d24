"""The invariants at the engine's exit, for every operator over every source, on generated plans.

Plans valid under plan.schema.json are generated (hypothesis, derandomized): every intent, every
metric, group dimensions, compared groups and periods, and filters on stores, event types, time
ranges (whole days, windows within a day, windows beyond the memory), hours, weekdays, attributes
and entities, with values the memory knows and values it has never seen. Each plan runs on three
sources: a store's SQL source over the simulated 75-day memory, one over the second world
(:mod:`world2`), and the hub's source over two stores' daily summaries. Every payload:

- is valid under payload.schema.json and has an interpretation whose filters are the plan's;
- when ``ok``: has a non-empty result, at least one evidence id (each one the memory's), every
  filter of the plan applied by the source (:meth:`AggregateSource.applied`), every group of the
  plan made by the operator (``Operator.group_keys``), every number of the summary in the result,
  and, asked which store, names a store;
- when the plan filters on a value the memory has never seen, or on a window wholly outside it,
  is not ``ok``;
- is never refused by the exit checks that catch an operator's bug (a number the result does not
  hold, a store question answered without a store): those must not fire on any plan.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import jsonschema
import pytest
import world2
from engine_data import full_memory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.analysis import engine, honesty
from edge.analysis.engine import run_plan
from edge.analysis.operators import registry
from edge.analysis.plan import validate_plan
from edge.analysis.source import Vocabulary
from edge.config import AnalysisConfig
from edge.memory.store import Store
from hub.source import HubSource

SCHEMAS = importlib.resources.files("edge").joinpath("schemas")
PLAN_SCHEMA = json.loads(SCHEMAS.joinpath("plan.schema.json").read_text(encoding="utf-8"))
PAYLOAD_SCHEMA = json.loads(SCHEMAS.joinpath("payload.schema.json").read_text(encoding="utf-8"))
INTENTS: list[str] = PLAN_SCHEMA["properties"]["intent"]["enum"]
METRICS: list[str] = PLAN_SCHEMA["$defs"]["metric"]["enum"]
DIMENSIONS: list[str] = PLAN_SCHEMA["$defs"]["dimension"]["enum"]
BUCKETS: list[str] = PLAN_SCHEMA["properties"]["time_bucket"]["enum"]
ATTRIBUTE_KEYS = ("weather", "promotion", "zone", "product_category")
#: values no memory here holds
UNKNOWN = "zz_unknown_99"
#: what the exit checks say when they catch an operator's bug (never expected)
BUG_LINES = ("a summary whose every number is in the result", "an answer that names the stores")
EXAMPLES = 40


@dataclass
class World:
    name: str
    source: Any
    now: datetime
    event_ids: Any  # callable: ids -> the ones the memory holds
    vocab: Vocabulary = field(init=False)

    def __post_init__(self) -> None:
        self.vocab = self.source.vocabulary()


def _store_ids(store: Store) -> Any:
    def held(ids: list[str]) -> set[str]:
        with store.read() as conn:
            marks = ",".join("?" * len(ids))
            return {
                r[0] for r in conn.execute(f"SELECT event_id FROM events WHERE event_id IN ({marks})", ids)
            }

    return held


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, World]]:
    import test_hub_ask as hubask

    from edge.sync import messages as m
    from hub.db import open_hub
    from hub.ingest import ingest

    full = full_memory()
    sim = Store.open(full.path, readonly=True)
    root = tmp_path_factory.mktemp("exit")
    w2 = world2.generate()
    second = Store.open(root / "world2.db", timezone=world2.TZ)
    assert second.import_events(list(w2.events.values())).rejected == 0
    end = world2.START + timedelta(days=world2.DAYS)
    evs = hubask.store_events(hubask.ZONES)
    db = open_hub(str(root / "hub.db"), create=True)
    for s in hubask.summaries(evs, hubask.ZONES):
        assert ingest(db, m.summary_topic(s.store_id), s.encode()).outcome == "stored"
    hub_ids = {e.event_id for e in evs}
    yield {
        "sim": World("sim", sim.event_source(), full.now, _store_ids(sim)),
        "world2": World(
            "world2",
            second.event_source(),
            datetime(end.year, end.month, end.day, tzinfo=ZoneInfo(world2.TZ)),
            _store_ids(second),
        ),
        "hub": World("hub", HubSource(db), hubask.NOW, lambda ids: {i for i in ids if i in hub_ids}),
    }
    sim.close()
    second.close()
    db.close()


# -- generated plans ---------------------------------------------------------------------------------


@dataclass
class Drawn:
    plan: dict[str, Any]
    #: why the plan cannot be ok (a value never seen, a window outside the memory), or None
    never_ok: str | None = None


def _known(vocab: Vocabulary, key: str) -> list[str]:
    return [str(v) for v in vocab.attributes.get(key, ())][:6]


def _day(t: datetime, tz: str) -> datetime:
    """The store-local midnight of ``t``'s day."""
    local = t.astimezone(ZoneInfo(tz))
    return datetime(local.year, local.month, local.day, tzinfo=ZoneInfo(tz))


@st.composite
def plans(draw: st.DrawFn, w: World) -> Drawn:
    vocab = w.vocab
    tz = vocab.timezone
    assert vocab.earliest is not None and vocab.latest is not None
    first, last = _day(vocab.earliest, tz), _day(vocab.latest, tz)
    span = (last - first).days
    intent = draw(st.sampled_from(INTENTS))
    plan: dict[str, Any] = {"intent": intent, "language": draw(st.sampled_from(["en", "zh"]))}
    out = Drawn(plan)
    if intent not in ("retrieve", "co_occurrence") and draw(st.integers(0, 9)) > 0:
        plan["target_metric"] = draw(st.sampled_from(METRICS))
    if intent == "correlation":
        plan["second_metric"] = draw(st.sampled_from(METRICS))
    grouping = intent in ("breakdown", "top_k", "compare", "anomaly")
    if draw(st.integers(0, 1 if grouping else 5)) == 0:  # any intent may be asked per group
        plan["group_by"] = draw(
            st.lists(st.sampled_from(DIMENSIONS[:-1]), min_size=1, max_size=2, unique=True)
        )
    if intent in ("trend", "anomaly", "periodicity", "forecast") and draw(st.booleans()):
        plan["time_bucket"] = draw(st.sampled_from(BUCKETS))
    if intent == "top_k":
        plan["top_k"] = draw(st.integers(1, 5))
    if intent == "retrieve":
        plan["semantic_query"] = draw(st.sampled_from(["顾客投诉排队太久", "queue complaints", "Kasse"]))
    if intent == "forecast":
        plan["horizon"] = "P1M"
    if intent == "co_occurrence":
        sides = [*vocab.event_types[:4], *(f"weather={v}" for v in _known(vocab, "weather")[:2])]
        plan["pair"] = {"a": draw(st.sampled_from(sides)), "b": draw(st.sampled_from(sides))}
    if intent == "compare":
        kind = draw(st.sampled_from(["dimension", "groups", "periods"]))
        if kind == "periods":
            mid = first + timedelta(days=span // 2)
            plan["compare"] = {
                "periods": [
                    {"label": "before", "time_range": {"until": mid.isoformat()}},
                    {"label": "after", "time_range": {"since": mid.isoformat()}},
                ]
            }
        else:
            dim = draw(st.sampled_from(["weather", "promotion", "zone", "store_id", "is_weekend", "hour"]))
            cmp: dict[str, Any] = {"dimension": dim}
            if kind == "groups":
                pool = {
                    "store_id": list(vocab.store_ids),
                    "is_weekend": ["true", "false"],
                    "hour": ["10", "18"],
                }.get(dim) or _known(vocab, dim)
                if len(pool) >= 2:
                    cmp["groups"] = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=2, unique=True))
                    if draw(st.integers(0, 4)) == 0:  # a group the memory has never seen
                        cmp["groups"].append(UNKNOWN)
                        out.never_ok = f"group {dim}={UNKNOWN}"
            plan["compare"] = cmp
    filters: dict[str, Any] = {}
    narrow = draw(st.booleans())  # half the plans ask for the memory's whole span, unfiltered
    which = draw(st.sampled_from(["none", "none", "known", "unknown"])) if narrow else "none"
    if which != "none":
        filters["store_id"] = [draw(st.sampled_from(vocab.store_ids))] if which == "known" else [UNKNOWN]
        out.never_ok = out.never_ok or (f"store {UNKNOWN}" if which == "unknown" else None)
    if narrow and draw(st.integers(0, 3)) == 0:
        unknown = draw(st.booleans())
        filters["event_type"] = [UNKNOWN if unknown else draw(st.sampled_from(vocab.event_types))]
        out.never_ok = out.never_ok or ("event type" if unknown else None)
    window = draw(st.sampled_from(["none", "last", "days", "days", "within_day", "before", "after"]))
    if window == "last":
        filters["time_range"] = {"last": draw(st.sampled_from(["P1W", "P2W", "P1M"]))}
    elif window == "days":
        a = draw(st.integers(0, max(span - 8, 0)))
        b = draw(st.integers(a + 1, span))
        filters["time_range"] = {
            "since": (first + timedelta(days=a)).isoformat(),
            "until": (first + timedelta(days=b)).isoformat(),
        }
    elif window == "within_day":
        d = first + timedelta(days=draw(st.integers(1, max(span - 1, 1))))
        filters["time_range"] = {
            "since": (d + timedelta(hours=10)).isoformat(),
            "until": (d + timedelta(hours=draw(st.integers(12, 17)))).isoformat(),
        }
    elif window in ("before", "after"):
        years = timedelta(days=800)
        d = first - years if window == "before" else last + years
        filters["time_range"] = {"since": d.isoformat(), "until": (d + timedelta(days=30)).isoformat()}
        out.never_ok = out.never_ok or f"the window {window} the memory"
    if narrow and draw(st.integers(0, 4)) == 0:
        filters["hours"] = sorted(draw(st.sets(st.integers(8, 20), min_size=1, max_size=4)))
    if narrow and draw(st.integers(0, 4)) == 0:
        filters["days_of_week"] = sorted(draw(st.sets(st.integers(0, 6), min_size=1, max_size=5)))
    attr = (
        draw(st.sampled_from(["none", "none", "known", "unknown_value", "unknown_key"])) if narrow else "none"
    )
    if attr == "known":
        key = draw(st.sampled_from([k for k in ATTRIBUTE_KEYS if _known(vocab, k)]))
        filters["attributes"] = {key: draw(st.sampled_from(_known(vocab, key)))}
    elif attr == "unknown_value":
        filters["attributes"] = {draw(st.sampled_from(ATTRIBUTE_KEYS)): UNKNOWN}
        out.never_ok = out.never_ok or "attribute value"
    elif attr == "unknown_key":
        filters["attributes"] = {"zz_key": "x"}
        out.never_ok = out.never_ok or "attribute key"
    if narrow and draw(st.integers(0, 7)) == 0:
        filters["entities"] = [UNKNOWN]
        out.never_ok = out.never_ok or "entity"
    if filters:
        plan["filters"] = filters
    validate_plan(plan)
    return out


# -- the invariants ------------------------------------------------------------------------------------


def check(w: World, drawn: Drawn, p: dict[str, Any]) -> None:
    plan = drawn.plan
    jsonschema.validate(p, PAYLOAD_SCHEMA)
    reading = p["interpretation"]
    assert reading["text"]
    assert reading["filters"] == {k: v for k, v in (plan.get("filters") or {}).items() if k != "time_range"}
    lines = " ".join(p["missing"])
    assert not any(b in lines for b in BUG_LINES), (p["summary"], p["missing"])
    if p["status"] != "ok":
        assert p["result"] == {} and p["evidence"] == [] and p["action"] is None
        if p["status"] == "insufficient_data":
            assert p["missing"]
        return
    assert drawn.never_ok is None, (drawn.never_ok, p["summary"])
    assert not honesty.empty_result(plan["intent"], p["result"])
    ids = [e["event_id"] for e in p["evidence"]]
    assert ids and len(ids) == len(set(ids)) and p["evidence_count"] >= len(ids)
    assert w.event_ids(ids) == set(ids)
    tz = engine._zone_for(plan, w.source, None)
    flt = engine.build_filter(plan, w.now, tz, wall_clock=engine._several_zones(plan, w.source))
    assert honesty.unapplied(w.source, flt, "en") == []
    assert honesty.ungrouped(plan, registry()[plan["intent"]].group_keys, "en") == []
    assert honesty.numbers_outside(p["summary"], p["result"]) == [], p["summary"]
    assert not honesty.stores_unnamed(plan, p["summary"], p["result"], w.vocab.store_ids)


@pytest.mark.parametrize("name", ["sim", "world2", "hub"])
def test_every_payload_keeps_the_exit_invariants(name: str, worlds: dict[str, World]) -> None:
    w = worlds[name]
    seen: dict[str, int] = {}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(plans(w))
    def run(drawn: Drawn) -> None:
        p = run_plan(drawn.plan, w.source, question="q", now=w.now, config=AnalysisConfig())
        seen[p["status"]] = seen.get(p["status"], 0) + 1
        check(w, drawn, p)

    run()
    # the invariants above mean something: some generated plans are answered
    assert seen.get("ok", 0) >= 3, seen


def test_a_filter_the_hub_cannot_apply_is_not_answered(worlds: dict[str, World]) -> None:
    """A window within one day: the hub holds whole days, so the answer would be the day's."""
    w = worlds["hub"]
    day = "2025-11-20"
    plan = {
        "intent": "aggregate",
        "target_metric": "footfall",
        "filters": {
            "store_id": ["s1"],
            "time_range": {"since": f"{day}T10:00:00+08:00", "until": f"{day}T15:00:00+08:00"},
        },
    }
    p = run_plan(plan, w.source, question="q", now=w.now, config=AnalysisConfig(), language="en")
    assert p["status"] == "insufficient_data" and any("time_range" in x for x in p["missing"]), p
    whole = {
        **plan,
        "filters": {
            "store_id": ["s1"],
            "time_range": {"since": f"{day}T00:00:00+08:00", "until": "2025-11-21T00:00:00+08:00"},
        },
    }
    assert run_plan(whole, w.source, question="q", now=w.now, config=AnalysisConfig())["status"] == "ok"


def test_the_exit_checks_catch_what_they_guard() -> None:
    assert honesty.numbers_outside("rain 128.72 vs 97 on 2025-10-03", {"v": 128.7231, "d": "2025-10-04"}) == [
        "2025-10-03",
        "97",
    ]
    assert honesty.numbers_outside("1,234 visitors, 33.1% more", {"n": 1234, "pct": 0.3312}) == []
    plan = {"intent": "top_k", "group_by": ["store_id"]}
    assert honesty.stores_unnamed(
        plan, "the top store had 12", {"items": [{"key": "s1", "value": 12}]}, ["s1"]
    )
    assert not honesty.stores_unnamed(plan, "s1 had 12", {"items": [{"key": "s1", "value": 12}]}, ["s1"])
    assert not honesty.stores_unnamed({"intent": "aggregate"}, "12", {"value": 12}, ["s1"])

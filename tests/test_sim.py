"""The store simulator: schema-valid MEV, deterministic per seed, planted effects recoverable.

Every effect is recomputed here directly from the generated dicts (plain Python/numpy/scipy over
the events, following CONTRACT.md section 2's metric definitions), and compared with the
configured effect sizes, not with copied numbers.
"""

from __future__ import annotations

import io
import json
import statistics
from collections import Counter, defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from scipy import stats as sps

from edge.errors import ConfigError
from edge.sim import Effects, SimConfig, expected, simulate, simulate_jsonl, simulate_stores, training_day

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "edge" / "schemas" / "mev.schema.json"


@pytest.fixture(scope="module")
def default_run() -> list[dict[str, Any]]:
    return list(simulate(SimConfig()))


def _local(ev: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(ev["timestamp"])


def _bill_totals(events: list[dict[str, Any]]) -> dict[str, tuple[str, float, date]]:
    totals: dict[str, float] = defaultdict(float)
    meta: dict[str, tuple[str, date]] = {}
    for ev in events:
        if ev["event_type"] == "purchase":
            s = ev["stats"]
            totals[s["bill_id"]] += s["order_amount"]
            meta[s["bill_id"]] = (s["weather"], _local(ev).date())
    return {b: (meta[b][0], t, meta[b][1]) for b, t in totals.items()}


def _daily_footfall(events: list[dict[str, Any]]) -> dict[date, int]:
    out: dict[date, int] = defaultdict(int)
    for ev in events:
        if ev["event_type"] == "customer_enter":
            out[_local(ev).date()] += ev["stats"].get("person_count", 1)
    return out


def test_every_event_is_schema_valid_and_well_formed() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    events = list(simulate(SimConfig(days=20, customers_per_day=150)))
    ids = set()
    for ev in events:
        errors = list(validator.iter_errors(ev))
        assert not errors, (ev, errors[0].message)
        ids.add(ev["event_id"])
        ts = _local(ev)
        assert ts.utcoffset() is not None and ts.utcoffset().total_seconds() == 8 * 3600  # type: ignore[union-attr]
        assert 8 <= ts.hour < 22
        assert ev["stats"]["weather"] in {"rain", "sunny", "cloudy"}
        if "end_timestamp" in ev:
            assert datetime.fromisoformat(ev["end_timestamp"]) >= ts
    assert len(ids) == len(events), "event ids must be unique"
    times = [_local(ev) for ev in events]
    assert times == sorted(times), "events come in time order"
    types = Counter(ev["event_type"] for ev in events)
    for needed in (
        "customer_enter",
        "dwell",
        "checkout_queue",
        "purchase",
        "customer_inquiry",
        "staff_guidance",
        "staff_operation",
        "staff_error",
        "complaint",
        "promotion_broadcast",
    ):
        assert types[needed] > 0, needed
    texts = [ev["text"] for ev in events if "text" in ev]
    assert any("排队" in t for t in texts) and any(t.isascii() for t in texts)
    assert all("text" in ev["modality"] for ev in events if "text" in ev)
    assert all("embedding" not in ev for ev in events)
    assert any(e.startswith("customer_") for ev in events for e in ev.get("entities", []))
    bought = [r for ev in events for r in ev.get("relations", []) if r["type"] == "bought"]
    assert bought and all(r["head"].startswith("customer_") for r in bought)
    refs = [r for ev in events for r in ev["raw_ref"]]
    assert any(r.startswith("pos://pos_1/") for r in refs) and any(r.startswith("file:///") for r in refs)
    promo_days = set(expected(SimConfig(days=20, customers_per_day=150))["promotion_dates"])
    for ev in events:
        on_promo = _local(ev).date().isoformat() in promo_days
        assert ("promotion" in ev["stats"]) == on_promo
        if ev["event_type"] == "promotion_broadcast":
            assert on_promo


def test_deterministic_per_seed_and_store() -> None:
    a = list(simulate(SimConfig(days=4, seed=11)))
    b = list(simulate(SimConfig(days=4, seed=11)))
    c = list(simulate(SimConfig(days=4, seed=12)))
    d = list(simulate(SimConfig(days=4, seed=11, store_id="bj_chaoyang_02")))
    assert a == b
    assert a != c
    assert [e["stats"] for e in a] != [e["stats"] for e in d]


def test_jsonl_and_without_text() -> None:
    cfg = SimConfig(days=3, with_text=False)
    buf = io.StringIO()
    n = simulate_jsonl(cfg, buf)
    lines = buf.getvalue().splitlines()
    assert n == len(lines) == len(list(simulate(cfg)))
    parsed = [json.loads(line) for line in lines]
    assert all("text" not in ev and "text" not in ev["modality"] for ev in parsed)


def test_several_stores_merge_in_time_order() -> None:
    a = SimConfig(days=3, store_id="sh_xuhui_01")
    b = SimConfig(days=3, store_id="sz_nanshan_03", timezone="Asia/Shanghai", customers_per_day=100)
    merged = list(simulate_stores([a, b]))
    assert len(merged) == len(list(simulate(a))) + len(list(simulate(b)))
    times = [_local(ev) for ev in merged]
    assert times == sorted(times)
    assert {ev["store_id"] for ev in merged} == {"sh_xuhui_01", "sz_nanshan_03"}
    with pytest.raises(ConfigError):
        list(simulate_stores([a, a]))


def test_bad_effects_are_refused() -> None:
    with pytest.raises(ConfigError):
        Effects(staff_error_rate_before=1.5)
    with pytest.raises(ConfigError):
        Effects(rain_high_margin_inquiry_lift=9.0)
    with pytest.raises(ConfigError):
        SimConfig(timezone="Mars/Olympus")


def test_rain_raises_order_value(default_run: list[dict[str, Any]]) -> None:
    bills = _bill_totals(default_run)
    rain = [t for w, t, _ in bills.values() if w == "rain"]
    sunny = [t for w, t, _ in bills.values() if w == "sunny"]
    assert len(rain) > 300 and len(sunny) > 300
    ratio = statistics.fmean(rain) / statistics.fmean(sunny)
    assert abs(ratio - (1 + Effects().rain_aov_uplift)) < 0.1 * (1 + Effects().rain_aov_uplift)
    assert sps.ttest_ind(rain, sunny, equal_var=False).pvalue < 1e-6
    # the weather on each event is the day's weather from the Markov chain
    truth = expected(SimConfig())["weather_by_date"]
    assert all(truth[d.isoformat()] == w for w, _, d in bills.values())


def test_revenue_equals_sum_of_lines_and_aov_definition(default_run: list[dict[str, Any]]) -> None:
    lines = [ev for ev in default_run if ev["event_type"] == "purchase"]
    bills = {ev["stats"]["bill_id"] for ev in lines}
    assert len(bills) < len(lines), "some bills have several lines"
    aov = sum(ev["stats"]["order_amount"] for ev in lines) / len(bills)
    assert 0.85 * Effects().base_order_value < aov < 1.3 * Effects().base_order_value


def test_evening_peak_moves_later(default_run: list[dict[str, Any]]) -> None:
    cfg = SimConfig()
    first: Counter[int] = Counter()
    last: Counter[int] = Counter()
    for ev in default_run:
        if ev["event_type"] != "customer_enter":
            continue
        ts = _local(ev)
        offset = (ts.date() - cfg.start).days
        if offset < cfg.days / 3:
            first[ts.hour] += ev["stats"]["person_count"]
        elif offset >= 2 * cfg.days / 3:
            last[ts.hour] += ev["stats"]["person_count"]
    assert first.most_common(1)[0][0] == Effects().evening_peak_start_hour
    assert last.most_common(1)[0][0] == Effects().evening_peak_end_hour
    morning_first = max(first[h] for h in range(8, 13))
    assert morning_first < first[Effects().evening_peak_start_hour], "morning peak is the smaller one"


def test_training_lowers_staff_errors(default_run: list[dict[str, Any]]) -> None:
    day = training_day(SimConfig())
    assert day == SimConfig().start.fromordinal(SimConfig().start.toordinal() + 60)
    counts: dict[tuple[bool, str], int] = Counter()
    for ev in default_run:
        if ev["event_type"] in ("staff_error", "staff_operation"):
            counts[(_local(ev).date() >= day, ev["event_type"])] += 1
    for after, rate in ((False, Effects().staff_error_rate_before), (True, Effects().staff_error_rate_after)):
        err = counts[(after, "staff_error")]
        observed = err / (err + counts[(after, "staff_operation")])
        assert abs(observed - rate) < 0.02, (after, observed, rate)


def test_weekend_conversion_uplift(default_run: list[dict[str, Any]]) -> None:
    bills: dict[bool, set[str]] = defaultdict(set)
    persons: dict[bool, int] = defaultdict(int)
    for ev in default_run:
        weekend = _local(ev).weekday() >= 5
        if ev["event_type"] == "purchase":
            bills[weekend].add(ev["stats"]["bill_id"])
        elif ev["event_type"] == "customer_enter":
            persons[weekend] += ev["stats"]["person_count"]
    weekday_conv = len(bills[False]) / persons[False]
    weekend_conv = len(bills[True]) / persons[True]
    assert abs(weekday_conv - Effects().base_conversion_rate) < 0.03
    assert abs(weekend_conv / weekday_conv - (1 + Effects().weekend_conversion_uplift)) < 0.1


def test_promotion_days_have_longer_queues(default_run: list[dict[str, Any]]) -> None:
    queues: dict[bool, list[int]] = defaultdict(list)
    for ev in default_run:
        if ev["event_type"] == "checkout_queue":
            queues["promotion" in ev["stats"]].append(ev["stats"]["queue_length"])
    ratio = statistics.fmean(queues[True]) / statistics.fmean(queues[False])
    assert abs(ratio - (1 + Effects().promotion_queue_uplift)) < 0.15 * (1 + Effects().promotion_queue_uplift)


def test_footfall_anomalies_and_weekly_cycle(default_run: list[dict[str, Any]]) -> None:
    daily = _daily_footfall(default_run)
    planted = {date.fromisoformat(d) for d in expected(SimConfig())["footfall_anomaly_dates"]}
    assert len(planted) == 3
    by_weekday: dict[int, list[int]] = defaultdict(list)
    for d, n in daily.items():
        if d not in planted:
            by_weekday[d.weekday()].append(n)
    typical = {wd: statistics.median(v) for wd, v in by_weekday.items()}
    for d, n in daily.items():
        spike = n / typical[d.weekday()]
        if d in planted:
            assert spike > 0.8 * Effects().footfall_anomaly_factor
        else:
            assert spike < 1.6
    series = np.array([daily[d] for d in sorted(daily) if d not in planted], dtype=float)
    weekend = statistics.fmean(typical[wd] for wd in (5, 6))
    weekday = statistics.fmean(typical[wd] for wd in range(5))
    assert weekend / weekday > 1.2
    centred = series - series.mean()
    acf = [float(np.dot(centred[:-lag], centred[lag:]) / np.dot(centred, centred)) for lag in range(1, 11)]
    assert int(np.argmax(acf)) + 1 == expected(SimConfig())["weekly_period_days"]


def test_rain_brings_high_margin_inquiries(default_run: list[dict[str, Any]]) -> None:
    share: dict[bool, list[bool]] = defaultdict(list)
    for ev in default_run:
        if ev["event_type"] == "customer_inquiry":
            share[ev["stats"]["weather"] == "rain"].append(ev["stats"]["topic"] == "high_margin_product")
    ratio = statistics.fmean(share[True]) / statistics.fmean(share[False])
    assert abs(ratio - (1 + Effects().rain_high_margin_inquiry_lift)) < 0.3 * (
        1 + Effects().rain_high_margin_inquiry_lift
    )


def test_complaints_rise_with_queue_length(default_run: list[dict[str, Any]]) -> None:
    queue: dict[date, list[int]] = defaultdict(list)
    complaints: Counter[date] = Counter()
    for ev in default_run:
        d = _local(ev).date()
        if ev["event_type"] == "checkout_queue":
            queue[d].append(ev["stats"]["queue_length"])
        elif ev["event_type"] == "complaint":
            complaints[d] += 1
    days = sorted(queue)
    r, p = sps.pearsonr([statistics.fmean(queue[d]) for d in days], [complaints[d] for d in days])
    assert r > 0.3 and p < 0.01


def test_top_products_and_loyal_customer_drift(default_run: list[dict[str, Any]]) -> None:
    bills_per_product: dict[str, set[str]] = defaultdict(set)
    hours: dict[bool, list[int]] = defaultdict(list)
    cfg = SimConfig()
    for ev in default_run:
        if ev["event_type"] == "purchase":
            bills_per_product[ev["stats"]["product_id"]].add(ev["stats"]["bill_id"])
        if ev["event_type"] == "customer_enter" and "customer_123" in ev.get("entities", []):
            offset = (_local(ev).date() - cfg.start).days
            if offset < cfg.days / 3 or offset >= 2 * cfg.days / 3:
                hours[offset >= 2 * cfg.days / 3].append(_local(ev).hour)
    top = sorted(bills_per_product, key=lambda p: -len(bills_per_product[p]))[:5]
    assert top == expected(cfg)["top_products"]
    assert statistics.fmean(hours[True]) - statistics.fmean(hours[False]) > 5


def test_custom_effects_are_followed() -> None:
    eff = Effects(rain_aov_uplift=0.0, training_date=date(2025, 9, 11), staff_error_rate_after=0.3)
    cfg = SimConfig(days=30, customers_per_day=200, effects=eff, seed=3)
    events = list(simulate(cfg))
    bills = _bill_totals(events)
    rain = [t for w, t, _ in bills.values() if w == "rain"]
    other = [t for w, t, _ in bills.values() if w != "rain"]
    assert abs(statistics.fmean(rain) / statistics.fmean(other) - 1) < 0.1
    after = [ev for ev in events if _local(ev).date() >= date(2025, 9, 11)]
    err = sum(ev["event_type"] == "staff_error" for ev in after)
    ops = sum(ev["event_type"] == "staff_operation" for ev in after)
    assert abs(err / (err + ops) - 0.3) < 0.04
    assert expected(cfg)["training_date"] == "2025-09-11"


def test_a_store_of_the_fleet_has_its_own_zones_and_climate() -> None:
    """``SimConfig.zones`` and ``climate`` (the fleet's per-store knobs, issue 26): dwell and
    guidance only in the store's zones; a rainy climate rains more than a dry one; bad values are
    config errors. The default store is unchanged (its own tests above hold)."""
    from edge.sim import weather_by_day

    cfg = SimConfig(days=20, customers_per_day=60, with_text=False, zones=("fresh", "bakery"))
    zones = {e["stats"]["zone"] for e in simulate(cfg) if e["event_type"] in ("dwell", "staff_guidance")}
    assert zones == {"fresh", "bakery"}
    rain = {c: weather_by_day(SimConfig(days=365, climate=c)).count("rain") for c in ("rainy", "mild", "dry")}
    assert rain["rainy"] > rain["mild"] > rain["dry"] > 0, rain
    for bad in ({"zones": ("moon",)}, {"zones": ()}, {"zones": ("fresh", "fresh")}, {"climate": "arctic"}):
        with pytest.raises(ConfigError):
            SimConfig(**bad)  # type: ignore[arg-type]

"""A seeded simulator of a retail store's multimodal event stream, with planted effects of known size.

Owns the generation of MEV events (``mev.schema.json``) for ``adamm demo``, the benchmarks and the
tests of every operator: entrance-camera footfall, shelf dwell, checkout queues, POS bill lines,
shopper inquiries and staff speech (Chinese transcripts, some English), staff operations and
mistakes, complaints and promotion broadcasts, all tagged with the day's weather (a Markov chain)
and promotion. The effects in :class:`Effects` are planted exactly; :func:`expected` states them in
analysis terms so a test can check that an operator recovers them.

Called by ``edge.demo``, ``scripts/bench_ask.py`` and tests. Pure CPU (numpy), no I/O except
:func:`simulate_jsonl` writing to the stream it is given.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from edge.errors import ConfigError
from edge.sim import catalog as cat

logger = logging.getLogger(__name__)

OPEN_HOUR = 8
CLOSE_HOUR = 22
WEATHERS: tuple[str, ...] = ("sunny", "cloudy", "rain")
#: The default (``mild``) weather Markov chain: row = today, column = tomorrow (sunny, cloudy, rain).
WEATHER_TRANSITIONS = np.array(cat.CLIMATES["mild"][1])
#: Footfall multiplier per weekday (Monday first) when the weekly cycle is on; mean 1.
WEEKLY_FACTORS: tuple[float, ...] = (0.85, 0.85, 0.90, 0.95, 1.05, 1.25, 1.15)
WEATHER_FOOTFALL: dict[str, float] = {"sunny": 1.0, "cloudy": 0.97, "rain": 0.90}
PROMOTION_PROBABILITY = 0.2
PERSON_COUNTS = np.array([1, 2, 3])
PERSON_PROBS = np.array([0.6, 0.3, 0.1])
MEAN_PERSONS = float((PERSON_COUNTS * PERSON_PROBS).sum())
ORDER_VALUE_SIGMA = 0.55
INQUIRIES_PER_DAY = 12.0
GUIDANCE_PER_DAY = 8.0
STAFF_ACTIONS_PER_DAY = 60.0
QUEUE_SAMPLE_MINUTES = 10
LOYAL_CUSTOMER = "customer_123"
MEDIA_ROOT = "file:///var/lib/adamm/media"


@dataclass(frozen=True)
class Effects:
    """The planted truths. Defaults tell the demo's story; every field has a known effect size.

    - ``rain_aov_uplift``: a bill's expected total on rain days is ``(1 + x)`` times the sunny
      (and cloudy) days' ``base_order_value``; totals are lognormal (sigma 0.55).
    - ``evening_peak_start_hour`` / ``evening_peak_end_hour``: the store-local hour with the most
      footfall over the first third of the run, and over the last third; the evening peak moves
      linearly between them during the middle third (the morning peak at 10-11 stays smaller).
    - ``training_date``: staff training day; ``staff_error`` / (``staff_error`` +
      ``staff_operation``) is ``staff_error_rate_before`` before it and ``staff_error_rate_after``
      from it on. ``None`` means ``start + min(60, 2 * days // 3)`` days.
    - ``weekend_conversion_uplift``: ``conversion_rate`` (bills / persons) on Saturday and Sunday is
      ``(1 + x)`` times the weekday ``base_conversion_rate``.
    - ``promotion_queue_uplift``: expected checkout ``queue_length`` on promotion days is
      ``(1 + x)`` times that of a normal day with the same arrivals.
    - ``footfall_anomaly_days``: day offsets (0 = start) whose footfall is multiplied by
      ``footfall_anomaly_factor``. ``None`` means three days running, starting 15 days before the
      end (offsets ``days-15 .. days-13``); offsets outside the run are ignored.
    - ``weekly_cycle``: footfall (and so revenue) follows :data:`WEEKLY_FACTORS`, weekends highest.
    - ``rain_high_margin_inquiry_lift``: the share of ``customer_inquiry`` events with
      ``topic=high_margin_product`` is ``(1 + x)`` times higher on rain days (base share 0.2).
    - ``queue_complaint_coupling``: a day's expected ``complaint`` count is
      ``0.5 + x * (that day's mean checkout queue length)``, so complaints correlate positively
      with queue length across days.
    - ``second_checkout_date``: the day a second checkout opens in the evening (an action done,
      ``adamm-hub demo`` acknowledges it at the store's opening that day); from it on, the expected
      checkout ``queue_length`` in the store-local hours ``second_checkout_hours`` (start
      inclusive, end exclusive) is ``(1 + second_checkout_queue_change)`` times what it was.
      ``None``: no second checkout.
    """

    rain_aov_uplift: float = 0.33
    evening_peak_start_hour: int = 18
    evening_peak_end_hour: int = 20
    training_date: date | None = None
    staff_error_rate_before: float = 0.12
    staff_error_rate_after: float = 0.05
    weekend_conversion_uplift: float = 0.25
    promotion_queue_uplift: float = 0.5
    footfall_anomaly_days: tuple[int, ...] | None = None
    footfall_anomaly_factor: float = 2.5
    weekly_cycle: bool = True
    rain_high_margin_inquiry_lift: float = 1.0
    queue_complaint_coupling: float = 4.0
    base_order_value: float = 96.0
    base_conversion_rate: float = 0.4
    second_checkout_date: date | None = None
    second_checkout_hours: tuple[int, int] = (18, 21)
    second_checkout_queue_change: float = -0.35

    def __post_init__(self) -> None:
        if self.rain_aov_uplift <= -1:
            raise ConfigError(f"rain_aov_uplift={self.rain_aov_uplift}: must be above -1")
        for name in ("evening_peak_start_hour", "evening_peak_end_hour"):
            hour = getattr(self, name)
            if not 16 <= hour <= 20:
                raise ConfigError(f"{name}={hour}: the evening peak must lie in 16..20 (store open 8-22)")
        for name in ("staff_error_rate_before", "staff_error_rate_after"):
            rate = getattr(self, name)
            if not 0 <= rate <= 1:
                raise ConfigError(f"{name}={rate}: a rate must lie in 0..1")
        p_weekend = self.base_conversion_rate * MEAN_PERSONS * (1 + self.weekend_conversion_uplift)
        if self.base_conversion_rate <= 0 or p_weekend > 1 or self.weekend_conversion_uplift <= -1:
            raise ConfigError(
                "base_conversion_rate * 1.5 * (1 + weekend_conversion_uplift) must lie in (0, 1] "
                f"(got {p_weekend:.3f}): one group makes at most one bill"
            )
        share = cat.INQUIRY_TOPIC_BASE["high_margin_product"] * (1 + self.rain_high_margin_inquiry_lift)
        if not 0 <= share <= 1:
            raise ConfigError(
                f"rain_high_margin_inquiry_lift={self.rain_high_margin_inquiry_lift}: "
                "0.2 * (1 + lift) must lie in 0..1"
            )
        if self.promotion_queue_uplift <= -1 or self.footfall_anomaly_factor < 0:
            raise ConfigError("promotion_queue_uplift must be above -1 and footfall_anomaly_factor >= 0")
        if self.second_checkout_queue_change <= -1:
            raise ConfigError("second_checkout_queue_change must be above -1")
        if self.queue_complaint_coupling < 0 or self.base_order_value <= 0:
            raise ConfigError("queue_complaint_coupling must be >= 0 and base_order_value > 0")


@dataclass(frozen=True)
class SimConfig:
    """One simulated store: where, when, how busy, which seed, which effects.

    ``customers_per_day`` is the mean footfall (persons) of an ordinary day; ``with_text=False``
    leaves transcripts out (no ``text`` field or modality), for fast large benchmarks. ``zones``
    are the shopping zones its cameras watch (from :data:`catalog.DWELL_ZONES` and
    :data:`catalog.EXTRA_DWELL_ZONES`; ``None``: the four of the default store) and ``climate``
    its weather (a key of :data:`catalog.CLIMATES`), so that the stores of a fleet differ.
    """

    store_id: str = "sh_xuhui_01"
    timezone: str = "Asia/Shanghai"
    start: date = date(2025, 9, 1)
    days: int = 90
    seed: int = 7
    customers_per_day: int = 300
    effects: Effects = field(default_factory=Effects)
    with_text: bool = True
    zones: tuple[str, ...] | None = None
    climate: str = "mild"

    def __post_init__(self) -> None:
        if self.days < 1:
            raise ConfigError(f"days={self.days}: simulate at least one day")
        if self.customers_per_day < 1:
            raise ConfigError(f"customers_per_day={self.customers_per_day}: must be at least 1")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ConfigError(f"timezone={self.timezone!r} is not an IANA time zone name") from exc
        if self.climate not in cat.CLIMATES:
            raise ConfigError(f"climate={self.climate!r}: one of {', '.join(cat.CLIMATES)}")
        if self.zones is not None:
            known = {z for z, _, _ in _ALL_ZONES} - {"checkout"}
            bad = [z for z in self.zones if z not in known]
            if bad or not self.zones or len(set(self.zones)) != len(self.zones):
                raise ConfigError(
                    f"zones={self.zones!r}: distinct names from {', '.join(sorted(known))}, at least one"
                )


_ALL_ZONES: tuple[tuple[str, str, float], ...] = cat.DWELL_ZONES + cat.EXTRA_DWELL_ZONES


def dwell_zones(config: SimConfig) -> tuple[tuple[str, str, float], ...]:
    """The store's shopping zones as (zone, Chinese name, mean dwell seconds), in catalogue order."""
    names = config.zones if config.zones is not None else cat.DEFAULT_ZONES
    return tuple(z for z in _ALL_ZONES if z[0] in names)


def training_day(config: SimConfig) -> date:
    """The staff training date the simulation uses (``Effects.training_date`` or its default)."""
    if config.effects.training_date is not None:
        return config.effects.training_date
    return config.start + timedelta(days=min(60, 2 * config.days // 3))


def anomaly_offsets(config: SimConfig) -> tuple[int, ...]:
    """Day offsets with a planted footfall spike, inside the run."""
    days = config.effects.footfall_anomaly_days
    if days is None:
        days = tuple(config.days - 15 + i for i in range(3))
    return tuple(sorted({d for d in days if 0 <= d < config.days}))


def evening_peak(config: SimConfig, offset: int) -> float:
    """The planted evening peak hour on day ``offset``: flat, then linear over the middle third, then flat."""
    eff = config.effects
    first_end = config.days / 3.0
    last_start = 2.0 * config.days / 3.0
    if offset < first_end:
        return float(eff.evening_peak_start_hour)
    if offset >= last_start:
        return float(eff.evening_peak_end_hour)
    frac = (offset - first_end) / (last_start - first_end)
    return eff.evening_peak_start_hour + frac * (eff.evening_peak_end_hour - eff.evening_peak_start_hour)


def _streams(config: SimConfig) -> list[np.random.Generator]:
    """Independent generators: weather, promotions, the day's events (one spawn per day follows)."""
    entropy = [config.seed, zlib.crc32(config.store_id.encode("utf-8"))]
    return [np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(3)]


def weather_by_day(config: SimConfig) -> list[str]:
    """The day-by-day weather of the run (a Markov chain started from its stationary mix)."""
    rng = _streams(config)[0]
    first, rows = cat.CLIMATES[config.climate]
    transitions = np.array(rows)
    state = int(rng.choice(3, p=list(first)))
    out: list[str] = []
    for _ in range(config.days):
        out.append(WEATHERS[state])
        state = int(rng.choice(3, p=transitions[state]))
    return out


def promotion_by_day(config: SimConfig) -> list[bool]:
    """Which days of the run are promotion days (each with probability 0.2)."""
    rng = _streams(config)[1]
    return [bool(x) for x in rng.random(config.days) < PROMOTION_PROBABILITY]


def _popularity() -> np.ndarray:
    p = np.array([prod.popularity for prod in cat.PRODUCTS])
    return np.asarray(p / p.sum())


class _Day:
    """Builds one store-local day's events; ``events`` holds (second-of-day, tie, dict)."""

    def __init__(
        self, config: SimConfig, offset: int, weather: str, promotion: bool, rng: np.random.Generator
    ) -> None:
        self.cfg = config
        self.eff = config.effects
        self.offset = offset
        self.day = config.start + timedelta(days=offset)
        self.ymd = self.day.isoformat()
        self.compact = self.day.strftime("%Y%m%d")
        self.weather = weather
        self.promotion = promotion
        self.rng = rng
        self.events: list[tuple[float, int, dict[str, Any]]] = []
        self.zones = dwell_zones(config)
        self.bill_seq = 0
        self.stats_base: dict[str, Any] = {"weather": weather}
        if promotion:
            self.stats_base["promotion"] = True

    # -- helpers -------------------------------------------------------------------------------
    def _add(
        self,
        second: float,
        event_type: str,
        source: str,
        modality: list[str],
        raw_ref: str,
        stats: dict[str, Any],
        *,
        text: str | None = None,
        entities: list[str] | None = None,
        relations: list[dict[str, str]] | None = None,
        duration: float | None = None,
    ) -> None:
        ev: dict[str, Any] = {
            "store_id": self.cfg.store_id,
            "source": source,
            "event_type": event_type,
            "modality": modality,
            "raw_ref": [raw_ref],
            "stats": {**self.stats_base, **stats},
        }
        if text is not None:
            if self.cfg.with_text:
                ev["text"] = text
                ev["modality"] = [*modality, "text"]
        if entities:
            ev["entities"] = entities
        if relations:
            ev["relations"] = relations
        if duration is not None:
            ev["_duration"] = duration
        self.events.append((second, len(self.events), ev))

    def _media(self, source: str, second: float, ext: str, n: int) -> str:
        return f"{MEDIA_ROOT}/{source}/{self.ymd}/{_hhmmss(second)}_{n:04d}.{ext}"

    def _arrival_seconds(self, n: int) -> np.ndarray:
        """Arrival times (seconds of day) from the morning + evening peak mixture."""
        rng = self.rng
        peak = evening_peak(self.cfg, self.offset)
        comp = rng.choice(3, size=n, p=[0.28, 0.45, 0.27])
        hours = np.where(
            comp == 0,
            rng.normal(10.5, 0.9, n),
            np.where(comp == 1, rng.normal(peak + 0.5, 0.8, n), rng.uniform(OPEN_HOUR, CLOSE_HOUR, n)),
        )
        secs = np.clip(hours * 3600.0, OPEN_HOUR * 3600.0, CLOSE_HOUR * 3600.0 - 120.0)
        return np.sort(secs)

    # -- the day's story -----------------------------------------------------------------------
    def build(self) -> None:
        eff, rng = self.eff, self.rng
        factor = WEEKLY_FACTORS[self.day.weekday()] if eff.weekly_cycle else 1.0
        factor *= WEATHER_FOOTFALL[self.weather]
        if self.offset in anomaly_offsets(self.cfg):
            factor *= eff.footfall_anomaly_factor
        n_groups = int(rng.poisson(self.cfg.customers_per_day * factor / MEAN_PERSONS))
        arrivals = self._arrival_seconds(n_groups)
        persons = rng.choice(PERSON_COUNTS, size=n_groups, p=PERSON_PROBS)
        weekend = self.day.weekday() >= 5
        p_buy = (
            eff.base_conversion_rate * MEAN_PERSONS * (1 + (eff.weekend_conversion_uplift if weekend else 0))
        )
        buys = rng.random(n_groups) < p_buy
        loyal = rng.random(n_groups) < 0.25
        loyal_ids = rng.integers(1, 600, n_groups)
        quality = np.round(rng.uniform(0.7, 1.0, n_groups), 2)
        for g in range(n_groups):
            member = None
            if loyal[g]:
                cid = int(loyal_ids[g])
                member = f"customer_{cid if cid != 123 else 600}"
            self._group(g, float(arrivals[g]), int(persons[g]), bool(buys[g]), member, float(quality[g]))
        if self.offset % 3 == 0:
            self._loyal_visit()
        queue_times, queue_lengths = self._queues(arrivals, persons)
        self._complaints(queue_times, queue_lengths)
        self._inquiries(factor)
        self._guidance()
        self._staff()
        if self.promotion:
            self._broadcasts()

    def _group(
        self, g: int, second: float, persons: int, buys: bool, member: str | None, quality: float
    ) -> None:
        rng = self.rng
        ents = [member] if member else None
        self._add(
            second,
            "customer_enter",
            "cam_entrance",
            ["image"],
            self._media("cam_entrance", second, "jpg", g),
            {"person_count": persons, "zone": "entrance", "quality": quality},
            entities=ents,
        )
        t = second + float(rng.uniform(20, 90))
        n_dwell = min(int(rng.choice(3, p=[0.3, 0.5, 0.2])), len(self.zones))
        for k, z in enumerate(rng.choice(len(self.zones), size=n_dwell, replace=False)):
            zone, _, mean_dwell = self.zones[int(z)]
            dwell = round(float(rng.lognormal(math.log(mean_dwell), 0.5)), 1)
            if t + dwell >= CLOSE_HOUR * 3600 - 60:
                break
            self._add(
                t,
                "dwell",
                f"cam_{zone}",
                ["video"],
                self._media(f"cam_{zone}", t, "mp4", g * 10 + k),
                {"zone": zone, "dwell_seconds": dwell, "person_count": persons, "quality": quality},
                duration=dwell,
            )
            t += dwell + float(rng.uniform(30, 240))
        if buys:
            t = min(t + float(rng.uniform(60, 600)), CLOSE_HOUR * 3600.0 - 30)
            self._bill(t, member)

    def _bill(self, second: float, member: str | None) -> None:
        rng, eff = self.rng, self.eff
        mean = eff.base_order_value * ((1 + eff.rain_aov_uplift) if self.weather == "rain" else 1.0)
        mu = math.log(mean) - ORDER_VALUE_SIGMA**2 / 2
        total = float(rng.lognormal(mu, ORDER_VALUE_SIGMA))
        n_lines = min(5, 1 + int(rng.poisson(0.9)))
        shares = rng.dirichlet(np.full(n_lines, 2.0))
        products = rng.choice(len(cat.PRODUCTS), size=n_lines, replace=False, p=_POPULARITY)
        self.bill_seq += 1
        bill_id = f"{self.cfg.store_id}-B{self.compact}-{self.bill_seq:04d}"
        terminal = "pos_1" if rng.random() < 0.6 else "pos_2"
        ents = [member] if member else None
        for line, (share, pidx) in enumerate(zip(shares, products, strict=True)):
            prod = cat.PRODUCTS[int(pidx)]
            self._add(
                second + line,
                "purchase",
                terminal,
                ["pos"],
                f"pos://{terminal}/{bill_id}",
                {
                    "bill_id": bill_id,
                    "order_amount": round(total * float(share), 2),
                    "product_id": prod.product_id,
                    "product_category": prod.category,
                    "gross_margin": prod.gross_margin,
                    "line_no": line + 1,
                },
                entities=ents,
                relations=[{"head": member, "type": "bought", "tail": prod.product_id}] if member else None,
            )

    def _loyal_visit(self) -> None:
        """customer_123 comes every third day, later and later in the day (10:00 towards 20:00)."""
        frac = self.offset / max(1, self.cfg.days - 1)
        hour = float(np.clip(10.0 + 10.0 * frac + self.rng.normal(0, 0.5), OPEN_HOUR, CLOSE_HOUR - 1))
        second = hour * 3600.0
        self._add(
            second,
            "customer_enter",
            "cam_entrance",
            ["image"],
            self._media("cam_entrance", second, "jpg", 9999),
            {"person_count": 1, "zone": "entrance", "quality": 0.95},
            entities=[LOYAL_CUSTOMER],
        )
        self._bill(second + float(self.rng.uniform(300, 1200)), LOYAL_CUSTOMER)

    def _queues(self, arrivals: np.ndarray, persons: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        step = QUEUE_SAMPLE_MINUTES * 60
        times = np.arange(OPEN_HOUR * 3600 + step, CLOSE_HOUR * 3600, step, dtype=float)
        cum = np.concatenate([[0], np.cumsum(persons)])
        recent = cum[np.searchsorted(arrivals, times)] - cum[np.searchsorted(arrivals, times - 1800)]
        lam = (0.3 + 0.07 * recent) * ((1 + self.eff.promotion_queue_uplift) if self.promotion else 1.0)
        opened = self.eff.second_checkout_date
        if opened is not None and self.day >= opened:  # a second checkout in the evening hours
            first, end = self.eff.second_checkout_hours
            hours = times // 3600
            lam = lam * np.where(
                (hours >= first) & (hours < end), 1 + self.eff.second_checkout_queue_change, 1.0
            )
        lengths = self.rng.poisson(lam)
        for i, (t, q) in enumerate(zip(times, lengths, strict=True)):
            self._add(
                float(t),
                "checkout_queue",
                "cam_checkout",
                ["image"],
                self._media("cam_checkout", float(t), "jpg", i),
                {"zone": "checkout", "queue_length": int(q)},
            )
        return times, lengths

    def _complaints(self, queue_times: np.ndarray, queue_lengths: np.ndarray) -> None:
        rng = self.rng
        mean_q = float(queue_lengths.mean()) if len(queue_lengths) else 0.0
        n = int(rng.poisson(0.5 + self.eff.queue_complaint_coupling * mean_q))
        weights = queue_lengths + 0.2
        picks = rng.choice(len(queue_times), size=n, p=weights / weights.sum())
        for k, i in enumerate(picks):
            second = float(queue_times[i]) + float(rng.uniform(0, 590))
            qlen = int(queue_lengths[i])
            about_queue = rng.random() < min(0.9, 0.3 + 0.15 * qlen)
            english = rng.random() < 0.1
            prod = cat.PRODUCTS[int(rng.integers(len(cat.PRODUCTS)))]
            if about_queue:
                pool = cat.COMPLAINTS_QUEUE_EN if english else cat.COMPLAINTS_QUEUE_ZH
            else:
                pool = cat.COMPLAINTS_OTHER_EN if english else cat.COMPLAINTS_OTHER_ZH
            text = pool[int(rng.integers(len(pool)))].format(p=prod.name_zh, pe=prod.name_en)
            source = "mic_checkout" if about_queue else "mic_service_desk"
            self._add(
                second,
                "complaint",
                source,
                ["audio"],
                self._media(source, second, "wav", k),
                {
                    "zone": "checkout" if about_queue else "service_desk",
                    "topic": "queue" if about_queue else "product_or_service",
                    "speech_emotion": "angry" if rng.random() < 0.4 else "negative",
                },
                text=text,
            )

    def _inquiries(self, footfall_factor: float) -> None:
        rng = self.rng
        topics = list(cat.INQUIRY_TOPIC_BASE)
        shares = np.array([cat.INQUIRY_TOPIC_BASE[t] for t in topics])
        if self.weather == "rain":
            hm = shares[0] * (1 + self.eff.rain_high_margin_inquiry_lift)
            shares = np.concatenate([[hm], shares[1:] * (1 - hm) / shares[1:].sum()])
        n = int(rng.poisson(INQUIRIES_PER_DAY * footfall_factor))
        seconds = self._arrival_seconds(n)
        for k in range(n):
            topic = topics[int(rng.choice(len(topics), p=shares))]
            pool = cat.HIGH_MARGIN_PRODUCTS if topic == "high_margin_product" else cat.OTHER_PRODUCTS
            prod = pool[int(rng.integers(len(pool)))]
            zh, en = cat.INQUIRY_TEMPLATES[topic]
            english = rng.random() < 0.1
            tmpl = (en if english else zh)[int(rng.integers(len(en if english else zh)))]
            staff = cat.STAFF_IDS[int(rng.integers(len(cat.STAFF_IDS)))]
            second = float(seconds[k])
            emotion = str(rng.choice(["neutral", "positive", "negative"], p=[0.7, 0.25, 0.05]))
            self._add(
                second,
                "customer_inquiry",
                "mic_floor",
                ["audio"],
                self._media("mic_floor", second, "wav", k),
                {
                    "topic": topic,
                    "product_id": prod.product_id,
                    "product_category": prod.category,
                    "speech_emotion": emotion,
                    "staff_id": staff,
                },
                text=tmpl.format(p=prod.name_zh, pe=prod.name_en),
                entities=[staff],
            )

    def _guidance(self) -> None:
        rng = self.rng
        n = int(rng.poisson(GUIDANCE_PER_DAY))
        seconds = self._arrival_seconds(n)
        for k in range(n):
            prod = cat.PRODUCTS[int(rng.integers(len(cat.PRODUCTS)))]
            zone, zone_zh, _ = self.zones[int(rng.integers(len(self.zones)))]
            staff = cat.STAFF_IDS[int(rng.integers(len(cat.STAFF_IDS)))]
            english = rng.random() < 0.1
            pool = cat.GUIDANCE_TEMPLATES_EN if english else cat.GUIDANCE_TEMPLATES_ZH
            text = pool[int(rng.integers(len(pool)))].format(
                p=prod.name_zh, pe=prod.name_en, zone=zone_zh, zone_en=cat.ZONE_NAMES_EN[zone]
            )
            second = float(seconds[k])
            self._add(
                second,
                "staff_guidance",
                "mic_floor",
                ["audio"],
                self._media("mic_floor", second, "wav", 500 + k),
                {
                    "staff_id": staff,
                    "zone": zone,
                    "product_id": prod.product_id,
                    "speech_emotion": "positive",
                },
                text=text,
                entities=[staff],
                relations=[{"head": staff, "type": "guided_to", "tail": zone}],
            )

    def _staff(self) -> None:
        rng, eff = self.rng, self.eff
        trained = self.day >= training_day(self.cfg)
        rate = eff.staff_error_rate_after if trained else eff.staff_error_rate_before
        n = int(rng.poisson(STAFF_ACTIONS_PER_DAY))
        seconds = np.sort(rng.uniform(OPEN_HOUR * 3600, CLOSE_HOUR * 3600 - 60, n))
        errors = rng.random(n) < rate
        for k in range(n):
            staff = cat.STAFF_IDS[int(rng.integers(len(cat.STAFF_IDS)))]
            second = float(seconds[k])
            if errors[k]:
                kind, zh, en = cat.STAFF_ERRORS[int(rng.integers(len(cat.STAFF_ERRORS)))]
                prod = cat.PRODUCTS[int(rng.integers(len(cat.PRODUCTS)))]
                text = (en if rng.random() < 0.1 else zh).format(staff=staff, p=prod.name_zh, pe=prod.name_en)
                self._add(
                    second,
                    "staff_error",
                    "cam_floor",
                    ["video"],
                    self._media("cam_floor", second, "mp4", k),
                    {"staff_id": staff, "error_type": kind, "product_id": prod.product_id},
                    text=text,
                    entities=[staff],
                )
            else:
                op = cat.STAFF_OPERATIONS[int(rng.integers(len(cat.STAFF_OPERATIONS)))]
                at_pos = op in ("cashier_scan", "refund")
                source = ("pos_1" if rng.random() < 0.6 else "pos_2") if at_pos else "cam_floor"
                ref = (
                    f"pos://{source}/OP{self.compact}-{k:04d}"
                    if at_pos
                    else self._media("cam_floor", second, "mp4", k)
                )
                self._add(
                    second,
                    "staff_operation",
                    source,
                    ["pos"] if at_pos else ["video"],
                    ref,
                    {"staff_id": staff, "operation": op},
                    entities=[staff],
                )

    def _broadcasts(self) -> None:
        rng = self.rng
        for k, hour in enumerate((9, 11, 14, 17, 19)):
            second = hour * 3600.0 + float(rng.uniform(0, 300))
            prod = cat.HIGH_MARGIN_PRODUCTS[int(rng.integers(len(cat.HIGH_MARGIN_PRODUCTS)))]
            pool = cat.PROMOTION_BROADCASTS_ZH
            self._add(
                second,
                "promotion_broadcast",
                "speaker_main",
                ["audio"],
                self._media("speaker_main", second, "wav", k),
                {"promotion_name": "member_day", "product_id": prod.product_id},
                text=pool[int(rng.integers(len(pool)))].format(p=prod.name_zh),
            )


_POPULARITY = _popularity()


def _hhmmss(second: float) -> str:
    s = int(second)
    return f"{s // 3600:02d}{(s // 60) % 60:02d}{s % 60:02d}"


def _timed(config: SimConfig) -> Iterator[tuple[float, dict[str, Any]]]:
    """(UTC epoch seconds, event) in time order for one store."""
    tz = ZoneInfo(config.timezone)
    weather = weather_by_day(config)
    promo = promotion_by_day(config)
    day_seeds = _streams(config)[2].integers(0, 2**63 - 1, size=config.days)
    for offset in range(config.days):
        builder = _Day(
            config, offset, weather[offset], promo[offset], np.random.default_rng(int(day_seeds[offset]))
        )
        builder.build()
        builder.events.sort(key=lambda e: (e[0], e[1]))
        midnight = datetime(builder.day.year, builder.day.month, builder.day.day, tzinfo=tz)
        for seq, (second, _, ev) in enumerate(builder.events):
            ts = midnight + timedelta(seconds=round(second, 3))
            ordered: dict[str, Any] = {
                "event_id": f"{config.store_id}-{builder.compact}-{seq:06d}",
                "timestamp": ts.isoformat(timespec="seconds"),
            }
            duration = ev.pop("_duration", None)
            if duration is not None:
                ordered["end_timestamp"] = (ts + timedelta(seconds=math.ceil(duration))).isoformat(
                    timespec="seconds"
                )
            ordered.update(ev)
            yield ts.timestamp(), ordered
        logger.debug("simulated %s %s: %d events", config.store_id, builder.ymd, len(builder.events))


def simulate(config: SimConfig) -> Iterator[dict[str, Any]]:
    """MEV event dicts of one store, in time order (deterministic for a given config)."""
    for _, ev in _timed(config):
        yield ev


def simulate_stores(configs: Sequence[SimConfig]) -> Iterator[dict[str, Any]]:
    """Several stores' events merged into one time-ordered stream (each store with its own config)."""
    ids = [c.store_id for c in configs]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"store ids must differ between simulated stores, got {ids}")
    for _, ev in heapq.merge(*(_timed(c) for c in configs), key=lambda pair: pair[0]):
        yield ev


def simulate_jsonl(config: SimConfig, out: TextIO) -> int:
    """Write the simulation as MEV JSON Lines to ``out``; returns the number of events written."""
    n = 0
    for ev in simulate(config):
        out.write(json.dumps(ev, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
        n += 1
    return n


def expected(config: SimConfig) -> dict[str, Any]:
    """The planted truths of ``config`` in analysis terms (what an operator should recover).

    Ratios are of expectations; the realised data scatter around them (tests use tolerances).
    """
    eff = config.effects
    weather = weather_by_day(config)
    promo = promotion_by_day(config)
    dates = [config.start + timedelta(days=i) for i in range(config.days)]
    popularity = sorted(cat.PRODUCTS, key=lambda p: -p.popularity)
    anomalies = anomaly_offsets(config)
    return {
        "store_id": config.store_id,
        "timezone": config.timezone,
        "zones": [z for z, _, _ in dwell_zones(config)],
        "climate": config.climate,
        "start": config.start.isoformat(),
        "end": dates[-1].isoformat(),
        "days": config.days,
        "rain_aov_ratio": 1 + eff.rain_aov_uplift,
        "base_order_value": eff.base_order_value,
        "rain_order_value": eff.base_order_value * (1 + eff.rain_aov_uplift),
        "peak_hour_first": eff.evening_peak_start_hour,
        "peak_hour_last": eff.evening_peak_end_hour,
        "peak_shift_hours": eff.evening_peak_end_hour - eff.evening_peak_start_hour,
        "training_date": training_day(config).isoformat(),
        "staff_error_rate_before": eff.staff_error_rate_before,
        "staff_error_rate_after": eff.staff_error_rate_after,
        "conversion_rate_weekday": eff.base_conversion_rate,
        "conversion_rate_weekend": eff.base_conversion_rate * (1 + eff.weekend_conversion_uplift),
        "weekend_conversion_ratio": 1 + eff.weekend_conversion_uplift,
        "promotion_queue_ratio": 1 + eff.promotion_queue_uplift,
        "footfall_anomaly_dates": [dates[i].isoformat() for i in anomalies],
        "footfall_anomaly_factor": eff.footfall_anomaly_factor,
        "weekly_period_days": 7 if eff.weekly_cycle else None,
        "rain_high_margin_inquiry_ratio": 1 + eff.rain_high_margin_inquiry_lift,
        "high_margin_inquiry_share_rain": cat.INQUIRY_TOPIC_BASE["high_margin_product"]
        * (1 + eff.rain_high_margin_inquiry_lift),
        "high_margin_inquiry_share_other": cat.INQUIRY_TOPIC_BASE["high_margin_product"],
        "queue_complaint_correlation": "positive" if eff.queue_complaint_coupling > 0 else "none",
        "second_checkout": None
        if eff.second_checkout_date is None
        else {
            "date": eff.second_checkout_date.isoformat(),
            "hours": list(range(*eff.second_checkout_hours)),
            "queue_length_ratio": 1 + eff.second_checkout_queue_change,
        },
        "weather_by_date": {d.isoformat(): w for d, w in zip(dates, weather, strict=True)},
        "rain_days": sum(1 for w in weather if w == "rain"),
        "promotion_dates": [d.isoformat() for d, p in zip(dates, promo, strict=True) if p],
        "top_products": [p.product_id for p in popularity[:5]],
        "loyal_customer": LOYAL_CUSTOMER,
        "loyal_customer_hour_first": 10.0,
        "loyal_customer_hour_last": 20.0,
    }

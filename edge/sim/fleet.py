"""A simulated fleet: stores that differ in city, time zone, zones, weather and planted effects.

Owns the fleet of ``adamm-hub demo`` (through ``python -m edge.sim``): each store is a
:class:`~edge.sim.simulator.SimConfig` of its own (not a copy of one store under other ids), so
cross-store questions have different answers per store. The first store is ``adamm demo``'s
(same id, zone and effects). One store (``ACTION_PROFILE``) also does an action whose effect is
planted: it opens a second checkout in the evenings, and :meth:`FleetStore.action` says how the
demo sends it and when its staff acknowledge it done, so that ``adamm maintain`` measures it.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from edge.errors import ConfigError
from edge.sim.simulator import Effects, SimConfig, dwell_zones, training_day


@dataclass(frozen=True)
class FleetStore:
    """One store of the fleet: its simulation and where it is, in both languages."""

    config: SimConfig
    city_en: str
    city_zh: str

    def describe(self) -> dict[str, Any]:
        """What the fleet demo needs to know of the store, as JSON-ready values."""
        c = self.config
        end = c.start + timedelta(days=c.days)
        now = datetime(end.year, end.month, end.day, tzinfo=ZoneInfo(c.timezone))
        return {
            "store_id": c.store_id,
            "city": {"en": self.city_en, "zh": self.city_zh},
            "timezone": c.timezone,
            "zones": [z for z, _, _ in dwell_zones(c)],
            "climate": c.climate,
            "customers_per_day": c.customers_per_day,
            "start": c.start.isoformat(),
            "last_day": (end - timedelta(days=1)).isoformat(),
            "now": now.isoformat(),
            "training_date": training_day(c).isoformat(),
            "effects": {
                "rain_aov_uplift": c.effects.rain_aov_uplift,
                "base_order_value": c.effects.base_order_value,
                "evening_peak_hours": [c.effects.evening_peak_start_hour, c.effects.evening_peak_end_hour],
                "staff_error_rate": [c.effects.staff_error_rate_before, c.effects.staff_error_rate_after],
                "weekend_conversion_uplift": c.effects.weekend_conversion_uplift,
            },
            "action": self.action(),
        }

    def action(self) -> dict[str, Any] | None:
        """The action done at this store (``Effects.second_checkout_date``), as its staff would be
        sent it and acknowledge it done at the store's opening that day (store-local ISO times),
        with the effect planted on its target; None when the store has none."""
        eff = self.config.effects
        day = eff.second_checkout_date
        if day is None:
            return None
        first, end = eff.second_checkout_hours
        zone = ZoneInfo(self.config.timezone)
        done = datetime(day.year, day.month, day.day, 8, tzinfo=zone)  # the store opens at 8
        return {
            "title": f"open a second checkout {first:02d}:00-{end:02d}:00",
            "role": "shift_lead",
            "type": "work_order",
            "metric": "queue_length",
            "where": {"zone": "checkout", "hours": list(range(first, end))},
            "issued_at": (done - timedelta(hours=14)).isoformat(),
            "done_at": done.isoformat(),
            "planted_effect": eff.second_checkout_queue_change,
        }


#: (id prefix, city en, city zh, zone, climate, zones, customers per day, effects) per profile;
#: the first is ``adamm demo``'s store
PROFILES: tuple[tuple[str, str, str, str, str, tuple[str, ...] | None, int, Effects], ...] = (
    ("sh_xuhui", "Shanghai", "上海", "Asia/Shanghai", "mild", None, 300, Effects()),
    (
        "cd_chunxi",
        "Chengdu",
        "成都",
        "Asia/Shanghai",
        "rainy",
        ("shelf_a", "fresh", "bakery"),
        380,
        Effects(
            rain_aov_uplift=0.08,
            evening_peak_start_hour=19,
            evening_peak_end_hour=19,
            staff_error_rate_before=0.09,
            staff_error_rate_after=0.08,
            weekend_conversion_uplift=0.10,
            base_order_value=78.0,
            base_conversion_rate=0.45,
        ),
    ),
    (
        "hk_causeway",
        "Hong Kong",
        "香港",
        "Asia/Hong_Kong",
        "dry",
        ("shelf_a", "shelf_b", "wine"),
        240,
        Effects(
            rain_aov_uplift=-0.12,
            evening_peak_start_hour=17,
            evening_peak_end_hour=18,
            staff_error_rate_before=0.10,
            staff_error_rate_after=0.03,
            weekend_conversion_uplift=0.35,
            promotion_queue_uplift=0.9,
            base_order_value=142.0,
            base_conversion_rate=0.35,
        ),
    ),
    (
        "sz_nanshan",
        "Shenzhen",
        "深圳",
        "Asia/Shanghai",
        "mild",
        ("fresh", "wine", "bakery"),
        330,
        Effects(rain_aov_uplift=0.20, base_order_value=110.0, staff_error_rate_after=0.07),
    ),
    (
        "sg_orchard",
        "Singapore",
        "新加坡",
        "Asia/Singapore",
        "rainy",
        ("shelf_a", "shelf_b", "fresh", "wine", "bakery"),
        260,
        Effects(rain_aov_uplift=0.02, base_order_value=125.0, evening_peak_start_hour=19),
    ),
    (
        "tk_shibuya",
        "Tokyo",
        "东京",
        "Asia/Tokyo",
        "dry",
        ("shelf_b", "fresh"),
        350,
        Effects(rain_aov_uplift=0.15, base_order_value=88.0, weekend_conversion_uplift=0.05),
    ),
)


#: the profile whose store does an action with a planted effect (the first round's only): it
#: opens a second checkout in the evenings ``ACTION_DAYS_BEFORE_END`` days before the run ends
ACTION_PROFILE = 1
ACTION_DAYS_BEFORE_END = 22
#: days on each side of the action that its effect is measured over (``[actions] effect_window_days``)
ACTION_WINDOW_DAYS = 14


def fleet(n: int, *, days: int = 92, seed: int = 7, start: date = date(2025, 9, 1)) -> list[FleetStore]:
    """``n`` stores, the profiles in turn (store ``i`` is numbered ``i``: ``sh_xuhui_01`` ...);
    past the profiles' count they come round again with more customers and other seeds. The
    ``ACTION_PROFILE`` store of the first round opens a second checkout (an action with a planted
    effect) when the run holds a measuring window on each side of it."""
    if n < 1:
        raise ConfigError(f"stores={n}: a fleet has at least one store")
    out: list[FleetStore] = []
    for i in range(n):
        prefix, en, zh, tz, climate, zones, customers, effects = PROFILES[i % len(PROFILES)]
        rounds = i // len(PROFILES)
        offset = days - ACTION_DAYS_BEFORE_END
        if i == ACTION_PROFILE and offset >= ACTION_WINDOW_DAYS:
            effects = replace(effects, second_checkout_date=start + timedelta(days=offset))
        config = SimConfig(
            store_id=f"{prefix}_{i + 1:02d}",
            timezone=tz,
            start=start,
            days=days,
            seed=seed + rounds,
            customers_per_day=customers + 40 * rounds,
            effects=replace(effects),
            zones=zones,
            climate=climate,
        )
        out.append(FleetStore(config, en, zh))
    return out

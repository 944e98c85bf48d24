"""The memory's own labels for kinds of value (edge.analysis.labels): weather named as a store
names it, and the parser's baseline weather taken from the memory's vocabulary."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edge.analysis import labels
from edge.analysis.parser import parse_question
from edge.analysis.source import Vocabulary


@pytest.mark.parametrize(
    ("known", "rain", "base"),
    [
        (("sunny", "rain", "cloudy"), "rain", "sunny"),
        (("overcast", "rainy", "clear", "snow"), "rainy", "clear"),
        (("晴", "多云", "雨"), "雨", "晴"),
        (("light_rain", "clear-sky", "fog"), "light_rain", "clear-sky"),
        (("overcast", "heavy rain", "drizzle"), "heavy rain", "overcast"),  # no clear label: another kind
    ],
)
def test_rain_and_its_baseline_in_the_memorys_words(known: tuple[str, ...], rain: str, base: str) -> None:
    assert labels.values_of("weather", labels.RAIN, known)[0] == rain
    assert labels.baseline("weather", rain, known) == base


def test_labels_of_no_known_kind() -> None:
    assert labels.values_of("weather", labels.RAIN, ("W1", "W2")) == []
    assert labels.baseline("weather", "W1", ("W1", "W2")) == "W2"
    assert labels.baseline("weather", "rain", ("rain",)) is None
    assert labels.kind_of("weather", "Snow") == "snow" and labels.kind_of("weather", "W1") is None
    assert not labels.is_kind("weather", labels.RAIN, None)


def test_the_parsers_baseline_weather_is_the_memorys_own() -> None:
    vocab = Vocabulary(
        timezone="Europe/Berlin",
        store_ids=("de-ber-0042", "de-muc-0007"),
        attributes={"weather": ("overcast", "rainy", "clear", "snow")},
    )
    got = parse_question(
        "which store's rainy-day order value rose most", vocab, datetime(2025, 12, 1, tzinfo=UTC)
    )
    assert got.plan is not None and got.plan["compare"] == {
        "dimension": "weather",
        "groups": ["rainy", "clear"],
    }

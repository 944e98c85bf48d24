"""``adamm demo``: a simulated store imported into a fresh memory, then asked sample questions.

Owns the demo's story: which store is simulated (:mod:`edge.sim`), the bilingual question set
chosen so the planted effects show, and the readable printing of the answers. It goes through the
same import path as ``adamm import`` (:class:`edge.memory.store.Store`) and the same ask use case
as ``adamm ask`` (:class:`edge.services.ask.AskService`, default config), so what the demo shows is what the product
does. Called by :mod:`edge.cli.cmd_demo` and tests; progress goes to the ``err`` stream, answers
to ``out``.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from edge.errors import UsageError
from edge.sim import SimConfig, expected, simulate

logger = logging.getLogger(__name__)

#: The demo runs a little over three months so "the last three months" is fully covered.
DEFAULT_DAYS = 92
DEFAULT_SEED = 7


@dataclass(frozen=True)
class DemoOptions:
    """What the user asked for: where the memory goes, how long a run, which seed."""

    db: Path | None = None
    days: int = DEFAULT_DAYS
    seed: int = DEFAULT_SEED
    force: bool = False


@dataclass(frozen=True)
class DemoQuestion:
    """One sample question and the planted effect it is meant to show (for the reader)."""

    question: str
    shows: str


def demo_config(options: DemoOptions) -> SimConfig:
    """The simulated store of the demo (the simulator's default story, at the asked length)."""
    if options.days < 14:
        raise UsageError(f"--days {options.days}: the demo needs at least 14 days to have anything to show")
    return SimConfig(days=options.days, seed=options.seed)


def simulated_now(config: SimConfig) -> datetime:
    """``--now`` of the demo: store-local midnight right after the last simulated day."""
    end = config.start + timedelta(days=config.days)
    return datetime(end.year, end.month, end.day, tzinfo=ZoneInfo(config.timezone))


def demo_questions(config: SimConfig) -> list[DemoQuestion]:
    """The sample questions, Chinese and English, chosen so each planted effect shows."""
    truth = expected(config)
    training = truth["training_date"]
    month_day_zh = _zh_month_day(date.fromisoformat(training))
    return [
        DemoQuestion("下雨天和晴天相比，哪种天气客单价更高？", "rain raises order value"),
        DemoQuestion("Is average order value higher on rainy days or sunny days?", "rain raises order value"),
        DemoQuestion("过去三个月进店高峰期有没有变化？", "the evening peak moves later"),
        DemoQuestion("Has the evening peak moved over the last 3 months?", "the evening peak moves later"),
        DemoQuestion(
            f"培训后一周内的操作失误率到底降没降？培训日期是{training}", "training lowers staff errors"
        ),
        DemoQuestion(
            f"Did the staff error rate drop after the training on {training}?", "training lowers staff errors"
        ),
        DemoQuestion("最近一个月客流量有没有异常的日子？", "a three-day footfall spike"),
        DemoQuestion("Were there any unusual days for footfall last month?", "a three-day footfall spike"),
        DemoQuestion("客流有没有周期性规律？", "weekly cycle"),
        DemoQuestion("Is there a weekly cycle in revenue?", "weekly cycle"),
        DemoQuestion("雨天和顾客咨询高毛利商品是不是经常同时出现？", "rain brings high-margin inquiries"),
        DemoQuestion("按时段拆解一下销售额，哪个时段贡献最大？", "revenue by hour of day"),
        DemoQuestion("Break down revenue by product category.", "revenue by category"),
        DemoQuestion("销量最高的前5个商品是哪些？", "best sellers"),
        DemoQuestion("What are the top 5 products by number of orders?", "best sellers"),
        DemoQuestion("排队人数和投诉数量有没有相关性？", "long queues bring complaints"),
        DemoQuestion("Is queue length correlated with complaint count?", "long queues bring complaints"),
        DemoQuestion("周末和工作日的转化率差多少？", "weekends convert better"),
        DemoQuestion(
            "Compare queue length on promotion days versus normal days", "promotions lengthen queues"
        ),
        DemoQuestion(f"{month_day_zh}之后每天的客流趋势怎么样？", "daily footfall since the training"),
        DemoQuestion("照这个趋势下去，下个月客流会有多少？", "no extrapolation: refused"),
        DemoQuestion("Predict next month's footfall.", "no extrapolation: refused"),
        DemoQuestion("过去一年每周客流趋势怎么样？", "the memory holds three months, not a year"),
        DemoQuestion("How has weekly footfall trended over the past year?", "the memory holds three months"),
    ]


def _zh_month_day(d: date) -> str:
    return f"{d.month}月{d.day}号"


def prepare_db(options: DemoOptions) -> Path:
    """Where the demo memory goes; refuses to overwrite a non-empty database without ``force``."""
    if options.db is None:
        return Path(tempfile.mkdtemp(prefix="adamm-demo-")) / "demo.db"
    path = options.db
    if path.exists() and path.is_dir():
        raise UsageError(f"--db {path} is a directory; give a database file path")
    if path.exists():
        from edge.memory.db.connect import check_memory_file

        check_memory_file(path)  # an empty or another program's file is refused (exit 3), never replaced
        if not options.force:
            raise UsageError(
                f"--db {path} already holds data; the demo builds a fresh memory",
                hint="pick another path, or add --force to replace it",
            )
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class _Progress:
    """Progress lines on stderr, at most one every half second (the first and last always)."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.last = 0.0

    def say(self, message: str, *, force: bool = True) -> None:
        now = time.monotonic()
        if force or now - self.last >= 0.5:
            self.last = now
            print(f"adamm demo: {message}", file=self.err, flush=True)


def _lines(config: SimConfig, counter: list[int]) -> Iterator[str]:
    for ev in simulate(config):
        counter[0] += 1
        yield json.dumps(ev, ensure_ascii=False, separators=(",", ":"))


def run_demo(options: DemoOptions, *, err: TextIO) -> tuple[Path, list[dict[str, Any]]]:
    """Simulate, import and ask; returns the memory's path and the payloads, in question order."""
    config = demo_config(options)
    path = prepare_db(options)

    from edge.config import AdammConfig
    from edge.memory.store import Store
    from edge.services.ask import AskService

    progress = _Progress(err)
    progress.say(
        f"simulating {config.days} days of store {config.store_id} ({config.timezone}, seed {config.seed}) "
        f"into {path}"
    )
    started = time.monotonic()
    counter = [0]

    def on_reject(line_no: int, reason: str) -> None:
        logger.warning("simulated event %d rejected: %s", line_no, reason)

    def on_progress(done: int) -> None:
        progress.say(f"importing: {done} events stored", force=False)

    now = simulated_now(config)
    store = Store.open(path, timezone=config.timezone)
    try:
        report = store.import_lines(_lines(config, counter), on_reject=on_reject, progress=on_progress)
        progress.say(
            f"imported {report.accepted} events (rejected {report.rejected}, duplicates {report.duplicates}) "
            f"in {time.monotonic() - started:.1f} s"
        )
        if report.rejected:
            logger.error("%s simulated events were rejected; the demo data is incomplete", report.rejected)
        asker = AskService(store, AdammConfig(), now=now)
        questions = demo_questions(config)
        payloads: list[dict[str, Any]] = []
        for i, q in enumerate(questions, start=1):
            progress.say(f"answering {i}/{len(questions)}: {q.question}")
            payloads.append(asker.ask(q.question))
    finally:
        store.close()
    progress.say(
        f"done in {time.monotonic() - started:.1f} s; the memory is kept at {path} "
        f'(try: adamm ask --db {path} --now {now.isoformat()} "上周的客单价是多少？")'
    )
    return path, payloads


def print_answers(
    questions: list[DemoQuestion], payloads: list[dict[str, Any]], out: TextIO, *, as_json: bool
) -> None:
    """The answers on ``out``: one JSON list of payloads, or a readable block per question."""
    if as_json:
        json.dump(payloads, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return
    from edge.presentation import payload_text

    for i, (q, payload) in enumerate(zip(questions, payloads, strict=True), start=1):
        out.write(f"\n[{i}/{len(questions)}] {q.question}\n")
        out.write(f"    ({q.shows})\n")
        for line in payload_text(payload).splitlines():
            out.write(f"  {line}\n")
    out.flush()

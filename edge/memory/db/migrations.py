"""Named, ordered schema migrations for the store, recorded in ``_migrations``.

Owned by the store; applied by :func:`migrate` on the writer connection when a store opens.
Append new migrations at the end with a new name; never edit one that has shipped.

Layout (episodic, semantic and procedural memory plus the edge's own bookkeeping):

- ``stores``: one row per store with its IANA time zone (hour/weekday are store-local).
- ``events``: one row per MEV. ``ts`` is UTC (``YYYY-MM-DDTHH:MM:SS.ffffffZ``), ``ts_epoch`` the same
  in seconds; ``local_*`` are derived from the store's time zone at import. Well-known stats are
  typed, indexed columns; ``stats_json`` keeps the whole original stats object (round-trip), and
  every stats key that is *not* well known is also in ``event_attrs`` so it stays filterable.
  ``content_hash`` (sha256 of the canonical input line) makes import idempotent.
- ``raw_refs``, ``entities``, ``relations``: one-to-many children of an event (raw refs are never
  dropped; merges append).
- ``vec_text``/``vec_image``/``vec_audio``/``vec_video``: sqlite-vec vec0 tables, 512-d float32,
  cosine metric, ``rowid`` = ``events.id``.
- ``facts`` (semantic memory), ``procedures`` (procedural memory: registered operators),
  ``actions`` (the action outbox: issued actions, their sends, expiry and acknowledgement state), ``components`` (daemon status
  heartbeats), ``outbox`` (durable MQTT outbox: one row per summary key, migration 0012) and
  ``sync_dirty`` (days whose summaries must be derived again), ``sync_dirty_facts`` (facts whose
  summaries must be derived again, migration 0013), ``settings`` (key/value).
- ``vocabulary_cache``, ``text_vector_cache``, ``change_counters``: start-up caches of
  ``adamm ask`` (:mod:`edge.memory.caches`); derived data, safe to empty.
- ``rollup_hourly`` / ``rollup_hourly_coarse`` / ``rollup_split_bills`` / ``rollup_state``: the
  hourly rollup that answers questions (:mod:`edge.memory.rollup.build`), filled lazily at ask time and
  marked stale by triggers when aggregated events of an open day are deleted or changed;
  ``rollup_days`` holds the day states (a ``closed`` day's rollup rows are the record: never
  rebuilt, nor erased when its events are deleted or archived); ``rollup_bill_parts`` holds the
  bills split across rollup rows, one row per bill and rollup row (so a closed day's distinct-bill
  counts need no events).
- ``vec_*_warm``, ``archive_files``, ``archive_index``, ``tier_state``, ``maintain_runs``: the
  hot/warm/cold tiers of :mod:`edge.memory.tiers` (migration ``0011_tiers``).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import apsw

from edge.errors import NewerMemoryError

#: ``PRAGMA application_id`` of every adamm memory ("ADAM"), at offset 68 of the file header
APPLICATION_ID = 0x4144414D

logger = logging.getLogger(__name__)

VECTOR_DIM = 512
MODALITY_VECTOR_TABLES = {
    "text": "vec_text",
    "image": "vec_image",
    "audio": "vec_audio",
    "video": "vec_video",
}

#: well-known stats keys -> SQL column type (CONTRACT / mev.schema.json)
WELL_KNOWN_STATS: dict[str, str] = {
    "person_count": "INTEGER",
    "dwell_seconds": "REAL",
    "queue_length": "INTEGER",
    "order_amount": "REAL",
    "bill_id": "TEXT",
    "product_id": "TEXT",
    "product_category": "TEXT",
    "gross_margin": "REAL",
    "weather": "TEXT",
    "speech_emotion": "TEXT",
    "staff_id": "TEXT",
    "zone": "TEXT",
    "promotion": "TEXT",
    "quality": "REAL",
}

_stats_columns = ",\n    ".join(f"{k} {t}" for k, t in WELL_KNOWN_STATS.items())

_INITIAL = f"""
CREATE TABLE stores (
    store_id TEXT PRIMARY KEY,
    timezone TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    store_id TEXT NOT NULL REFERENCES stores(store_id),
    ts TEXT NOT NULL,
    ts_epoch REAL NOT NULL,
    end_ts TEXT,
    local_date TEXT NOT NULL,
    local_hour INTEGER NOT NULL,
    local_weekday INTEGER NOT NULL,
    local_week TEXT NOT NULL,
    local_month TEXT NOT NULL,
    source TEXT,
    event_type TEXT NOT NULL,
    modality TEXT NOT NULL,
    text TEXT,
    {_stats_columns},
    stats_json TEXT NOT NULL DEFAULT '{{}}',
    content_hash TEXT NOT NULL,
    tier TEXT NOT NULL DEFAULT 'hot',
    imported_at TEXT NOT NULL
) STRICT;

CREATE INDEX events_store_time ON events(store_id, ts_epoch);
CREATE INDEX events_type_time ON events(event_type, ts_epoch);
CREATE INDEX events_time ON events(ts_epoch);
CREATE INDEX events_local_date ON events(store_id, local_date);
CREATE INDEX events_weather ON events(weather) WHERE weather IS NOT NULL;
CREATE INDEX events_zone ON events(zone) WHERE zone IS NOT NULL;
CREATE INDEX events_product ON events(product_id) WHERE product_id IS NOT NULL;
CREATE INDEX events_category ON events(product_category) WHERE product_category IS NOT NULL;
CREATE INDEX events_staff ON events(staff_id) WHERE staff_id IS NOT NULL;
CREATE INDEX events_bill ON events(bill_id) WHERE bill_id IS NOT NULL;
CREATE INDEX events_source ON events(source) WHERE source IS NOT NULL;

CREATE TABLE event_attrs (
    event_rowid INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value_text TEXT,
    value_num REAL,
    PRIMARY KEY (event_rowid, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX event_attrs_key_text ON event_attrs(key, value_text);
CREATE INDEX event_attrs_key_num ON event_attrs(key, value_num);

CREATE TABLE raw_refs (
    event_rowid INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    ref TEXT NOT NULL,
    PRIMARY KEY (event_rowid, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE entities (
    event_rowid INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    entity TEXT NOT NULL,
    PRIMARY KEY (event_rowid, entity)
) STRICT, WITHOUT ROWID;
CREATE INDEX entities_entity ON entities(entity);

CREATE TABLE relations (
    event_rowid INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    head TEXT NOT NULL,
    type TEXT NOT NULL,
    tail TEXT NOT NULL,
    PRIMARY KEY (event_rowid, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE facts (
    fact_id TEXT PRIMARY KEY,
    store_id TEXT,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    statement TEXT NOT NULL,
    value_json TEXT NOT NULL DEFAULT '{{}}',
    evidence_json TEXT NOT NULL DEFAULT '[]',
    confidence REAL NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE procedures (
    name TEXT PRIMARY KEY,
    intent TEXT NOT NULL,
    version TEXT NOT NULL,
    description TEXT NOT NULL,
    min_evidence_json TEXT NOT NULL DEFAULT '{{}}',
    required_event_types_json TEXT NOT NULL DEFAULT '[]',
    default_params_json TEXT NOT NULL DEFAULT '{{}}',
    registered_at TEXT NOT NULL
) STRICT;

CREATE TABLE actions (
    action_id TEXT PRIMARY KEY,
    store_id TEXT,
    type TEXT NOT NULL CHECK (type IN ('recommendation', 'work_order', 'alert')),
    role TEXT,
    params_json TEXT NOT NULL DEFAULT '{{}}',
    summary TEXT NOT NULL,
    evidence_json TEXT NOT NULL DEFAULT '[]',
    confidence REAL NOT NULL,
    issued_at TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accepted', 'done', 'rejected')),
    acked_by TEXT,
    updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX actions_state ON actions(state, issued_at);

CREATE TABLE components (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    provider TEXT,
    detail_json TEXT NOT NULL DEFAULT '{{}}',
    updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE outbox (
    msg_id TEXT PRIMARY KEY,
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    sent_at TEXT
) STRICT;
CREATE INDEX outbox_pending ON outbox(created_at) WHERE sent_at IS NULL;
"""

_VECTORS = "\n".join(
    f"CREATE VIRTUAL TABLE {table} USING vec0(embedding float[{VECTOR_DIM}] distance_metric=cosine);"
    for table in MODALITY_VECTOR_TABLES.values()
)

#: day attributes (edge.memory.query.filters): the days that hold events without their own weather /
#: promotion, and the values of those days, read from indexes alone
_DAY_ATTRIBUTE_INDEXES = """
CREATE INDEX events_day_weather ON events(store_id, local_date, weather) WHERE weather IS NOT NULL;
CREATE INDEX events_day_no_weather ON events(store_id, local_date) WHERE weather IS NULL;
CREATE INDEX events_day_promotion ON events(store_id, local_date, promotion) WHERE promotion IS NOT NULL;
CREATE INDEX events_day_no_promotion ON events(store_id, local_date) WHERE promotion IS NULL;
"""

#: the hourly rollup of edge.memory.rollup.build (its docstring describes the columns); the triggers
#: mark it stale when aggregated events are deleted or changed (the columns below)
_ROLLUP_WATCHED = (
    "id",
    "store_id",
    "ts",
    "ts_epoch",
    "local_date",
    "local_hour",
    "local_weekday",
    "local_week",
    "local_month",
    "event_type",
    "weather",
    "promotion",
    "zone",
    "product_category",
    "person_count",
    "order_amount",
    "dwell_seconds",
    "queue_length",
    "speech_emotion",
    "bill_id",
)


def _rollup_table(name: str) -> str:
    """One hourly rollup table and its indexes (the fine and the coarse table share the layout)."""
    return f"""
CREATE TABLE {name} (
    store_id TEXT NOT NULL,
    local_date TEXT NOT NULL,
    local_hour INTEGER NOT NULL,
    local_weekday INTEGER NOT NULL,
    local_week TEXT NOT NULL,
    local_month TEXT NOT NULL,
    event_type TEXT NOT NULL,
    weather TEXT,
    promotion TEXT,
    zone TEXT,
    product_category TEXT,
    n INTEGER NOT NULL,
    ts_epoch REAL NOT NULL,
    max_epoch REAL NOT NULL,
    first_ts TEXT NOT NULL,
    last_ts TEXT NOT NULL,
    first_id INTEGER NOT NULL,
    last_id INTEGER NOT NULL,
    person_sum INTEGER NOT NULL,
    amount_sum REAL NOT NULL,
    amount_sq REAL NOT NULL,
    dwell_sum REAL NOT NULL,
    dwell_sq REAL NOT NULL,
    dwell_n INTEGER NOT NULL,
    queue_sum REAL NOT NULL,
    queue_sq REAL NOT NULL,
    queue_n INTEGER NOT NULL,
    emotion_n INTEGER NOT NULL,
    negative_n INTEGER NOT NULL,
    bills_row INTEGER NOT NULL,
    bills_one INTEGER NOT NULL,
    bill_sq_one REAL NOT NULL
) STRICT;
CREATE INDEX {name}_type ON {name}(event_type, local_date, local_hour);
CREATE INDEX {name}_day ON {name}(store_id, local_date);
CREATE INDEX {name}_time ON {name}(ts_epoch);
"""


_HOURLY_ROLLUP = (
    _rollup_table("rollup_hourly")
    + _rollup_table("rollup_hourly_coarse")
    + f"""
CREATE TABLE rollup_split_bills (bill_id TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
CREATE TABLE rollup_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    high_water INTEGER NOT NULL,
    stale INTEGER NOT NULL,
    max_span REAL NOT NULL,
    split_bills INTEGER NOT NULL
) STRICT;
INSERT INTO rollup_state VALUES (1, 0, 1, 0, 0);
CREATE TRIGGER rollup_stale_on_delete AFTER DELETE ON events
    BEGIN UPDATE rollup_state SET stale = 1 WHERE stale = 0; END;
CREATE TRIGGER rollup_stale_on_update AFTER UPDATE OF {", ".join(_ROLLUP_WATCHED)} ON events
    BEGIN UPDATE rollup_state SET stale = 1 WHERE stale = 0; END;
"""
)


#: what lets a new ``adamm ask`` process skip rebuilding what an earlier one computed
#: (:mod:`edge.memory.caches`): the parser vocabulary with the change marker it was built
#: at, text vectors of the parser's phrases by encoder and text, a counter of deleted events (an
#: insert always raises max(events.id); only a delete can keep it), and an index for the
#: vocabulary's speech emotion values (the other TEXT stats columns have theirs)
_STARTUP_CACHES = """
CREATE TABLE vocabulary_cache (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    marker TEXT NOT NULL,
    vocabulary_json TEXT NOT NULL,
    built_at TEXT NOT NULL
) STRICT;
CREATE TABLE text_vector_cache (
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (model, text)
) STRICT, WITHOUT ROWID;
CREATE TABLE change_counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT;
INSERT INTO change_counters(name, value) VALUES ('events_deleted', 0);
CREATE TRIGGER events_deleted_counter AFTER DELETE ON events BEGIN
    UPDATE change_counters SET value = value + 1 WHERE name = 'events_deleted';
END;
CREATE INDEX events_speech_emotion ON events(speech_emotion) WHERE speech_emotion IS NOT NULL;
"""

#: the rollup as the record for closed days (edge.memory.rollup.build): evidence references that are event
#: ids (portable off the box, unlike rowids), explicit day states, and triggers that mark the
#: rollup stale only for events of days that are not closed (deleting or archiving the events of a
#: closed day leaves its rollup rows as they are); the new columns are filled by the rebuild the
#: stale flag asks for
_ROLLUP_DAYS = f"""
ALTER TABLE rollup_hourly ADD COLUMN first_event_id TEXT;
ALTER TABLE rollup_hourly ADD COLUMN last_event_id TEXT;
ALTER TABLE rollup_hourly_coarse ADD COLUMN first_event_id TEXT;
ALTER TABLE rollup_hourly_coarse ADD COLUMN last_event_id TEXT;
DROP TRIGGER rollup_stale_on_delete;
DROP TRIGGER rollup_stale_on_update;
CREATE TABLE rollup_days (
    store_id TEXT NOT NULL,
    local_date TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    events INTEGER NOT NULL,
    late_events INTEGER NOT NULL DEFAULT 0,
    changed_at TEXT NOT NULL,
    PRIMARY KEY (store_id, local_date)
) STRICT, WITHOUT ROWID;
CREATE TRIGGER rollup_stale_on_open_delete AFTER DELETE ON events
    WHEN NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = old.store_id
                     AND d.local_date = old.local_date AND d.state = 'closed')
    BEGIN UPDATE rollup_state SET stale = 1 WHERE stale = 0; END;
CREATE TRIGGER rollup_stale_on_open_update AFTER UPDATE OF {", ".join(_ROLLUP_WATCHED)} ON events
    WHEN NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = old.store_id
                     AND d.local_date = old.local_date AND d.state = 'closed')
      OR NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = new.store_id
                     AND d.local_date = new.local_date AND d.state = 'closed')
    BEGIN UPDATE rollup_state SET stale = 1 WHERE stale = 0; END;
UPDATE rollup_state SET stale = 1;
"""

#: split bills in the rollup itself (edge.memory.rollup.build): one row per (split bill, fine rollup
#: row) with the bill's lines and amount there, so distinct bills and bill totals of any rollup
#: group are exact without the events (a closed day's events may be archived); ``bill_sq_row``:
#: per fine row, the squared amounts of its other bills within the row (bill statistics per
#: product category); ``rollup_days.bill_parts``: the day's split bills are in the table (days
#: closed before this migration get theirs from their events at the next refresh)
_ROLLUP_BILL_PARTS = """
CREATE TABLE rollup_bill_parts (
    bill_id TEXT NOT NULL,
    store_id TEXT NOT NULL,
    local_date TEXT NOT NULL,
    local_hour INTEGER NOT NULL,
    local_weekday INTEGER NOT NULL,
    local_week TEXT NOT NULL,
    local_month TEXT NOT NULL,
    event_type TEXT NOT NULL,
    weather TEXT,
    promotion TEXT,
    zone TEXT,
    product_category TEXT,
    n INTEGER NOT NULL,
    ts_epoch REAL NOT NULL,
    max_epoch REAL NOT NULL,
    amount_sum REAL NOT NULL
) STRICT;
CREATE INDEX rollup_bill_parts_day ON rollup_bill_parts(store_id, local_date);
CREATE INDEX rollup_bill_parts_bill ON rollup_bill_parts(bill_id);
ALTER TABLE rollup_hourly ADD COLUMN bill_sq_row REAL NOT NULL DEFAULT 0;
ALTER TABLE rollup_hourly_coarse ADD COLUMN bill_sq_row REAL NOT NULL DEFAULT 0;
ALTER TABLE rollup_days ADD COLUMN bill_parts INTEGER NOT NULL DEFAULT 0;
UPDATE rollup_state SET stale = 1;
"""

#: semantic facts in the contract's shape (CONTRACT.md section 6), written by the facts step of
#: maintenance (edge.services.facts): one row per fact, never deleted (``valid_to`` NULL while it
#: holds; ``supersedes`` names the fact a changed finding replaced); ``question``/``slot``/``signature``
#: say which standing question found it and what it claims, ``plan_json`` the plan it came from and
#: ``evaluated_until`` the store-local date its data ended. ``fact_marks`` keeps each standing
#: question's high-water mark (the last evaluation date distilled) per store. Rows of the old table
#: (never written by a shipped command) are kept as closed, unattributed facts.
_FACTS_CONTRACT = """
ALTER TABLE facts RENAME TO facts_v1;
CREATE TABLE facts (
    fact_id TEXT PRIMARY KEY,
    store_id TEXT NOT NULL,
    question TEXT NOT NULL,
    slot TEXT NOT NULL,
    signature TEXT NOT NULL,
    statement_zh TEXT NOT NULL,
    statement_en TEXT NOT NULL,
    metric TEXT,
    dimension TEXT,
    value_json TEXT NOT NULL DEFAULT 'null',
    effect REAL,
    n INTEGER NOT NULL,
    p_value REAL,
    confidence REAL NOT NULL,
    evidence_json TEXT NOT NULL DEFAULT '[]',
    evidence_count INTEGER NOT NULL,
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    supersedes TEXT,
    plan_json TEXT NOT NULL DEFAULT '{}',
    evaluated_until TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX facts_open ON facts(store_id, question, slot) WHERE valid_to IS NULL;
CREATE INDEX facts_valid ON facts(valid_to, valid_from);
INSERT INTO facts (fact_id, store_id, question, slot, signature, statement_zh, statement_en,
                   metric, value_json, n, confidence, evidence_json, evidence_count, valid_from,
                   valid_to, evaluated_until, created_at, updated_at)
    SELECT fact_id, coalesce(store_id, ''), 'legacy', kind || ':' || subject, '', statement, statement,
           NULL, value_json, 0, confidence, evidence_json, json_array_length(evidence_json),
           substr(created_at, 1, 10), substr(updated_at, 1, 10), substr(updated_at, 1, 10),
           created_at, updated_at
    FROM facts_v1;
DROP TABLE facts_v1;
CREATE TABLE fact_marks (
    store_id TEXT NOT NULL,
    question TEXT NOT NULL,
    high_water TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (store_id, question)
) STRICT, WITHOUT ROWID;
"""

#: the action outbox (edge.memory.semantic.actions): a state CHECK with ``sent`` and ``expired``
#: (SQLite changes a CHECK only by rebuilding the table: every row is copied), the expiry, the
#: send bookkeeping (last send, attempts, next re-send) and who acknowledged when
_ACTION_OUTBOX = """
CREATE TABLE actions_v2 (
    action_id TEXT PRIMARY KEY,
    store_id TEXT,
    type TEXT NOT NULL CHECK (type IN ('recommendation', 'work_order', 'alert')),
    role TEXT,
    params_json TEXT NOT NULL DEFAULT '{}',
    summary TEXT NOT NULL,
    evidence_json TEXT NOT NULL DEFAULT '[]',
    confidence REAL NOT NULL,
    issued_at TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'sent', 'accepted', 'done', 'rejected', 'expired')),
    acked_by TEXT,
    updated_at TEXT NOT NULL,
    expires_at TEXT,
    sent_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_send_at TEXT,
    acked_at TEXT
) STRICT;
INSERT INTO actions_v2 (action_id, store_id, type, role, params_json, summary, evidence_json,
                        confidence, issued_at, state, acked_by, updated_at, acked_at)
    SELECT action_id, store_id, type, role, params_json, summary, evidence_json, confidence,
           issued_at, state, acked_by, updated_at,
           CASE WHEN state IN ('accepted', 'done', 'rejected') THEN updated_at END
    FROM actions;
DROP TABLE actions;
ALTER TABLE actions_v2 RENAME TO actions;
CREATE INDEX actions_state ON actions(state, issued_at);
CREATE INDEX actions_open ON actions(next_send_at) WHERE state IN ('pending', 'sent');
"""
#: hot/warm/cold tiers (edge.memory.tiers): int8 vectors of warm events (one table per modality,
#: ``rowid`` = ``events.id``, ``scale`` the per-vector factor), the archive's files (``size`` = the
#: bytes the database has committed to; anything after it is an interrupted write, cut off by the next
#: run), its gzip members (offset, length, time span), the archive index (kept small: one row per
#: archived event with its member and line, store-local day, epoch second, old rowid, the first 8
#: bytes of its content hash as an integer, ``flags`` (bit 0: the record matches the content hash
#: exactly; bits 1-4: the vector modalities the imported line carried) and ``restored_at`` when it is
#: back in the hot tier), the tier
#: boundaries per store and the log of maintain runs
_TIERS = (
    "\n".join(
        f"CREATE TABLE {table}_warm (rowid INTEGER PRIMARY KEY, scale REAL NOT NULL, q BLOB NOT NULL) STRICT;"
        for table in MODALITY_VECTOR_TABLES.values()
    )
    + """
CREATE TABLE archive_files (
    id INTEGER PRIMARY KEY,
    file TEXT NOT NULL UNIQUE,
    store_id TEXT NOT NULL,
    month TEXT NOT NULL,
    size INTEGER NOT NULL
) STRICT;
CREATE TABLE archive_members (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES archive_files(id),
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL,
    events INTEGER NOT NULL,
    min_ts REAL NOT NULL,
    max_ts REAL NOT NULL,
    archived_at TEXT NOT NULL
) STRICT;
CREATE INDEX archive_members_time ON archive_members(min_ts, max_ts);
CREATE TABLE archive_index (
    event_id TEXT PRIMARY KEY,
    member INTEGER NOT NULL REFERENCES archive_members(id),
    line INTEGER NOT NULL,
    local_date TEXT NOT NULL,
    ts INTEGER NOT NULL,
    rowid_was INTEGER NOT NULL,
    hash INTEGER NOT NULL,
    flags INTEGER NOT NULL,
    restored_at TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX archive_index_time ON archive_index(ts);
CREATE TABLE tier_state (
    store_id TEXT PRIMARY KEY,
    warm_before REAL NOT NULL,
    cold_before_date TEXT NOT NULL,
    cold_before REAL NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE TABLE maintain_runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    now TEXT NOT NULL,
    report_json TEXT NOT NULL DEFAULT '{}'
) STRICT;
"""
)

#: the sync outbox (edge.sync.outbox; replaces the unused ``outbox`` of 0001): one row per summary
#: key and store with the key's latest version (``state`` pending until the hub's receipt, then
#: done or parked); the encoded message of a pending or parked row in ``outbox_payloads`` by its
#: ``seq`` (apart, so marking a row sent or done does not rewrite its kilobytes), and ``sync_dirty``, the store-local days whose rollup summaries must be derived
#: again. Triggers mark a day dirty in the same transaction as the change: an event inserted,
#: deleted or changed on a day that is not closed (every writer: ``adamm import``, the daemon's
#: writer), and a day's state changing (closing a day). ``gen`` counts the changes, so a sync
#: run clears a mark only if no change came after it read the day
_SYNC_OUTBOX = """
DROP INDEX outbox_pending;
DROP TABLE outbox;
CREATE TABLE outbox (
    store_id TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    version INTEGER NOT NULL,
    body_hash TEXT NOT NULL,
    msg_id TEXT NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'parked')),
    reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    sent_at TEXT,
    done_at TEXT,
    PRIMARY KEY (store_id, key)
) STRICT;
CREATE INDEX outbox_pending ON outbox(store_id, seq) WHERE state = 'pending';
CREATE INDEX outbox_msg ON outbox(msg_id);
CREATE TABLE outbox_payloads (
    seq INTEGER PRIMARY KEY,
    payload BLOB NOT NULL
) STRICT;
CREATE TABLE sync_dirty (
    store_id TEXT NOT NULL,
    local_date TEXT NOT NULL,
    gen INTEGER NOT NULL,
    PRIMARY KEY (store_id, local_date)
) STRICT, WITHOUT ROWID;
CREATE TRIGGER sync_dirty_on_insert AFTER INSERT ON events
    WHEN NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = new.store_id
                     AND d.local_date = new.local_date AND d.state = 'closed')
    BEGIN INSERT INTO sync_dirty VALUES (new.store_id, new.local_date, 1) ON CONFLICT DO UPDATE SET gen = gen + 1; END;
CREATE TRIGGER sync_dirty_on_delete AFTER DELETE ON events
    WHEN NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = old.store_id
                     AND d.local_date = old.local_date AND d.state = 'closed')
    BEGIN INSERT INTO sync_dirty VALUES (old.store_id, old.local_date, 1) ON CONFLICT DO UPDATE SET gen = gen + 1; END;
CREATE TRIGGER sync_dirty_on_update AFTER UPDATE OF {watched} ON events
    BEGIN
        INSERT INTO sync_dirty VALUES (old.store_id, old.local_date, 1) ON CONFLICT DO UPDATE SET gen = gen + 1;
        INSERT INTO sync_dirty VALUES (new.store_id, new.local_date, 1) ON CONFLICT DO UPDATE SET gen = gen + 1;
    END;
CREATE TRIGGER sync_dirty_on_day_insert AFTER INSERT ON rollup_days WHEN new.state = 'closed'
    BEGIN INSERT INTO sync_dirty VALUES (new.store_id, new.local_date, 1) ON CONFLICT DO UPDATE SET gen = gen + 1; END;
CREATE TRIGGER sync_dirty_on_day_state AFTER UPDATE OF state ON rollup_days WHEN old.state IS NOT new.state
    BEGIN INSERT INTO sync_dirty VALUES (new.store_id, new.local_date, 1) ON CONFLICT DO UPDATE SET gen = gen + 1; END;
INSERT INTO sync_dirty SELECT DISTINCT store_id, local_date, 1 FROM events;
""".replace("{watched}", ", ".join(c for c in _ROLLUP_WATCHED if c != "id"))

#: facts to the hub (edge.sync.outbox): ``sync_dirty_facts`` marks a fact whose summary must be
#: derived again, by triggers in the transaction that opens, refreshes, closes or supersedes it
#: (the facts step of maintenance); ``gen`` counts the marks as ``sync_dirty`` does. Facts that
#: exist already are marked, so the first sync publishes them
_FACTS_SYNC = """
CREATE TABLE sync_dirty_facts (
    fact_id TEXT PRIMARY KEY,
    gen INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TRIGGER sync_dirty_fact_on_insert AFTER INSERT ON facts
    BEGIN INSERT INTO sync_dirty_facts VALUES (new.fact_id, 1) ON CONFLICT DO UPDATE SET gen = gen + 1; END;
CREATE TRIGGER sync_dirty_fact_on_update AFTER UPDATE OF statement_zh, statement_en, metric, dimension,
    value_json, effect, n, p_value, confidence, evidence_json, evidence_count, valid_from, valid_to ON facts
    BEGIN INSERT INTO sync_dirty_facts VALUES (new.fact_id, 1) ON CONFLICT DO UPDATE SET gen = gen + 1; END;
INSERT INTO sync_dirty_facts SELECT fact_id, 1 FROM facts;
"""

#: false discovery control in the facts step (edge.services.facts): ``q_value`` is a fact's
#: Benjamini-Hochberg adjusted p-value (kept beside the contract's ``p_value``, not sent to the
#: hub); ``fact_tests`` keeps the p-values each standing question tested at each evaluation point,
#: written in the question's transaction, so a run that resumes after an interruption controls the
#: same family of tests (every question of the store at that point) as an uninterrupted run
_FACT_TESTS = """
ALTER TABLE facts ADD COLUMN q_value REAL;
CREATE TABLE fact_tests (
    store_id TEXT NOT NULL,
    point TEXT NOT NULL,
    question TEXT NOT NULL,
    p_values_json TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (store_id, point, question)
) STRICT, WITHOUT ROWID;
"""

#: (name, sql) in order. Never edit a shipped entry: append a new one.
MIGRATIONS: list[tuple[str, str]] = [
    ("0001_initial", _INITIAL),
    ("0002_vectors", _VECTORS),
    ("0003_day_attribute_indexes", _DAY_ATTRIBUTE_INDEXES),
    # evidence for one day or hour of a series (sample_events with key_equals date/hour) is an
    # index range instead of a scan of every event of that type
    (
        "0004_series_bucket_indexes",
        "CREATE INDEX events_type_date ON events(event_type, local_date, local_hour);",
    ),
    # the hourly rollup that answers aggregations (edge.memory.rollup.build; filled lazily at ask time)
    ("0005_hourly_rollup", _HOURLY_ROLLUP),
    ("0006_startup_caches", _STARTUP_CACHES),
    ("0007_rollup_days", _ROLLUP_DAYS),
    ("0008_rollup_bill_parts", _ROLLUP_BILL_PARTS),
    ("0009_facts_contract", _FACTS_CONTRACT),
    ("0010_action_outbox", _ACTION_OUTBOX),
    ("0011_tiers", _TIERS),
    ("0012_sync_outbox", _SYNC_OUTBOX),
    ("0013_facts_sync", _FACTS_SYNC),
    ("0014_fact_tests", _FACT_TESTS),
]


def applied(conn: apsw.Connection) -> list[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT"
    )
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


#: ``PRAGMA user_version`` of a memory this code wrote: the number of migrations it knows
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: apsw.Connection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction. Returns those applied.

    Also marks the file as an adamm memory (``application_id``, set on the first write-open of a
    memory made before it existed) and records the schema version (``user_version``). A memory
    that records a migration this code does not know is refused (:class:`NewerMemoryError`).
    """

    done = set(applied(conn))
    unknown = sorted(done - {name for name, _ in MIGRATIONS})
    version = int(conn.pragma("user_version") or 0)
    if unknown or version > SCHEMA_VERSION:
        detail = f"migration {unknown[0]}" if unknown else f"schema version {version}"
        raise NewerMemoryError(
            f"this memory was written by a newer adamm ({detail} is unknown here)", hint="upgrade adamm"
        )
    new: list[str] = []
    for name, sql in MIGRATIONS:
        if name in done:
            continue
        with conn:
            conn.execute(sql)
            conn.execute(
                "INSERT INTO _migrations(name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat()),
            )
        logger.info("applied migration %s", name)
        new.append(name)
    if int(conn.pragma("application_id") or 0) != APPLICATION_ID:
        conn.pragma("application_id", APPLICATION_ID)
    if version != SCHEMA_VERSION:
        conn.pragma("user_version", SCHEMA_VERSION)
    return new

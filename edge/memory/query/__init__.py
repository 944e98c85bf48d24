"""Reading for the analysis engine: the filter compiler (:mod:`.filters`), event-row hydration
(:mod:`.rows`), the event-level source (:mod:`.events_source`) and the rollup-backed source
(:mod:`.rollup_source`) that ``Store.event_source()`` returns."""

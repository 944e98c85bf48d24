"""``adamm-hub console``: the HQ analyst's terminal app (:mod:`hub.console.app`) over a hub store
(:mod:`hub.console.backend`, the store console's backend protocol implemented at the hub)."""

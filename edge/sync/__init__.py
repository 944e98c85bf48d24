"""Store-to-hub sync: the wire format (:mod:`edge.sync.messages`, pure; the hub imports it),
the MQTT client and the edge's outbox."""

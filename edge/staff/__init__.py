"""The staff device reference client (``adamm-staff``): receives a store's actions for one role
over MQTT and acknowledges them (:mod:`edge.staff.cli`). It holds no memory: only a small state
file of the actions it has shown and acknowledged (:mod:`edge.staff.state`)."""

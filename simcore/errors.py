"""The one error the engine raises for bad input: it names the field and the reason."""


class ScenarioError(ValueError):
    """Bad engine input. ``field`` is a dotted path into the scenario (``cluster.node_count``)."""

    def __init__(self, field: str, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")

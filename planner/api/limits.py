"""The API's limits on what one request may ask of the engine."""
from django.conf import settings
from rest_framework import serializers

import simcore


def enforce_engine_limits(document) -> None:
    """Refuse (400) requests that would ask the engine for more than one request may: too many
    scenario points or Monte Carlo replicas (API_MAX_SCENARIO_POINTS, API_MAX_MONTE_CARLO_REPLICAS)."""
    options = document.get("options") if isinstance(document, dict) else None
    replicas = options.get("monte_carlo_replicas") if isinstance(options, dict) else None
    cap = settings.API_MAX_MONTE_CARLO_REPLICAS
    if isinstance(replicas, int | float) and not isinstance(replicas, bool) and replicas > cap:
        raise serializers.ValidationError({"options.monte_carlo_replicas": [f"at most {cap:,} through the API"]})
    points = simcore.stages.scenario.point_count(document)
    if points > settings.API_MAX_SCENARIO_POINTS:
        raise serializers.ValidationError({"(document)": [
            f"{points:,} scenario points; at most {settings.API_MAX_SCENARIO_POINTS:,} per request "
            "(submit a sweep for more)"]})

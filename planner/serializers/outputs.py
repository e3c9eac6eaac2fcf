"""The engine's output registry as the API lists it."""
from rest_framework import serializers


class OutputSerializer(serializers.Serializer):
    """One entry of the engine's output registry (simcore/outputs.py)."""

    key = serializers.CharField()
    path = serializers.CharField(allow_null=True, help_text="Dotted path into an evaluation's result; null for a "
                                                            "metric derived from several fields.")
    label = serializers.CharField()
    unit = serializers.CharField(help_text='"currency" is the price book\'s currency.')
    better = serializers.ChoiceField(choices=["lower", "higher", ""], help_text="Which way is better, if either.")
    workload = serializers.BooleanField(help_text="Present only when a workload is trained.")
    chart = serializers.BooleanField(help_text="Charted on the comparison page.")
    compare = serializers.BooleanField(help_text="Lined up by GET /api/plans/compare/.")
    sweep = serializers.BooleanField(help_text="Stored by a sweep that names no outputs.")

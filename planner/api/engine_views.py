"""The engine without a plan: evaluate a scenario document, and what plans and scenarios choose
from (the failure and restart profiles, the output registry)."""
from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

import simcore
from planner import serializers as api
from planner.api import bodies
from planner.api.limits import enforce_engine_limits
from planner.services import engine

SCENARIO_EXAMPLE = OpenApiExample(
    "Two-layer fat-tree of 40-port switches",
    value={"cluster": {"node_count": 100, "node": {"gpus": 8, "accelerator": {"peak_fp16_tflops": 312, "tdp_w": 400},
                                                   "compute_nics": 1, "compute_nic_gbit_s": 200},
                       "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}},
    request_only=True,
)


# The scenario document's JSON Schema, generated from the engine's field spec (docs/scenario-format.md).
SCENARIO_SCHEMA = simcore.document.json_schema()


class EvaluateScenarioView(APIView):
    """Evaluate a full scenario document (docs/scenario-format.md) without saving anything;
    read-only tokens may use it."""

    permission_classes = [IsAuthenticated]

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "evaluate"

    @extend_schema(tags=["evaluate"], request={"application/json": SCENARIO_SCHEMA},
                   responses={200: bodies.RESULT_SCHEMA}, examples=[SCENARIO_EXAMPLE],
                   description="Any number field may be a list: the result then has one value per point "
                               "(at most API_MAX_SCENARIO_POINTS; submit a sweep for more). The registered metrics "
                               "(GET /api/outputs/ gives each one's label, unit and better direction): "
                               + ", ".join(f"`{o.path}`" for o in simcore.outputs.OUTPUTS if o.path) + ".")
    def post(self, request):
        enforce_engine_limits(request.data)
        return Response(engine.evaluate(request.data, work_budget_s=settings.API_WORK_BUDGET_S, kind="scenario",
                                        memoize=False))


class ReliabilityProfilesView(APIView):
    """The failure profiles (every category's rate, unit, cause, detection, repair and source) and
    the restart profiles (each part's seconds, source and confidence) plans and scenarios choose from."""

    permission_classes = [IsAuthenticated]

    @extend_schema(tags=["catalogue"], responses={200: bodies.ReliabilityProfilesSerializer})
    def get(self, request):
        return Response(simcore.formulas.reliability.describe_profiles())


@extend_schema(tags=["evaluate"])
class OutputsView(ListAPIView):
    """The output registry: every metric the product names (comparisons, sweeps, the CLI table, the
    pages), with its path into an evaluation's result, label, unit and which way is better; paged as
    every list is."""

    permission_classes = [IsAuthenticated]
    serializer_class = api.OutputSerializer
    filter_backends = []  # a registry in the engine, in its own order

    def get_queryset(self):
        return [{**o.describe(), "compare": o.compare, "sweep": o.sweep} for o in simcore.outputs.OUTPUTS]

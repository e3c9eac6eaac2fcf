"""Catalogue endpoints: one slug-keyed model viewset per catalogue table, and the parts that fit."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from planner import models, serializers
from planner.api.bodies import MatchingPartsSerializer
from planner.filtersets import FILTERSETS
from planner.services.catalog import matching_parts


def catalog_viewset(model, serializer_class, queryset, description: str):
    """A CRUD viewset keyed by slug, filtered by the model's filter set."""
    tag = ["catalogue"]
    schema = extend_schema_view(
        list=extend_schema(tags=tag, description=f"List {description}."),
        retrieve=extend_schema(tags=tag, description=f"One of the {description}, by slug."),
        create=extend_schema(tags=tag, description=f"Add to the {description} (needs the add permission)."),
        update=extend_schema(tags=tag, description="Replace an entry (needs the change permission)."),
        partial_update=extend_schema(tags=tag, description="Change some fields (needs the change permission)."),
        destroy=extend_schema(
            tags=tag, description="Delete an entry (needs the delete permission); 409 while referenced."
        ),
    )
    attrs = {
        "queryset": queryset,
        "serializer_class": serializer_class,
        "lookup_field": "slug",
        "filterset_class": FILTERSETS[model],
        "ordering_fields": ["slug", "name", "vendor", "updated_at"],
        "__doc__": f"The {description}.",
    }
    return schema(type(f"{model.__name__}ViewSet", (viewsets.ModelViewSet,), attrs))


AcceleratorViewSet = catalog_viewset(
    models.Accelerator, serializers.AcceleratorSerializer, models.Accelerator.objects.all(), "accelerators"
)
CPUViewSet = catalog_viewset(models.CPU, serializers.CPUSerializer, models.CPU.objects.all(), "host CPUs")
NICViewSet = catalog_viewset(models.NIC, serializers.NICSerializer, models.NIC.objects.all(), "network adapters")
SwitchViewSet = catalog_viewset(
    models.Switch, serializers.SwitchSerializer, models.Switch.objects.all(), "network switches"
)
LinkPartViewSet = catalog_viewset(
    models.LinkPart, serializers.LinkPartSerializer, models.LinkPart.objects.all(), "cables and transceivers"
)
ComputeNodeTypeViewSet = catalog_viewset(
    models.ComputeNodeType,
    serializers.ComputeNodeTypeSerializer,
    models.ComputeNodeType.objects.select_related("accelerator", "cpu", "compute_nic", "storage_nic"),
    "compute node types",
)
StorageNodeTypeViewSet = catalog_viewset(
    models.StorageNodeType,
    serializers.StorageNodeTypeSerializer,
    models.StorageNodeType.objects.select_related("cpu", "nic"),
    "storage node types",
)
PriceBookViewSet = catalog_viewset(
    models.PriceBook,
    serializers.PriceBookSerializer,
    models.PriceBook.objects.prefetch_related("items"),
    "price books",
)


class MatchingPartsView(APIView):
    """The parts a plan on a node type can use, those that fit first."""

    @extend_schema(tags=["catalogue"], responses=MatchingPartsSerializer, parameters=[
        OpenApiParameter("node_type", str, required=True, description="compute node type slug"),
        OpenApiParameter("switch", str, description="switch slug the cables and optics are judged against")],
        description="Switches, endpoint cables and transceivers for a plan on `node_type`: those that can be "
                    "cabled together first, each with the reason it cannot (the plan's own rule).")
    def get(self, request):
        node_type = get_object_or_404(models.ComputeNodeType.objects.select_related("compute_nic"),
                                      slug=request.query_params.get("node_type", ""))
        slug = request.query_params.get("switch")
        return Response(matching_parts(node_type, get_object_or_404(models.Switch, slug=slug) if slug else None))

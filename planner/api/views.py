"""Catalogue endpoints: one slug-keyed model viewset per catalogue table, and the parts that fit."""
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from planner import models, serializers
from planner.api.bodies import MatchingPartsSerializer
from planner.api.permissions import PriceBookPermission, TokenScopePermission
from planner.api.versions import VersionedEntryMixin, entry_etag, locked_for_write
from planner.filtersets import FILTERSETS
from planner.models import ClusterPlan
from planner.services import prices as price_services
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
class PriceBookViewSet(VersionedEntryMixin, catalog_viewset(models.PriceBook, serializers.PriceBookSerializer,
                                                            models.PriceBook.objects.prefetch_related("items"),
                                                            "price books")):
    """Price books: the shared catalogue's and your own. Anyone signed in may create a book (their
    own; catalogue editors' new books are shared) and add their quotes to it. Versioned
    (:mod:`planner.api.versions`): reads carry an ETag, a write or a quote with a stale If-Match
    answers 412."""

    permission_classes = [TokenScopePermission, PriceBookPermission]

    def get_queryset(self):
        books = super().get_queryset().select_related("owner")
        user = self.request.user
        return books.visible_to(user) if user.is_authenticated else books.filter(owner__isnull=True)

    def perform_create(self, serializer):
        editor = self.request.user.has_perm("planner.add_pricebook")
        serializer.save(owner=None if editor else self.request.user)

    @extend_schema(tags=["catalogue"], request=serializers.PriceItemSerializer,
                   responses={200: serializers.PriceBookSerializer},
                   description="Add a quote to a book you may change, or replace the price it has for that part; "
                               "the book comes back whole.")
    @action(detail=True, methods=["post"])
    def items(self, request, slug=None):
        book = self.get_object()  # who may change the book, before what is sent
        item = serializers.PriceItemSerializer(data=request.data)
        item.is_valid(raise_exception=True)
        with transaction.atomic():
            book = locked_for_write(models.PriceBook, book, request)
            price_services.put_item(book=book, **item.validated_data)
        data = serializers.PriceBookSerializer(models.PriceBook.objects.prefetch_related("items").get(pk=book.pk)).data
        return Response(data, headers={"ETag": entry_etag(data["version"])})

    @extend_schema(tags=["catalogue"], request=serializers.PriceBookCopySerializer,
                   responses={201: serializers.PriceBookSerializer},
                   description="Copy a book you can see as your own (to add your quotes to it), and with `plan` "
                               "price that plan of yours from the copy.")
    @action(detail=True, methods=["post"], permission_classes=[TokenScopePermission, IsAuthenticated])
    def copy(self, request, slug=None):
        body = serializers.PriceBookCopySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = body.validated_data
        plan = fields.get("plan") and ClusterPlan.objects.visible_slug(request.user, fields["plan"], field="plan")
        if plan and plan.owner_id != request.user.id:
            raise PermissionDenied("only the plan's owner may choose its price book")
        copy = price_services.copy_book(book=self.get_object(), owner=request.user, slug=fields["slug"],
                                        name=fields.get("name"), plan=plan or None)
        return Response(serializers.PriceBookSerializer(copy).data, status=201)


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

"""Request and response shapes, one module per domain as the models are: what every serializer
shares (``base``), the catalogue, plans and workloads, tokens, and the output registry."""
from .base import CleanModelSerializer, SlugReference, as_drf_validation_error, full_clean_or_raise, slug_ref
from .catalog import (
    AcceleratorSerializer,
    ComputeNodeTypeSerializer,
    CPUSerializer,
    LinkPartSerializer,
    NICSerializer,
    PriceBookCopySerializer,
    PriceBookSerializer,
    PriceItemSerializer,
    StorageNodeTypeSerializer,
    SwitchSerializer,
)
from .outputs import OutputSerializer
from .plans import (
    CloneSerializer,
    ClusterPlanSerializer,
    EvaluateSerializer,
    OwnedEntrySerializer,
    PlanPreviewSerializer,
    WorkloadPreviewSerializer,
    WorkloadSerializer,
)
from .tokens import AccessTokenSerializer, ListedAccessTokenSerializer

__all__ = [
    "AcceleratorSerializer", "ListedAccessTokenSerializer", "AccessTokenSerializer", "CPUSerializer",
    "CleanModelSerializer", "CloneSerializer", "ClusterPlanSerializer", "ComputeNodeTypeSerializer",
    "EvaluateSerializer", "LinkPartSerializer", "NICSerializer", "OutputSerializer", "OwnedEntrySerializer",
    "PlanPreviewSerializer", "PriceBookCopySerializer", "PriceBookSerializer", "PriceItemSerializer", "SlugReference",
    "StorageNodeTypeSerializer", "SwitchSerializer", "WorkloadPreviewSerializer", "WorkloadSerializer",
    "as_drf_validation_error", "full_clean_or_raise", "slug_ref",
]

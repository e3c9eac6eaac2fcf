from django.urls import path
from rest_framework.routers import DefaultRouter

from planner.api import engine_views, measurement_views, plan_views, run_views, sweep_views, token_views, views

router = DefaultRouter()
router.register("catalog/accelerators", views.AcceleratorViewSet, basename="accelerator")
router.register("catalog/cpus", views.CPUViewSet, basename="cpu")
router.register("catalog/nics", views.NICViewSet, basename="nic")
router.register("catalog/switches", views.SwitchViewSet, basename="switch")
router.register("catalog/link-parts", views.LinkPartViewSet, basename="linkpart")
router.register("catalog/compute-node-types", views.ComputeNodeTypeViewSet, basename="computenodetype")
router.register("catalog/storage-node-types", views.StorageNodeTypeViewSet, basename="storagenodetype")
router.register("catalog/price-books", views.PriceBookViewSet, basename="pricebook")
router.register("plans", plan_views.ClusterPlanViewSet, basename="plan")
router.register("workloads", plan_views.WorkloadViewSet, basename="workload")
router.register("tokens", token_views.TokenViewSet, basename="token")
router.register("sweeps", sweep_views.SweepViewSet, basename="sweep")
router.register("measurements", measurement_views.MeasurementViewSet, basename="measurement")
router.register("runs", run_views.MeasuredRunViewSet, basename="run")

urlpatterns = [
    path("evaluate/", engine_views.EvaluateScenarioView.as_view(), name="evaluate"),
    path("catalog/matching-parts/", views.MatchingPartsView.as_view(), name="matching-parts"),
    path("auth/token/", token_views.ObtainTokenView.as_view(), name="api-token"),
    path("outputs/", engine_views.OutputsView.as_view(), name="outputs"),
    path("reliability-profiles/", engine_views.ReliabilityProfilesView.as_view(),
         name="reliability-profiles"),
    *router.urls,
]

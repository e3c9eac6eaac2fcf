from rest_framework.routers import DefaultRouter

from twin.api.views import TwinViewSet

router = DefaultRouter()
router.register("twins", TwinViewSet, basename="twin")
urlpatterns = router.urls

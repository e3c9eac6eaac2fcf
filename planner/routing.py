from django.urls import path

from planner.consumers import SweepProgressConsumer

websocket_urlpatterns = [path("ws/sweeps/<int:sweep_id>/", SweepProgressConsumer.as_asgi())]

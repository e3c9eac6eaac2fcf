from django.urls import path

from twin.consumers import TwinConsumer

websocket_urlpatterns = [path("ws/twins/<int:twin_id>/", TwinConsumer.as_asgi())]

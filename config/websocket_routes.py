"""Websocket URL patterns gathered from the apps that own them."""
from planner.routing import websocket_urlpatterns as planner_patterns

websocket_urlpatterns = [*planner_patterns]

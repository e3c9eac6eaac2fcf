"""Websocket URL patterns gathered from the apps that own them."""
from planner.routing import websocket_urlpatterns as planner_patterns
from twin.routing import websocket_urlpatterns as twin_patterns

websocket_urlpatterns = [*planner_patterns, *twin_patterns]

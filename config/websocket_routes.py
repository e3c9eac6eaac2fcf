"""Websocket URL patterns gathered from the apps that own them."""

websocket_urlpatterns: list = []

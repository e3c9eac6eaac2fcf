"""Websocket consumer for sweep progress: group ``sweep.<id>``.

Authenticated in ``connect()`` (session cookie through Channels' auth middleware, origin checked
by ``AllowedHostsOriginValidator`` in ``config/asgi.py``); only the sweep's owner or staff may
follow it. The current state is sent on connect, then every published change.
"""
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import RedisError

from planner.events import sweep_group
from planner.models import Sweep
from planner.services.sweep_results import sweep_state

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
logger = logging.getLogger(__name__)


async def leave_group(consumer) -> None:
    """Take a closing socket's channel out of its group. The channel layer out of reach (a Redis read
    timeout) is a warning, not an error: the membership lapses by itself after channels_redis's
    group expiry, and messages to a closed channel are dropped."""
    if not hasattr(consumer, "group"):
        return
    try:
        await consumer.channel_layer.group_discard(consumer.group, consumer.channel_name)
    except (RedisError, OSError) as error:  # TimeoutError and ConnectionError are OSErrors
        logger.warning("leaving %s: the channel layer did not answer (%s); the membership lapses by itself",
                       consumer.group, error)


class LayerTolerantConsumer(AsyncJsonWebsocketConsumer):
    """A consumer whose channel layer going away (Redis restarting: its receive raises) ends the socket
    with a logged warning, not a traceback at ERROR: its viewer reconnects and is sent the current state.
    Every other error propagates as before."""

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        except (RedisError, OSError) as error:  # TimeoutError and ConnectionError are OSErrors
            logger.warning("%s: the channel layer went away (%s); the socket closes and its viewer reconnects",
                           type(self).__name__, error)


class SweepProgressConsumer(LayerTolerantConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        sweep_id = int(self.scope["url_route"]["kwargs"]["sweep_id"])
        self.group = sweep_group(sweep_id)
        await self.channel_layer.group_add(self.group, self.channel_name)  # join first: miss nothing
        state = await self._visible_state(user, sweep_id)
        if state is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.last = state
        await self.accept()
        await self.send_json(state)

    async def disconnect(self, code):
        await leave_group(self)

    async def receive_json(self, content, **kwargs):
        """Viewers only listen; anything they send is ignored."""

    async def sweep_state(self, event):
        """Forward a state unless it is older than the last one sent (workers publish after their
        own commits, so states can arrive out of order)."""
        state = event["state"]
        final = ("done", "failed", "cancelled")
        if self.last["status"] in final or state["completed_chunks"] < self.last["completed_chunks"]:
            return
        if state == self.last:
            return
        self.last = state
        await self.send_json(state)

    @database_sync_to_async
    def _visible_state(self, user, sweep_id):
        sweep = Sweep.objects.visible_to(user).filter(pk=sweep_id).first()
        return None if sweep is None else sweep_state(sweep)

"""Websocket consumer for a twin: group ``twin.<id>``.

Authenticated in ``connect()`` (session, origin checked in ``config/asgi.py``); the owner, staff
and, for a shared twin, every signed-in user may watch. A snapshot is sent on connect; deltas are
then batched so a viewer gets at most ``MAX_MESSAGES_PER_S`` messages a second whatever the event
rate: deltas arriving in between are merged (events appended, latest metrics and states kept).
"""
import asyncio
import time

from channels.db import database_sync_to_async

from planner.consumers import LayerTolerantConsumer, leave_group
from twin.models import Twin
from twin.services.persistence import snapshot, twin_group

MAX_MESSAGES_PER_S = 10
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def merge(pending: dict, delta: dict) -> dict:
    merged = {**pending, **delta}
    merged["events"] = pending.get("events", []) + delta.get("events", [])
    merged["dropped_events"] = pending.get("dropped_events", 0) + delta.get("dropped_events", 0)
    for key in ("gpus", "nodes"):
        if key in pending or key in delta:
            states = dict(map(tuple, pending.get(key, [])))
            states.update(dict(map(tuple, delta.get(key, []))))
            merged[key] = [list(item) for item in sorted(states.items())]
    return merged


class TwinConsumer(LayerTolerantConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        twin_id = int(self.scope["url_route"]["kwargs"]["twin_id"])
        if not await self._may_view(user, twin_id):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join before reading the snapshot, so nothing published in between is missed; deltas
        # already contained in the snapshot are dropped by sequence number.
        self.group = twin_group(twin_id)
        self.pending = None
        self.last_sent = 0.0
        self.flusher = None
        await self.channel_layer.group_add(self.group, self.channel_name)
        state = await self._snapshot(twin_id)
        self.seen_seq = state["last_seq"]
        await self.accept()
        await self.send_json({"type": "snapshot", **state})

    async def disconnect(self, code):
        await leave_group(self)
        if getattr(self, "flusher", None):
            self.flusher.cancel()

    async def receive_json(self, content, **kwargs):
        """Viewers only listen; controls go through the REST API."""

    async def twin_delta(self, event):
        delta = event["delta"]
        if delta.get("last_seq", 0) < self.seen_seq:
            return  # older than the snapshot this viewer started from
        delta = {**delta, "events": [e for e in delta.get("events", []) if e["seq"] > self.seen_seq]}
        self.seen_seq = max(self.seen_seq, delta.get("last_seq", 0))
        self.pending = merge(self.pending, delta) if self.pending else delta
        wait = 1.0 / MAX_MESSAGES_PER_S - (time.monotonic() - self.last_sent)
        if wait <= 0:
            await self._flush()
        elif self.flusher is None:
            self.flusher = asyncio.ensure_future(self._flush_later(wait))

    async def _flush_later(self, wait):
        await asyncio.sleep(wait)
        self.flusher = None
        await self._flush()

    async def _flush(self):
        if self.pending is None:
            return
        delta, self.pending = self.pending, None
        self.last_sent = time.monotonic()
        await self.send_json({"type": "delta", **delta})

    @database_sync_to_async
    def _may_view(self, user, twin_id) -> bool:
        return Twin.objects.visible_to(user).filter(pk=twin_id).exists()

    @database_sync_to_async
    def _snapshot(self, twin_id):
        return snapshot(Twin.objects.get(pk=twin_id))

"""Progress events for sweeps, pushed through the Channels layer to group ``sweep.<id>``.

Throttled to a few events per second per sweep in each process; the final state is always sent.
"""
import time

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from planner.services.sweeps import sweep_state

MIN_INTERVAL_S = 0.25
_last_sent: dict[int, float] = {}


def sweep_group(sweep_id: int) -> str:
    return f"sweep.{sweep_id}"


def publish_sweep_state(sweep, *, force: bool = False):
    now = time.monotonic()
    if not force and now - _last_sent.get(sweep.pk, 0.0) < MIN_INTERVAL_S:
        return
    _last_sent[sweep.pk] = now
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(sweep_group(sweep.pk), {"type": "sweep.state", "state": sweep_state(sweep)})

"""Progress events for sweeps, pushed through the Channels layer to group ``sweep.<id>``.

Throttled to a few events per second per sweep in each process; the final state is always sent.
"""
import logging
import time

from asgiref.sync import async_to_sync
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)
MIN_INTERVAL_S = 0.25
# What an unreachable (OSError covers timeouts), restarting (still loading its data) or overloaded
# channel layer raises.
LAYER_ERRORS = (OSError, RedisError, ChannelFull)
_last_sent: dict[int, float] = {}


def send_to_group(group: str, message: dict) -> None:
    """Push a message to a group's viewers. Viewers are told, never trusted with the work: when the
    channel layer is unreachable the message is dropped (a viewer gets the current state when it
    reconnects) and the caller's work carries on."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except LAYER_ERRORS as error:
        logger.warning("channel layer unreachable; %s not told: %s", group, error)


def sweep_group(sweep_id: int) -> str:
    return f"sweep.{sweep_id}"


def publish_sweep_state(sweep_id: int, state, *, force: bool = False):
    """Send ``state()`` (built only when sent) to the sweep's viewers, at most every MIN_INTERVAL_S
    unless ``force``."""
    now = time.monotonic()
    if not force and now - _last_sent.get(sweep_id, 0.0) < MIN_INTERVAL_S:
        return
    _last_sent[sweep_id] = now
    send_to_group(sweep_group(sweep_id), {"type": "sweep.state", "state": state()})

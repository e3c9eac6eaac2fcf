"""The driver: advances every running twin by its speed, a few times a second."""
import logging
import time

from django.db import DatabaseError

from simcore.tools import twin as engine
from twin.models import Twin
from twin.services.controls import twin_advance
from twin.services.creation import simulator
from twin.services.errors import StaleTwin

logger = logging.getLogger(__name__)


class Driver:
    """Advances every running twin by speed x the wall time since its last tick, a few times a
    second. One driver per deployment: the ``run_twins`` command, or a thread in the web process
    when there is no Redis (the embedded default)."""

    def __init__(self, tick_s: float = 0.2):
        self.tick_s = tick_s
        self.sims: dict[int, tuple[engine.Twin, float, int]] = {}
        self.stopping = False

    def tick(self, now: float | None = None):
        now = time.monotonic() if now is None else now
        running = {t.pk: t for t in Twin.objects.filter(status=Twin.Status.RUNNING).select_related(
            "plan__node_type", "plan__switch", "plan__price_book")}
        for pk in list(self.sims):
            if pk not in running:
                del self.sims[pk]
        for pk, twin in running.items():
            try:
                self._tick_one(pk, twin, now)
            except StaleTwin:
                self.sims.pop(pk, None)  # changed elsewhere: reload the saved state on the next tick
            except DatabaseError as error:  # the database, not the twin: reload and try on the next tick
                logger.warning("twin %s not advanced this tick: %s", pk, error)
                self.sims.pop(pk, None)
            except Exception as error:  # noqa: BLE001 - one broken twin must not stop the others
                logger.exception("twin %s stopped", pk)
                self.sims.pop(pk, None)
                Twin.objects.filter(pk=pk).update(status=Twin.Status.PAUSED, error=f"{type(error).__name__}: {error}")

    def _tick_one(self, pk: int, twin: Twin, now: float):
        cached = self.sims.get(pk)
        if cached is None or cached[2] != twin.last_seq:  # new, or changed elsewhere (inject, ingest)
            self.sims[pk] = (simulator(twin, twin.state), now, twin.last_seq)
            return
        sim, last, _ = cached
        sim = twin_advance(twin=twin, sim_seconds=twin.speed * (now - last), sim=sim)
        self.sims[pk] = (sim, now, twin.last_seq)

    def run(self):
        while not self.stopping:
            start = time.monotonic()
            try:
                self.tick(start)
            except DatabaseError as error:  # e.g. the database restarting: keep driving once it is back
                logger.warning("twin driver tick failed, retrying: %s", error)
            time.sleep(max(0.0, self.tick_s - (time.monotonic() - start)))

import logging
import signal

from django.core.management.base import BaseCommand

from twin.services.driver import Driver

logger = logging.getLogger("twin.driver")


class Command(BaseCommand):
    help = "Drive every running twin a few times a second until stopped (SIGTERM or Ctrl-C)."

    def add_arguments(self, parser):
        parser.add_argument("--tick", type=float, default=0.2, help="seconds between ticks")

    def handle(self, *args, tick, **options):
        driver = Driver(tick_s=tick)

        def stop(signum, frame):
            driver.stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        logger.info("driving twins every %g s", tick)
        driver.run()
        logger.info("stopped")

from django.core.management.base import BaseCommand, CommandError

from planner.services.catalog import CatalogFileError, catalog_load


class Command(BaseCommand):
    help = "Load the seed catalogue (YAML, validated by JSON Schema). Safe to run again."

    def handle(self, *args, **options):
        try:
            report = catalog_load()
        except CatalogFileError as error:
            raise CommandError(f"catalogue not loaded, nothing changed: {error}") from error
        self.stdout.write(f"catalogue: {report}")

from django.core.management.base import BaseCommand

from planner.services.accounts import demo_user_ensure


class Command(BaseCommand):
    help = ("Create the demo user for a local first run (a random password on first creation, kept in "
            "var/demo-credentials.txt) and print its credentials and API token.")

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", help="set this password (default: keep, or a random one at creation)")

    def handle(self, *args, username, password, **options):
        user, password, key = demo_user_ensure(username=username, password=password)
        shown = password or "(unchanged; pass --password to set one)"
        self.stdout.write(f"demo user: {user.username} / password: {shown} / API token: {key}")

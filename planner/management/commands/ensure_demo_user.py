from django.core.management.base import BaseCommand

from planner.services.accounts import demo_user_ensure


class Command(BaseCommand):
    help = "Create (or reset) the demo user for a local first run and print its credentials."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-planner-2026")

    def handle(self, *args, username, password, **options):
        user, token = demo_user_ensure(username=username, password=password)
        self.stdout.write(
            f"demo user: {user.username} / password: {password} / API token: {token.key}"
        )

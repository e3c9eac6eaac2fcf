from django.apps import AppConfig


class TwinConfig(AppConfig):
    name = "twin"
    verbose_name = "Live cluster twins"

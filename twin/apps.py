from django.apps import AppConfig


class TwinConfig(AppConfig):
    name = "twin"
    verbose_name = "Live cluster twins"

    def ready(self):
        from django.core.signals import request_started

        from twin.local import resume_running_twins

        request_started.connect(resume_running_twins)

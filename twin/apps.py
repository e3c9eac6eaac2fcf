from django.apps import AppConfig


class TwinConfig(AppConfig):
    name = "twin"
    verbose_name = "Live cluster twins"

    def ready(self):
        from django.core.signals import request_started

        from planner.services.retention import register_retention
        from twin.local import resume_running_twins
        from twin.services.retention import twin_retention

        request_started.connect(resume_running_twins)
        register_retention(twin_retention)

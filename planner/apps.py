from django.apps import AppConfig


class PlannerConfig(AppConfig):
    name = "planner"
    verbose_name = "Cluster planner"

    def ready(self):
        from planner.services.retention import planner_retention, register_retention

        register_retention(planner_retention)

from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Trace Studio"

    def ready(self):
        from . import checks  # noqa: F401  (registers system checks)

from django.apps import AppConfig


class ReplaysConfig(AppConfig):
    name = "replays"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from replays import extensions, receivers  # noqa: F401 - the accept listener, the trace pages' panel

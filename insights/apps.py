from django.apps import AppConfig


class InsightsConfig(AppConfig):
    name = "insights"

    def ready(self) -> None:
        from insights import receivers  # noqa: F401  (connects the search index to annotation saves)

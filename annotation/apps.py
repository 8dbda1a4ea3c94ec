from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        from annotation import extensions, receivers  # noqa: F401 (connects the receivers)

        extensions.register()

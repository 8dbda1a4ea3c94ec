from django.apps import AppConfig


class PrescoringConfig(AppConfig):
    name = "prescoring"
    verbose_name = "Pre-scoring"

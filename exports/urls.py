"""Pages of this app."""

urlpatterns: list = []

"""API routes of this app (mounted under /api/)."""

urlpatterns: list = []

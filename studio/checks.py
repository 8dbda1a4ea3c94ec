"""System checks: production must serve its static files from a manifest, and not run with demo accounts."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register


def static_manifest_problem() -> str | None:
    """Why production cannot serve its pages' static files, or None. Without the manifest that `collectstatic`
    writes in production mode, every page that names a static file answers 500."""
    if not settings.PRODUCTION:
        return None
    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    if manifest.is_file():
        return None
    return (
        f"no static files manifest at {manifest}: run `STUDIO_MODE=production python manage.py collectstatic "
        "--noinput` (the Dockerfile does; docs/deploy.md) with the same STUDIO_STATIC_ROOT"
    )


@register()
def static_manifest_present(app_configs: Any, **kwargs: Any) -> list[Error]:
    problem = static_manifest_problem()
    return [Error(problem, id="studio.E002")] if problem else []


@register(Tags.security, deploy=True)
def no_demo_accounts_in_production(app_configs: Any, **kwargs: Any) -> list[Error]:
    if not settings.PRODUCTION:
        return []
    from django.contrib.auth import get_user_model
    from django.db import DatabaseError

    try:
        demo = list(get_user_model().objects.filter(groups__name="demo").values_list("username", flat=True)[:5])
    except DatabaseError:
        return []  # no tables yet: nothing to refuse
    if demo:
        return [Error(f"demo accounts exist in production: {', '.join(demo)}", hint="Delete them.", id="studio.E001")]
    return []

"""System checks: production must not run with demo accounts."""

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=True)
def no_demo_accounts_in_production(app_configs, **kwargs):
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

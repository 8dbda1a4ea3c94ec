from django.conf import settings


def studio(request):
    return {"studio_mode": settings.STUDIO_MODE, "app_version": settings.APP_VERSION}

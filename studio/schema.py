"""The API schema's extensions (drf-spectacular), registered when the app is ready (studio.apps)."""

from drf_spectacular.authentication import SessionScheme


class StudioSessionScheme(SessionScheme):
    """The session login (studio.security.SessionAuthentication, DRF's with its CSRF refusal given a kind) is the
    schema's cookie login, as DRF's own is."""

    target_class = "studio.security.SessionAuthentication"

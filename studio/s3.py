"""S3 storage for the full stack: an S3 that hangs or refuses costs a request seconds, never a thread for minutes.

botocore's defaults are a 60 s connect timeout, a 60 s read timeout and up to 5 attempts ("legacy" retries), so
one stalled S3 held a web thread for minutes. Here every call has short timeouts and a bounded
number of attempts; the error that remains is answered 503 by ``studio.middleware.DependencyOutageMiddleware``.

Presigned URLs are signed for the endpoint that browsers reach (``STUDIO_S3_PUBLIC_ENDPOINT_URL``), which in
compose is not the one the containers use (``http://minio:9000`` resolves only inside the compose network).
Signing is local arithmetic: no S3 round trip.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.config import Config
from django.conf import settings
from storages.backends.s3 import S3Storage
from storages.utils import clean_name


def s3_client_config(base: Config | None = None) -> Config:
    """The botocore configuration every S3 call of the studio uses: short timeouts, bounded "standard" retries
    (which back off, and retry throttling and 5xx answers as well as dropped connections)."""
    bounded = Config(
        connect_timeout=settings.S3_CONNECT_TIMEOUT_S,
        read_timeout=settings.S3_READ_TIMEOUT_S,
        retries={"mode": "standard", "total_max_attempts": settings.S3_MAX_ATTEMPTS},
    )
    return base.merge(bounded) if base is not None else bounded


class StudioS3Storage(S3Storage):
    """django-storages' S3 backend with bounded calls and presigned URLs for the public endpoint."""

    def __init__(self, **options: Any) -> None:
        self.public_endpoint_url = options.pop("public_endpoint_url", None) or getattr(
            settings, "S3_PUBLIC_ENDPOINT_URL", None
        )
        super().__init__(**options)
        self.client_config = s3_client_config(self.client_config)  # type: ignore[has-type]  # django-storages is untyped
        self._public_connections = threading.local()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_public_connections", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._public_connections = threading.local()

    @property
    def public_connection(self) -> Any:  # a boto3 S3 resource (boto3 is untyped)
        """A client that only signs: it names the public endpoint, so the signed Host is the one browsers send."""
        if not self.public_endpoint_url:
            return self.connection
        connection = getattr(self._public_connections, "connection", None)
        if connection is None:
            connection = self._public_connections.connection = self._create_session().resource(
                "s3",
                region_name=self.region_name,
                use_ssl=self.use_ssl,
                endpoint_url=self.public_endpoint_url,
                config=self.client_config,
                verify=self.verify,
            )
        return connection

    def url(
        self,
        name: str,
        parameters: dict[str, Any] | None = None,
        expire: int | None = None,
        http_method: str | None = None,
    ) -> str:
        if not self.public_endpoint_url or self.custom_domain or not self.querystring_auth:
            return super().url(name, parameters=parameters, expire=expire, http_method=http_method)
        params = {**(parameters or {}), "Bucket": self.bucket_name, "Key": self._normalize_name(clean_name(name))}
        return self.public_connection.meta.client.generate_presigned_url(
            "get_object",
            Params=params,
            ExpiresIn=self.querystring_expire if expire is None else expire,
            HttpMethod=http_method,
        )

# Two images. `app` (also what a build without a target gives): web and workers, with the tokens extra (Qwen2's
# vocabulary: the export counts each sample's tokens exactly); the GPU worker adds the ml extra (torch,
# transformers). `proxy`: Caddy with this build's collected static files, which it serves itself (deploy/Caddyfile).
FROM python:3.11-slim AS app
ARG EXTRAS="[tokens]"
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY studio studio
COPY traces traces
COPY prescoring prescoring
COPY annotation annotation
COPY exports exports
COPY evaluation evaluation
COPY webhooks webhooks
COPY insights insights
COPY trace_studio_cli trace_studio_cli
RUN pip install ".${EXTRAS}"
COPY . .
# Production mode writes the hashed names and their manifest that production pages need (a throwaway key: the
# build only reads settings; the real key comes from the environment at run time).
RUN STUDIO_MODE=production STUDIO_SECRET_KEY=collectstatic-at-image-build-time-only-never-signs-anything-0000 python manage.py collectstatic --noinput
EXPOSE 8000
# studio/webserver.py's flags: forwarded headers are judged by the studio (STUDIO_TRUSTED_PROXIES), not uvicorn.
CMD ["uvicorn", "studio.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--no-proxy-headers", "--timeout-keep-alive", "5"]

FROM caddy:2 AS proxy
COPY deploy/Caddyfile /etc/caddy/Caddyfile
COPY --from=app /app/staticfiles /srv/static

# Built when no target is named: the application image.
FROM app

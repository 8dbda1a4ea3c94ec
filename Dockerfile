# One image for web and workers; the GPU worker adds the ml extra (torch, transformers).
FROM python:3.11-slim
ARG EXTRAS=""
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY studio studio
COPY traces traces
COPY annotation annotation
COPY exports exports
RUN pip install ".${EXTRAS}"
COPY . .
RUN STUDIO_MODE=dev python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["uvicorn", "studio.asgi:application", "--host", "0.0.0.0", "--port", "8000"]

# Faultline: one image for web (gunicorn), worker and beat (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    FAULTLINE_VAR_DIR=/app/var \
    FAULTLINE_BUNDLE_ROOT=/data/bundles

WORKDIR /app
RUN useradd --create-home --uid 1000 faultline && mkdir -p /data/bundles /app/var && chown -R faultline /data /app

COPY . .
RUN pip install -e . && DJANGO_SECRET_KEY=build python manage.py collectstatic --noinput -v0 && chown -R faultline /app/var

USER faultline
EXPOSE 8000
CMD ["gunicorn", "triage.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]

"""The production files: docker-compose.yml's structure (no Docker engine runs here), .env.example, Dockerfile."""

import re
from pathlib import Path

import yaml

BASE_DIR = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "worker", "beat")


def compose() -> dict:
    return yaml.safe_load((BASE_DIR / "docker-compose.yml").read_text())


def test_compose_runs_web_worker_beat_postgres_and_redis_with_health_checks():
    services = compose()["services"]

    assert set(services) == {"web", "worker", "beat", "db", "redis"}
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
    assert services["db"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    assert "gunicorn triage.wsgi:application" in services["web"]["command"]
    assert services["worker"]["command"].startswith("celery -A triage worker")
    assert services["beat"]["command"].startswith("celery -A triage beat")


def test_app_services_share_the_database_broker_and_bundle_store():
    services = compose()["services"]

    for name in APP_SERVICES:
        service = services[name]
        assert service["environment"]["DATABASE_URL"].startswith("postgres://"), name
        assert service["environment"]["CELERY_BROKER_URL"].startswith("redis://redis:"), name
        assert "bundles:/data/bundles" in service["volumes"], name
        assert service["depends_on"] == {
            "db": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
        }, name


def test_workers_can_be_scaled():
    worker = compose()["services"]["worker"]

    assert "container_name" not in worker
    assert "ports" not in worker


def test_data_lives_in_named_volumes():
    document = compose()

    assert set(document["volumes"]) == {"pgdata", "redisdata", "bundles"}
    assert "pgdata:/var/lib/postgresql/data" in document["services"]["db"]["volumes"]
    assert "redisdata:/data" in document["services"]["redis"]["volumes"]


def test_env_example_lists_every_variable_the_settings_read():
    source = (BASE_DIR / "triage" / "settings.py").read_text()
    read = set(re.findall(r'env_\w+\("([A-Z0-9_]+)"', source))
    listed = set(re.findall(r"^([A-Z0-9_]+)=", (BASE_DIR / ".env.example").read_text(), re.M))

    assert len(read) >= 20
    assert read - listed == set()


def test_the_image_is_python_3_11_slim_serving_with_gunicorn():
    dockerfile = (BASE_DIR / "Dockerfile").read_text()

    assert dockerfile.startswith("# ")
    assert "\nFROM python:3.11-slim\n" in dockerfile
    assert '"gunicorn", "triage.wsgi:application"' in dockerfile
    assert "USER faultline" in dockerfile

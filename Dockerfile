FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PLANNER_VAR_DIR=/app/var
WORKDIR /app
COPY requirements.lock .
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
COPY . .
# collectstatic needs settings but no database; a throwaway key is enough at build time.
RUN SECRET_KEY=build-only-key-build-only-key-build-only-key-build-only \
    DJANGO_SETTINGS_MODULE=config.settings.production python manage.py collectstatic --noinput
RUN useradd --create-home planner && mkdir -p /app/var/metrics && chown -R planner /app/var
USER planner
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "--access-log", "/dev/null", "config.asgi:application"]

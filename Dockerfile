# syntax=docker/dockerfile:1
# ChangeOps: `docker build -t changeops .` then `docker run --env-file changeops.env -p 3000:3000 changeops`.
# Build stage: a wheel of the project (the migrations ship inside it).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Run stage: the wheel and its dependencies, a non-root user, `bot serve`.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PORT=3000 HOST=0.0.0.0
RUN useradd --system --uid 10001 --home-dir /app --create-home changeops
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER changeops
WORKDIR /app
EXPOSE 3000
# SIGTERM (docker stop, Kubernetes) finishes work in flight within SHUTDOWN_GRACE_SECONDS (20 s) and exits 0.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ.get('PORT', '3000')}/healthz\", timeout=2)"]
CMD ["bot", "serve"]

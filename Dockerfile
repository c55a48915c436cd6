# attention-quiz as a container: gunicorn serving `app:create_app()` as a non-root user.
# The builder stage builds wheels for the app and its dependencies. The runtime stage installs them
# into a venv and never sees a compiler, pip's cache or the source tree. docs/deploy.md explains how to run it.
# It needs BuildKit (Docker's default builder since 23.0) or podman/buildah, for `RUN --mount`.
#
#   docker build -t attention-quiz .
#   docker run -d -p 127.0.0.1:8000:8000 -e FLASK_SECRET_KEY="$(cat secret_key)" \
#              -v attention-quiz-data:/data attention-quiz

FROM python:3.11-slim AS dependencies
# Wheels for every dependency, read from pyproject.toml. Editing the app does not rebuild this stage, and
# the image layer they are installed into stays the same, so an upgrade downloads only the app's layer.
# Plus the redis client, so FLASK_RATELIMIT_STORAGE_URI=redis://... works when several servers share limits.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml ./
RUN mkdir /wheels \
 && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /wheels/requirements.txt \
 && echo "limits[redis]" >> /wheels/requirements.txt \
 && python -m pip wheel --wheel-dir /wheels -r /wheels/requirements.txt


FROM python:3.11-slim AS builder
# The app's own wheel: a regular (non-editable) build that carries the templates, static files and banks.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY quizzes ./quizzes
RUN python -m pip wheel --no-deps --wheel-dir /wheel .


FROM python:3.11-slim AS runtime

LABEL org.opencontainers.image.title="attention-quiz" \
      org.opencontainers.image.description="Self-hosted quizzes on attention and Transformers" \
      org.opencontainers.image.licenses="MIT"

# A fixed uid/gid, so owners of bind-mounted folders can be set on the host (chown 10001:10001 ...).
RUN groupadd --gid 10001 quiz \
 && useradd --uid 10001 --gid quiz --no-log-init --home-dir /home/quiz --create-home --shell /usr/sbin/nologin quiz

# The wheels are bind-mounted from the build stages, so they never become a layer of this image. The base
# image's pip installs into a venv that has no pip or setuptools of its own: nothing to patch, 20 MB less.
# Dependencies and app go in separate layers, and `pip check` proves the two fit together.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN --mount=type=bind,from=dependencies,source=/wheels,target=/wheels \
    python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --no-index --find-links=/wheels -r /wheels/requirements.txt
RUN --mount=type=bind,from=builder,source=/wheel,target=/wheel \
    python -m pip --python /opt/venv/bin/python install --no-index --no-deps /wheel/*.whl \
 && python -m pip --python /opt/venv/bin/python check

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    FLASK_INSTANCE_PATH=/data \
    FLASK_QUIZ_DIR=/quizzes \
    FLASK_DATABASE_AUTO_MIGRATE=false \
    MPLCONFIGDIR=/var/cache/matplotlib \
    MPLBACKEND=Agg \
    OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    MALLOC_ARENA_MAX=2 \
    PORT=8000 \
    GUNICORN_WORKERS=2 \
    GUNICORN_THREADS=8 \
    GUNICORN_TIMEOUT=60
# FLASK_DATABASE_AUTO_MIGRATE=false: the entrypoint runs `flask init-db` once before the workers start,
# so the workers need not repeat it. OPENBLAS/OMP/MKL_NUM_THREADS=1: the workers are processes already;
# BLAS threads in each would oversubscribe the CPUs. MALLOC_ARENA_MAX=2: glibc gives each thread its own
# heap (arena) by default, so a worker's 8 threads each kept half-empty heaps after drawing figures; with
# two, a worker's peak after drawing every figure fell from 258 MB to 196 MB (docs/benchmarks.md).

# The bundled banks are served from /quizzes. Mounting a folder there replaces them.
COPY quizzes/ /quizzes/
COPY docker/entrypoint.sh /usr/local/bin/docker-entrypoint
COPY docker/gunicorn.conf.py /etc/attention-quiz/gunicorn.conf.py
COPY docker/healthcheck.py /usr/local/bin/healthcheck
RUN chmod 0755 /usr/local/bin/docker-entrypoint /usr/local/bin/healthcheck \
 && chmod -R a+rX /quizzes /etc/attention-quiz \
 && install -d -o quiz -g quiz -m 0700 /data \
 && install -d -o quiz -g quiz -m 0755 "$MPLCONFIGDIR"

USER quiz:quiz
# Build matplotlib's font cache now, as the user that serves, so the first plot request is not slow.
RUN python -c "import matplotlib.font_manager" && ls "$MPLCONFIGDIR"/fontlist-*.json >/dev/null

WORKDIR /home/quiz
VOLUME ["/data", "/quizzes"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["python", "/usr/local/bin/healthcheck"]

ENTRYPOINT ["docker-entrypoint"]
CMD ["gunicorn", "--config", "/etc/attention-quiz/gunicorn.conf.py", "app:create_app()"]

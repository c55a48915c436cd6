#!/bin/sh
# The official image's first start, in short: an empty data folder gets a cluster whose superuser is POSTGRES_USER
# with POSTGRES_PASSWORD, and a database POSTGRES_DB; then PostgreSQL runs as the postgres user, as PID 1.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
bin=$(echo /usr/lib/postgresql/*/bin)
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$password_file"
    chown postgres "$password_file"
    as_postgres "$bin/initdb" --pgdata="$PGDATA" --username="$user" --pwfile="$password_file" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        quoted=$(printf '%s' "$database" | sed 's/"/""/g')
        echo "CREATE DATABASE \"$quoted\"" | as_postgres "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
    fi
    echo "postgres stand-in: created database $database for $user"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'

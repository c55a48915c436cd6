#!/bin/bash
# The image's server (its CMD): nginx in front on port 8000 (docker/nginx.conf), gunicorn behind it on a unix socket
# that nothing outside the container can reach. Both log to the container's stdout and stderr.
# `docker stop` (SIGTERM, or SIGINT): nginx stops accepting and finishes the requests under way, then gunicorn
# finishes its own. If either exits by itself, the other is stopped and the container exits with that status, so a
# restart policy starts both afresh rather than leaving half a server.
set -u

say() { printf 'attention-quiz: %s\n' "$*" >&2; }

run_dir=/tmp/attention-quiz
mkdir -p "$run_dir/nginx"
rm -f "$run_dir/gunicorn.sock"

# nginx is the one proxy in front of gunicorn: the app reads the client's address from the X-Forwarded-For it
# writes. Behind another proxy of your own, set FLASK_PROXY_FIX=2.
export FLASK_PROXY_FIX="${FLASK_PROXY_FIX:-1}"
# nginx's access log has the client addresses (gunicorn would only see the socket), so gunicorn's is off.
GUNICORN_BIND="unix:$run_dir/gunicorn.sock" \
    gunicorn --config /etc/attention-quiz/gunicorn.conf.py --access-logfile /dev/null "app:create_app()" &
gunicorn_pid=$!
nginx_pid=

stop() {
    [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid"
    kill -TERM "$gunicorn_pid" 2>/dev/null && wait "$gunicorn_pid"
}
trap 'say "stopping"; stop; exit 0' TERM INT

# nginx starts once gunicorn listens (after loading the app), so port 8000 opens ready to serve, not with 502s.
until [ -S "$run_dir/gunicorn.sock" ]; do
    if ! kill -0 "$gunicorn_pid" 2>/dev/null; then
        wait "$gunicorn_pid"
        status=$?
        say "gunicorn exited with status $status before it listened"
        exit "$status"
    fi
    sleep 0.2
done
nginx -c /etc/attention-quiz/nginx.conf -e stderr -g 'daemon off;' &
nginx_pid=$!

wait -n "$gunicorn_pid" "$nginx_pid"
status=$?
say "gunicorn or nginx exited with status $status; stopping the other"
stop
exit "$status"

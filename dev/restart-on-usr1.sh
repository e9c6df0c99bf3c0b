#!/bin/sh
# The entrypoint of the dev image (dev/Dockerfile, target dev), for Tilt's live update: runs its
# arguments (`provider-kserve run ...`) and, on SIGUSR1, stops them (SIGTERM) and runs them again in
# the same container, so the files Tilt synced into /app/src stay (a container restart would start
# from the image again). SIGTERM or SIGINT stop them and exit with their status.
child=
restart=
trap 'restart=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' USR1
trap 'restart=; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT
while :; do
  "$@" &
  child=$!
  # `wait` returns early when a trapped signal arrives: wait until the child is gone.
  status=0
  while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    status=$?
  done
  if [ -z "$restart" ]; then
    exit "$status"
  fi
  restart=
  echo "restart-on-usr1: restarting $*" >&2
done

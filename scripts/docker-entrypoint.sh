#!/usr/bin/env bash
# Entrypoint of the cluster node image. The first word decides what runs:
#   ray ...                    a Ray node, e.g. `ray start --head --block` or `ray start --address=HEAD:6379 --block`
#   prism-fast ...             the evaluator, as given
#   eval | doctor | report ... a prism-fast command word (or a KEY=VALUE override / a -flag): prism-fast "$@"
#   anything else              run as given (bash, python, pytest, ...)
# No argument runs `prism-fast doctor` (what this node will get: GPU, decoder, OCR provider, sandbox, Ray, shm).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  set -- doctor
fi
case "$1" in
  ray | prism-fast) exec "$@" ;;
  eval | generate | fit-reference | profile-render | report | calibrate | inspect | doctor) exec prism-fast "$@" ;;
  -* | *=*) exec prism-fast "$@" ;;
  *) exec "$@" ;;
esac

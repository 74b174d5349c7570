#!/usr/bin/env bash
# Runs test_shm_security as root with a second local user, made here (useradd, a
# system account without a home or a login shell) where it is missing. Skipped
# (exit 77) where neither root nor useradd is available.
# Usage: shm_security.sh TEST_BINARY [USER]
set -euo pipefail
binary=$1 user=${2:-blink-shm-test}
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root, to act as a second user"
  exit 77
fi
if ! id -u "$user" >/dev/null 2>&1; then
  if ! command -v useradd >/dev/null; then
    echo "SKIP: no user $user and no useradd to make one"
    exit 77
  fi
  # Two tests may make it at once: a lost race leaves the user there all the same.
  useradd --system --no-create-home --shell /usr/sbin/nologin "$user" 2>/dev/null ||
    id -u "$user" >/dev/null
fi
BLINK_TEST_OTHER_USER=$user exec "$binary"

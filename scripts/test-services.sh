#!/usr/bin/env bash
# What the test suite needs besides Python packages: PostgreSQL on 127.0.0.1:5432, Debian's
# chromium-headless-shell (the tests' browser) and chromium (the benches'). Starts / installs them
# when missing (as root); says what to do otherwise.
set -euo pipefail

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  else
    echo "PostgreSQL is not running on 127.0.0.1:5432: its tests will fail (with CI=true) or skip." >&2
  fi
fi

missing=()
for browser in chromium-headless-shell chromium; do
  command -v "$browser" >/dev/null 2>&1 || missing+=("$browser")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
  else
    echo "Missing: ${missing[*]}: install Debian's packages of that name for the browser tests and benches." >&2
  fi
fi

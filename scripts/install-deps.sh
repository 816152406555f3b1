#!/usr/bin/env bash
# Installs the Debian packages tessel builds with (as root, on Debian 12).
# Does nothing for packages already installed.
set -euo pipefail
PACKAGES=(
  build-essential cmake ccache
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libglpk-dev gnuplot-nox
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

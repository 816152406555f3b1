#!/usr/bin/env bash
# Installs the Debian packages tessel builds with (as root, on Debian 12).
# Does nothing for packages already installed. The daemon needs SQLite and
# cpp-httplib; its integration tests a local Slurm (munge, slurmctld, slurmd,
# slurm-client) and the example training job Debian's python3-torch; the
# sanitizer and fuzzing builds clang with its runtimes (libFuzzer, ASan,
# UBSan) and llvm-symbolizer. report.html embeds Chart.js (libjs-chart.js)
# at build time; its browser test drives headless Chromium (chromium,
# chromium-driver, python3-selenium). The Python module (`import tessel`)
# builds with pybind11 against Debian's python3; its tests use pandas.
# scripts/check-arena-artifact.py runs the Arena artifact's simulator with
# numpy, pandas, scipy and cvxopt (its cvxpy stand-in solves with them).
set -euo pipefail
PACKAGES=(
  build-essential cmake ccache
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libglpk-dev gnuplot-nox libjs-chart.js
  libsqlite3-dev libcpp-httplib-dev curl
  munge slurmctld slurmd slurm-client
  python3-torch
  pybind11-dev python3-dev python3-pandas
  python3-scipy python3-cvxopt
  clang libclang-rt-dev llvm
  chromium chromium-driver python3-selenium
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

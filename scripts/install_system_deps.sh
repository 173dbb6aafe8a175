#!/usr/bin/env bash
# System packages prism_fast needs on Debian/Ubuntu: Manim's Cairo/Pango build deps, FFmpeg, TeX Live for
# MathTex (incl. Chinese support), dvisvgm, and the pinned font set (DejaVu + Noto CJK; spec D-4).
# Used by the Makefile (make demo / make test) and by the Dockerfile, so both images agree.
# Installs only what is missing; needs root (or sudo) when something is missing.
set -euo pipefail

PACKAGES=(
  pkg-config libcairo2-dev libpango1.0-dev ffmpeg
  texlive texlive-latex-extra texlive-fonts-recommended texlive-science texlive-xetex
  texlive-lang-chinese dvisvgm fonts-noto-cjk fonts-dejavu-core
  libgl1 libglib2.0-0
  chromium  # headless browser of the HTML report test (tests/report/test_report_html.py)
  python3-venv python3-dev build-essential
  bubblewrap util-linux  # the sandbox without root (bwrap); setpriv for the non-root sandbox test
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "[install_system_deps] all ${#PACKAGES[@]} system packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "[install_system_deps] installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

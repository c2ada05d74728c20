#!/usr/bin/env bash
# Renders the run report of the seed scenario (scenarios/csi-single-reader-count2.yaml)
# with headless Chromium (Debian's package) and writes docs/images/seed-timeline.png.
#
#   scripts/report-screenshot.sh           # regenerate docs/images/seed-timeline.png
#   scripts/report-screenshot.sh --check   # render to a temporary file and check it (CI)
#
# Chromium must open the page without errors (its log is checked) and the PNG
# must be a real image of a real size. Installs chromium with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=write
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

chromium_bin=""
for candidate in chromium chromium-browser; do
  if command -v "$candidate" >/dev/null 2>&1; then chromium_bin="$candidate"; break; fi
done
if [ -z "$chromium_bin" ]; then
  echo "report-screenshot: installing Debian's chromium package" >&2
  apt-get install -y chromium >/dev/null || { apt-get update >/dev/null && apt-get install -y chromium >/dev/null; }
  chromium_bin=chromium
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --release --locked -q
"${CARGO_TARGET_DIR:-target}/release/plansim" run scenarios/csi-single-reader-count2.yaml --report "$work/report" --quiet
page="$work/report/scenario-csi-single-reader-count2.html"
test -s "$page" || { echo "report-screenshot: the report page was not written" >&2; exit 1; }

if [ "$mode" = check ]; then png="$work/seed-timeline.png"; else png="docs/images/seed-timeline.png"; fi
mkdir -p "$(dirname "$png")"
rm -f "$png"

# The page needs no network and no script: both are switched off.
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-javascript --user-data-dir="$work/profile" --enable-logging=stderr --v=0)

# First the DOM Chromium built: it must be our page (an unreadable file
# gives Chromium's error page instead), with its three timelines.
"$chromium_bin" "${flags[@]}" --dump-dom "file://$page" >"$work/dom.html" 2>"$work/dom.log" || {
  cat "$work/dom.log" >&2; echo "report-screenshot: chromium failed to load the page" >&2; exit 1; }
for policy in naive validate plan-aware; do
  if ! grep -q "<figure class=\"policy\" id=\"policy-$policy\">" "$work/dom.html"; then
    echo "report-screenshot: chromium did not render the $policy timeline (see $page)" >&2
    exit 1
  fi
done

"$chromium_bin" "${flags[@]}" --hide-scrollbars --window-size=1060,1180 \
  --screenshot="$png" "file://$page" >"$work/chromium.log" 2>&1 || {
    cat "$work/chromium.log" >&2
    echo "report-screenshot: chromium failed" >&2
    exit 1
  }

# Page errors (a resource that failed, a console message) are logged as
# such; Chromium's own start-up noise (dbus, GPU) is not about the page.
if cat "$work/dom.log" "$work/chromium.log" | grep -E "ERROR|CONSOLE" | grep -E -i "file://|net::ERR|Failed to load|CONSOLE"; then
  echo "report-screenshot: chromium reported errors opening the page" >&2
  exit 1
fi

test -s "$png" || { echo "report-screenshot: chromium wrote no screenshot" >&2; exit 1; }
# A PNG signature, and more than a blank page's worth of bytes.
signature="$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')"
size="$(wc -c < "$png")"
if [ "$signature" != "89504e470d0a1a0a" ] || [ "$size" -lt 20000 ]; then
  echo "report-screenshot: $png is not a plausible screenshot ($size bytes, signature $signature)" >&2
  exit 1
fi
echo "report-screenshot: $png ($size bytes) rendered without errors"

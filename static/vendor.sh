#!/bin/sh
# vendor.sh refreshes the third-party front-end files in static/vendor/ from the
# npm registry and prints their sha256 sums for static/README.md.
#
# Usage: static/vendor.sh            (uses the pinned versions below)
#        HTMX_VERSION=2.0.12 static/vendor.sh
#
# Pin a major: htmx 4 is a rewrite, and app.js relies on uPlot 1.x's API.
set -eu

HTMX_VERSION="${HTMX_VERSION:-2.0.11}"
UPLOT_VERSION="${UPLOT_VERSION:-1.6.32}"

here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "htmx.org@$HTMX_VERSION" >/dev/null
npm pack --silent "uplot@$UPLOT_VERSION" >/dev/null

mkdir htmx uplot
tar -xzf "htmx.org-$HTMX_VERSION.tgz" -C htmx
tar -xzf "uplot-$UPLOT_VERSION.tgz" -C uplot

mkdir -p "$dest"
cp htmx/package/dist/htmx.min.js "$dest/htmx.min.js"
cp uplot/package/dist/uPlot.iife.min.js "$dest/uPlot.iife.min.js"
cp uplot/package/dist/uPlot.min.css "$dest/uPlot.min.css"
cp htmx/package/LICENSE "$dest/htmx.LICENSE"
cp uplot/package/LICENSE "$dest/uPlot.LICENSE"

echo "htmx.org $HTMX_VERSION, uplot $UPLOT_VERSION -> $dest"
cd "$dest"
sha256sum htmx.min.js uPlot.iife.min.js uPlot.min.css
echo "Update the table in static/README.md with the sums above."

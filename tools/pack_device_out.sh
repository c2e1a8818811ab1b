#!/usr/bin/env bash
# The device tool returns at most 8 files from $OUT: when a call wrote more than 7 besides its summary, every file
# but the summary goes into one archive (the files packed are removed only once the archive is written).
#   bash tools/pack_device_out.sh OUT SUMMARY_NAME ARCHIVE_NAME
set -u
OUT=${1:?usage: pack_device_out.sh OUT SUMMARY_NAME ARCHIVE_NAME}
KEEP=${2:?usage: pack_device_out.sh OUT SUMMARY_NAME ARCHIVE_NAME}
ARCHIVE=${3:?usage: pack_device_out.sh OUT SUMMARY_NAME ARCHIVE_NAME}
files=$(find "$OUT" -maxdepth 1 -type f ! -name "$KEEP" ! -name "$ARCHIVE" | wc -l)
[ "$files" -gt 7 ] || exit 0
cd "$OUT" || exit 1
find . -maxdepth 1 -type f ! -name "$KEEP" ! -name "$ARCHIVE" -printf '%P\n' | tar czf "$ARCHIVE" -T - || exit 1
find . -maxdepth 1 -type f ! -name "$KEEP" ! -name "$ARCHIVE" -delete
echo "($files files packed into $ARCHIVE)"

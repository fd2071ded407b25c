#!/usr/bin/env bash
# A full file system under checkpoint.dir (a 2 MiB tmpfs; skipped where
# mounting one is not allowed): the job ends with status 3 and one line that
# names the rank, the file and the cause ("No space left on device"), not
# only the file.
source "$(dirname "$0")/common.sh"
mkdir -p "$WORK/full"
if ! mount -t tmpfs -o size=2m tmpfs "$WORK/full" 2>/dev/null; then
  echo "disk_full: skipped: cannot mount a small tmpfs here (needs root or CAP_SYS_ADMIN)"
  exit "${MSD_SKIP_CODE:-77}"
fi
trap 'umount "$WORK/full" 2>/dev/null; rm -rf "$WORK"' EXIT
write_tiny_config "$WORK/job.ini"
sed -i 's/^steps = 8/steps = 60/' "$WORK/job.ini"
rc=0
TIMEOUT=60 run_job "$WORK/job.ini" --checkpoint.dir="$WORK/full" --checkpoint.trace="$WORK/trace.h5" \
  --checkpoint.loader_every=2 --checkpoint.snapshot_sources=images,books --checkpoint.keep=1000 \
  >"$WORK/full.out" 2>&1 || rc=$?
[ $rc = 3 ] || { echo "FAIL: exit status $rc on a full file system, expected 3"; grep -v "bad sample" "$WORK/full.out" | tail -20; exit 1; }
line=$(grep -m1 "fatal on world rank" "$WORK/full.out" || true)
echo "$line" | grep -q "$WORK/full/.*No space left on device" ||
  { echo "FAIL: the fatal line does not name the file and the cause: $line"; grep -v "bad sample" "$WORK/full.out" | tail -20; exit 1; }
echo "disk_full: status 3: $line"

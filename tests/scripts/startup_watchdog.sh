#!/usr/bin/env bash
# Start-up that never finishes: the last rank stops itself before msd-run
# starts (SIGSTOP, as a node that hangs at launch), so the others wait for it
# inside MPI_Init, where nothing inside MPI can time out. With
# job.startup_timeout_s = 1 every other rank's watchdog (armed before
# MPI_Init, 20 s beyond the bound) or, should MPI_Init not wait for it, the
# start-up agreement (10 s beyond) ends the job with status 3 and a line
# naming the rank and what it waited in.
source "$(dirname "$0")/common.sh"
write_tiny_config "$WORK/job.ini"
cat >"$WORK/stop_self.sh" <<'SH'
#!/usr/bin/env bash
kill -STOP $$
exec "$@"
SH
chmod +x "$WORK/stop_self.sh"
n=$("$MSD_RUN" --config "$WORK/job.ini" --print-world-size)
args=(--config "$WORK/job.ini" --job.startup_timeout_s=1)
start=$(now_s)
rc=0
# shellcheck disable=SC2086
timeout 90 $MSD_MPIEXEC -n $((n - 1)) "$MSD_RUN" "${args[@]}" : -n 1 "$WORK/stop_self.sh" "$MSD_RUN" "${args[@]}" \
  >"$WORK/out" 2>&1 || rc=$?
seconds=$(echo "$(now_s) - $start" | bc)
pkill -KILL -f "$WORK/stop_self.sh" 2>/dev/null || true
[ "$rc" != 124 ] || { echo "FAIL: the start-up hung (timeout's 124 is not an abort)"; tail -20 "$WORK/out"; exit 1; }
[ "$rc" = 3 ] || { echo "FAIL: exit status $rc, expected 3"; tail -20 "$WORK/out"; exit 1; }
line=$(grep -E "fatal on world rank -?[0-9]+: start-up (did not finish within 21 s \(waiting in MPI_Init\)|.*for the start-up agreement)" \
  "$WORK/out" | head -1) || { echo "FAIL: no start-up line"; tail -20 "$WORK/out"; exit 1; }
awk -v s="$seconds" 'BEGIN { exit !(s <= 40) }' || { echo "FAIL: it took ${seconds}s"; exit 1; }
echo "startup_watchdog: exit status 3 after ${seconds}s: $line"

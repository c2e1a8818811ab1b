# Sourced by the device scripts (tools/gpu_*.sh): one way to run a named step of a device call.
#   device_step KEY NAME LIMIT_S CMD...
# runs CMD when KEY is one of the comma-separated $STEPS, with its output in $OUT/NAME.log, and adds one line
# "== NAME: rc=RC, N s" to the file $summary (and prints it). At the limit the command gets SIGINT first, so pytest
# still prints its failures and short summary so far and Python its traceback; SIGKILL follows 20 s later. rc 124
# means the limit ended it.
device_step() {
  local key=$1 name=$2 limit=$3
  shift 3
  [[ ",$STEPS," == *",$key,"* ]] || return 0
  local t0=$SECONDS
  timeout -s INT -k 20 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc, $((SECONDS - t0)) s" | tee -a "$summary"
}

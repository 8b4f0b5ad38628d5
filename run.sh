#!/usr/bin/env bash
# run.sh — the harness's orchestrator. It injects the L0 runtime context, holds the per-feature
# lock, and sequences the role binaries, each of which re-derives its state from .harness/.
# Run `./run.sh help` for usage. Exit codes: see the README ("Exit codes").
set -euo pipefail

# The directory run.sh really is in, through every symlink to it (the `harness` command of
# `make install` is one): readlink without -f, which BSD and macOS have too.
script_home() {
  local path=${BASH_SOURCE[0]} target hops=0
  while [[ -L $path ]] && ((hops++ < 40)); do
    target=$(readlink "$path")
    [[ $target == /* ]] || target=$(dirname "$path")/$target
    path=$target
  done
  cd -P "$(dirname "$path")" && pwd
}

HARNESS_HOME=${HARNESS_HOME:-$(script_home)}
export HARNESS_HOME

readonly EXIT_USAGE=1
readonly EXIT_CONTINUE=10    # worker/validator: not done, iterations left: back to the worker
readonly EXIT_PROVISIONAL=11 # worker: the promise was delivered: run the validator

usage() {
  cat <<'USAGE'
Usage: ./run.sh [-C DIR] <command> [options]     (installed: harness [-C DIR] <command> [options])

Commands:
  init               create DIR/.harness/ (config.yaml, mission.md, features.yaml); never overwrites
  all                run every feature that is not done, in dependency order, each through the
                     worker and the validator; a feature whose dependency failed is blocked
  plan               run the planner on mission.md and merge its features into features.yaml
                     (never touching features that are done, started or edited by hand)
  replan <FEATURE>   re-break a failed feature into smaller ones (<FEATURE>.1, .2, ...)
  status             the status board: one line per feature and the mission's totals
  report             write .harness/report.html, the mission at a glance (also written at the end
                     of every run)
  curate             one curator pass over the mission's memory (--dry-run, --json, --agent)
  explain <FEATURE>  print the exact prompt the next invocation would get (--role worker|validator),
                     with the estimated tokens of each layer; runs nothing
  <FEATURE>          run the Ralph loop on one feature (e.g. F-001): worker iterations until the
                     agent delivers the promise, then the validator (unless validate: false);
                     a rejection goes back to the worker. Stops when the feature is done or a
                     guardrail stops it; resumes where an earlier run stopped
  help               show this help, and where the install and the identity directory are

Options (before or after the command):
  -C, --workdir DIR  the project to work on (default: the current directory)
  --max-iterations N set the feature's iteration guardrail (continues a feature that reached it)
  --parallel N       with `all`: up to N independent features at once, each in its own git
                     worktree (.harness/worktrees/<FEATURE>, branch harness/<FEATURE>), merged
                     back when accepted; needs git; agents' output then stays in output.log
  --executor KIND    with `all`: where the features run: local (this machine, the default) or
                     slurm (one Slurm job per feature; then --parallel defaults to every ready
                     feature); overrides config.yaml's executor.kind
  --json             with `status` or `curate`: print JSON for scripts
  --dry-run          with `curate`: say what the pass would do, write nothing
  --agent            with `curate`: let the curator's agent reword summary.md (checked)
  --worktree         run the feature in its own git worktree (what `all --parallel` does)
  -q, --quiet        do not copy the agent's output to the terminal (it still goes to output.log)
  -h, --help         show this help
  --version          print the version and the commit it was built from

Exit codes: 0 done (for `all`: every feature done); 1 usage, configuration or input error, or a
rejected plan; 2 stopped by a guardrail (max_iterations); 3 blocked, unmerged (accepted, its merge
refused by git) or failed for good (for `all`: some feature is not done); 74 the disk is full (or a
file-size limit was reached): nothing was half-written, run again once there is room; 75 the
feature (or a planner) is already being run; 130 interrupted.

Environment: HARNESS_HOME (the harness install; default: the directory of this script, symlinks
followed), HARNESS_BIN_DIR (where the binaries are; default: HARNESS_HOME/target/release or debug
in a checkout, HARNESS_HOME/bin when installed), HARNESS_IDENTITY_DIR (the identity files; default:
HARNESS_HOME/identity in a checkout, $XDG_DATA_HOME/harness/identity when installed).
USAGE
}

# `help`: the usage, then this harness's version, install and identity directory as the binaries
# see them (without building them: help must work before the first build).
cmd_help() {
  usage
  printf '\n'
  if locate_binaries; then
    "$WORKER" about
  else
    printf 'install:  %s (not built yet: make build there)\n' "$HARNESS_HOME"
  fi
}

die() {
  printf 'run.sh: error: %s\n' "$1" >&2
  if [[ -n ${2:-} ]]; then
    printf 'hint: %s\n' "$2" >&2
  fi
  exit "$EXIT_USAGE"
}

# Sets BIN_DIR, WORKER, VALIDATOR, PLANNER and CURATOR to the binaries in directory $1.
use_binaries() {
  BIN_DIR=$1
  WORKER=$BIN_DIR/worker
  VALIDATOR=$BIN_DIR/validator
  PLANNER=$BIN_DIR/planner
  CURATOR=$BIN_DIR/curator
}

# Uses the role binaries where they are (HARNESS_BIN_DIR when set; else a checkout's release or
# debug build, or an install's bin/); fails if there are none.
locate_binaries() {
  local -a dirs=("$HARNESS_HOME/target/release" "$HARNESS_HOME/target/debug" "$HARNESS_HOME/bin")
  [[ -z ${HARNESS_BIN_DIR:-} ]] || dirs=("$HARNESS_BIN_DIR")
  local dir
  for dir in "${dirs[@]}"; do
    if [[ -x $dir/worker ]]; then
      use_binaries "$dir"
      return 0
    fi
  done
  return 1
}

# Uses the role binaries, building them in a checkout on first use.
find_binaries() {
  if locate_binaries; then
    :
  elif [[ -n ${HARNESS_BIN_DIR:-} ]]; then
    use_binaries "$HARNESS_BIN_DIR"
  elif [[ -f $HARNESS_HOME/Cargo.toml ]] && command -v cargo >/dev/null; then
    printf 'run.sh: building the harness (first run)...\n' >&2
    cargo build --release --quiet --manifest-path "$HARNESS_HOME/Cargo.toml" >&2 ||
      die "the build failed" "run \`make build\` in $HARNESS_HOME to see why"
    use_binaries "$HARNESS_HOME/target/release"
  else
    die "the harness binaries are not built" "run \`make build\` in $HARNESS_HOME, or set HARNESS_BIN_DIR"
  fi
  local binary
  for binary in worker validator planner curator; do
    [[ -x $BIN_DIR/$binary ]] || die "no $binary binary in $BIN_DIR" "run \`make build\`, or fix HARNESS_BIN_DIR"
  done
}

# The role binary or run.sh now running on our behalf (the worker, the validator, the planner
# and the curator always run so), to pass an interrupt on to.
CHILDREN=()
INTERRUPTED=''
LAST_SIGNAL=''
SIGNALS_RECEIVED=0

# Ctrl-C (SIGINT) or SIGTERM on run.sh reaches the running children as the same signal: they
# stop their agents, leave the state resumable and say which signal stopped them. Children
# started in the background have SIGINT ignored, but every child is a role binary, which blocks
# SIGINT and takes it with sigwait: a blocked signal is queued even while ignored.
forward_interrupt() {
  local signal=$1 pid
  INTERRUPTED=1
  LAST_SIGNAL=$signal
  SIGNALS_RECEIVED=$((SIGNALS_RECEIVED + 1))
  for pid in ${CHILDREN[@]+"${CHILDREN[@]}"}; do
    kill -s "$signal" "$pid" 2>/dev/null || true
  done
}
trap 'forward_interrupt INT' INT
trap 'forward_interrupt TERM' TERM

# Runs a command as a child that forward_interrupt can reach; returns its exit status. The child
# gets no descriptor 9 (the feature's lock, which no agent may inherit) unless LOCK_FD=9 is set
# for it.
run_child() {
  local pid rc='' status signals=$SIGNALS_RECEIVED
  if [[ ${LOCK_FD:-} == 9 ]]; then
    "$@" &
  else
    "$@" 9>&- &
  fi
  pid=$!
  CHILDREN=("$pid")
  # A signal that came after the child started but before it was listed was not passed on.
  if [[ $signals -ne $SIGNALS_RECEIVED ]]; then
    kill -s "$LAST_SIGNAL" "$pid" 2>/dev/null || true
  fi
  # `wait` returns early (128 + the signal) when a trapped signal arrives, whether the child
  # goes on or has just ended (bash then keeps its status for the next `wait`): wait again until
  # a `wait` ran with no signal in between. 127 after an early return: the status was taken.
  while :; do
    signals=$SIGNALS_RECEIVED
    status=0
    wait "$pid" || status=$?
    [[ $status -eq 127 && -n $rc ]] && break
    rc=$status
    [[ $signals -eq $SIGNALS_RECEIVED ]] && break
  done
  CHILDREN=()
  return "$rc"
}

# At the end of every run that may have changed the state, .harness/report.html is written anew.
# A failure to write it (a broken config, say) never changes the run's exit status.
report_on_exit() {
  local status=$?
  trap - EXIT
  # An input error (1), a full disk (74: the report would not fit either) or a feature run by
  # someone else (75) changed nothing: neither does this.
  [[ $status -ne 1 && $status -ne 74 && $status -ne 75 ]] || return 0
  [[ -n ${PLANNER:-} && -d $STATE_DIR ]] || return 0
  "$PLANNER" report -C "$WORKDIR" >/dev/null 2>&1 ||
    printf 'run.sh: warning: could not write .harness/report.html (./run.sh report shows why)\n' >&2
}

cmd_init() {
  find_binaries
  "$WORKER" init -C "$WORKDIR"
}

# The Ralph loop on one feature, under the feature's lock: the worker's iterations, and the
# validator whenever one delivers the promise.
cmd_feature() {
  local feature=$1 rc
  find_binaries
  # The worker refuses an id that is not a feature id before it becomes part of a path here.
  local lock_file
  lock_file=$("$WORKER" lock-file -C "$WORKDIR" --feature="$feature") || exit $?
  # The lock lives as long as this shell holds descriptor 9. Without a state directory there is
  # nothing to lock, and the worker says what to do.
  local lock_fd=''
  if [[ -d $STATE_DIR ]]; then
    local problem
    problem=$(mkdir -p "${lock_file%/*}" 2>&1) ||
      die "${problem#mkdir: }" "the state directory must be writable by you"
    if ! { exec 9>>"$lock_file"; } 2>/dev/null; then
      die "cannot open $lock_file: permission denied or not a file" \
        "the state directory must be writable by you"
    fi
    lock_fd=9
  fi
  export HARNESS_FEATURE_LOCK_PID=$$
  # The roles are given the project; where the agents work — the project, or the feature's own
  # git worktree (made with --worktree, and kept to once it exists) — is theirs to decide.
  export HARNESS_WORKDIR=$WORKDIR HARNESS_STATE_DIR=$STATE_DIR HARNESS_FEATURE_ID=$feature

  local -a flags=()
  [[ -n $MAX_ITERATIONS ]] && flags+=(--max-iterations "$MAX_ITERATIONS")
  [[ -n $QUIET ]] && flags+=(--quiet)
  # The worker runs iteration after iteration itself (--loop: one process, not one per
  # iteration), and returns here for the validator or to stop. The first one checks every input
  # before anything changes (config, features, the agent commands: parsed once, for its
  # iterations too), then takes the feature's lock for this shell on descriptor 9 (the only
  # child that gets it) and makes the worktree. Each role names its own runs (HARNESS_RUN_ID in
  # their agents' environment); one from our caller must not reach them.
  unset HARNESS_RUN_ID
  local first=1
  while :; do
    rc=0
    if [[ -n $first ]]; then
      first=''
      LOCK_FD=$lock_fd run_child "$WORKER" --loop --feature="$feature" -C "$WORKDIR" \
        --state-dir "$STATE_DIR" ${lock_fd:+--lock-fd "$lock_fd"} ${WORKTREE:+--worktree} \
        ${flags[@]+"${flags[@]}"} || rc=$?
    else
      run_child "$WORKER" --loop --feature="$feature" -C "$WORKDIR" --state-dir "$STATE_DIR" \
        ${flags[@]+"${flags[@]}"} || rc=$?
    fi
    if [[ $rc -eq $EXIT_PROVISIONAL ]]; then
      rc=0
      run_child "$VALIDATOR" --feature "$feature" -C "$WORKDIR" --state-dir "$STATE_DIR" \
        ${QUIET:+--quiet} || rc=$?
    fi
    [[ $rc -eq $EXIT_CONTINUE ]] || break
  done
  exit "$rc"
}

# Every feature that is not done, in dependency order, each through `run.sh <FEATURE>` (its own
# process and lock): the planner's coordinator hands them to the executor — processes here, or
# jobs of a Slurm cluster — and blocks the dependents of a failed one. The exit status is the
# mission's.
cmd_all() {
  find_binaries
  local -a flags=()
  [[ -n $PARALLEL ]] && flags+=(--parallel "$PARALLEL")
  [[ -n $EXECUTOR ]] && flags+=(--executor "$EXECUTOR")
  [[ -n $MAX_ITERATIONS ]] && flags+=(--max-iterations "$MAX_ITERATIONS")
  [[ -n $QUIET ]] && flags+=(--quiet)
  # Each feature runs this very script, by its real path (on a cluster, the shared one).
  local self
  self=$(script_home)/run.sh
  run_child "$PLANNER" mission -C "$WORKDIR" --run-sh "$self" ${flags[@]+"${flags[@]}"}
}

main() {
  WORKDIR=. MAX_ITERATIONS='' QUIET='' WORKTREE='' PARALLEL='' EXECUTOR='' JSON='' ROLE='' DRY_RUN=''
  AGENT=''
  local -a positional=()
  while [[ $# -gt 0 ]]; do
    case $1 in
      -C | --workdir)
        [[ $# -ge 2 ]] || die "$1 needs a directory"
        WORKDIR=$2
        shift 2
        ;;
      --workdir=*) WORKDIR=${1#*=}; shift ;;
      --max-iterations)
        [[ $# -ge 2 ]] || die "--max-iterations needs a number"
        MAX_ITERATIONS=$2
        shift 2
        ;;
      --max-iterations=*) MAX_ITERATIONS=${1#*=}; shift ;;
      -q | --quiet) QUIET=1; shift ;;
      --worktree) WORKTREE=1; shift ;;
      --json) JSON=1; shift ;;
      --dry-run) DRY_RUN=1; shift ;;
      --agent) AGENT=1; shift ;;
      --role)
        [[ $# -ge 2 ]] || die "--role needs worker or validator"
        ROLE=$2
        shift 2
        ;;
      --parallel)
        [[ $# -ge 2 ]] || die "--parallel needs a number"
        PARALLEL=$2
        shift 2
        ;;
      --parallel=*) PARALLEL=${1#*=}; shift ;;
      --executor)
        [[ $# -ge 2 ]] || die "--executor needs local or slurm"
        EXECUTOR=$2
        shift 2
        ;;
      --executor=*) EXECUTOR=${1#*=}; shift ;;
      -h | --help) cmd_help; exit 0 ;;
      --version) find_binaries; exec "$WORKER" about --version ;;
      --) shift; positional+=("$@"); break ;;
      -*) die "unknown option $1" "see \`./run.sh help\`" ;;
      *) positional+=("$1"); shift ;;
    esac
  done
  if [[ -n $MAX_ITERATIONS && ! $MAX_ITERATIONS =~ ^[1-9][0-9]*$ ]]; then
    die "--max-iterations needs a whole number of at least 1, not '$MAX_ITERATIONS'"
  fi
  if [[ -n $PARALLEL && ! $PARALLEL =~ ^[1-9][0-9]*$ ]]; then
    die "--parallel needs a whole number of at least 1, not '$PARALLEL'"
  fi
  [[ -d $WORKDIR ]] || die "$WORKDIR: no such directory"
  WORKDIR=$(cd "$WORKDIR" && pwd)
  STATE_DIR=$WORKDIR/.harness

  local command=${positional[0]:-help}
  case $command in
    help | init | status | explain | report) ;;
    *) trap report_on_exit EXIT ;; # a feature, all, plan, replan, curate
  esac
  case $command in
    help) cmd_help ;;
    init) [[ ${#positional[@]} -eq 1 ]] || die "init takes no argument"; cmd_init ;;
    all) [[ ${#positional[@]} -eq 1 ]] || die "all takes no argument"; cmd_all ;;
    plan)
      [[ ${#positional[@]} -eq 1 ]] || die "plan takes no argument"
      find_binaries
      run_child "$PLANNER" plan -C "$WORKDIR" ${QUIET:+--quiet}
      ;;
    replan)
      [[ ${#positional[@]} -eq 2 ]] || die "replan needs one feature: ./run.sh replan <FEATURE>"
      find_binaries
      run_child "$PLANNER" replan -C "$WORKDIR" ${QUIET:+--quiet} -- "${positional[1]}"
      ;;
    status)
      [[ ${#positional[@]} -eq 1 ]] || die "status takes no argument"
      find_binaries
      "$PLANNER" status -C "$WORKDIR" ${JSON:+--json}
      ;;
    explain)
      [[ ${#positional[@]} -eq 2 ]] || die "explain needs one feature: ./run.sh explain <FEATURE> [--role worker|validator]"
      find_binaries
      "$WORKER" explain -C "$WORKDIR" --feature="${positional[1]}" --role "${ROLE:-worker}"
      ;;
    curate)
      [[ ${#positional[@]} -eq 1 ]] || die "curate takes no argument"
      find_binaries
      run_child "$CURATOR" -C "$WORKDIR" ${QUIET:+--quiet} ${JSON:+--json} ${DRY_RUN:+--dry-run} ${AGENT:+--agent}
      ;;
    report)
      [[ ${#positional[@]} -eq 1 ]] || die "report takes no argument"
      find_binaries
      "$PLANNER" report -C "$WORKDIR"
      ;;
    *)
      [[ ${#positional[@]} -eq 1 ]] || die "one feature at a time: ${positional[*]}"
      cmd_feature "$command"
      ;;
  esac
}

main "$@"

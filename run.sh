#!/usr/bin/env bash
# run.sh — the harness's orchestrator. It injects the L0 runtime context, holds the per-feature
# lock, and sequences the role binaries, each of which re-derives its state from .harness/.
# Run `./run.sh help` for usage. Exit codes: see the README ("Exit codes").
set -euo pipefail

HARNESS_HOME=${HARNESS_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export HARNESS_HOME

readonly EXIT_USAGE=1
readonly EXIT_CONTINUE=10 # worker: iteration over, not done, iterations left

usage() {
  cat <<'USAGE'
Usage: ./run.sh [-C DIR] <command> [options]

Commands:
  init               create DIR/.harness/ (config.yaml, mission.md, features.yaml); never overwrites
  <FEATURE>          run the Ralph loop on one feature (e.g. F-001) until it is done or a guardrail
                     stops it; resumes where an earlier run stopped
  help               show this help

Options (before or after the command):
  -C, --workdir DIR  the project to work on (default: the current directory)
  --max-iterations N set the feature's iteration guardrail (continues a feature that reached it)
  -q, --quiet        do not copy the agent's output to the terminal (it still goes to output.log)
  -h, --help         show this help

Coming with later versions: all, plan, replan, curate, status, explain, report.

Exit codes: 0 done; 1 usage, configuration or input error; 2 stopped by a guardrail
(max_iterations); 3 blocked or failed for good; 75 the feature is already being run; 130 interrupted.

Environment: HARNESS_HOME (the harness install; default: this script's directory),
HARNESS_BIN_DIR (where the binaries are; default: built into HARNESS_HOME/target),
HARNESS_IDENTITY_DIR (the identity files; default: HARNESS_HOME/identity).
USAGE
}

die() {
  printf 'run.sh: error: %s\n' "$1" >&2
  if [[ -n ${2:-} ]]; then
    printf 'hint: %s\n' "$2" >&2
  fi
  exit "$EXIT_USAGE"
}

# Sets BIN_DIR to where the role binaries are, building them on first use.
find_binaries() {
  if [[ -n ${HARNESS_BIN_DIR:-} ]]; then
    BIN_DIR=$HARNESS_BIN_DIR
  elif [[ -x $HARNESS_HOME/target/release/worker ]]; then
    BIN_DIR=$HARNESS_HOME/target/release
  elif [[ -x $HARNESS_HOME/target/debug/worker ]]; then
    BIN_DIR=$HARNESS_HOME/target/debug
  elif [[ -f $HARNESS_HOME/Cargo.toml ]] && command -v cargo >/dev/null; then
    printf 'run.sh: building the harness (first run)...\n' >&2
    cargo build --release --quiet --manifest-path "$HARNESS_HOME/Cargo.toml" >&2 ||
      die "the build failed" "run \`make build\` in $HARNESS_HOME to see why"
    BIN_DIR=$HARNESS_HOME/target/release
  else
    die "the harness binaries are not built" "run \`make build\` in $HARNESS_HOME, or set HARNESS_BIN_DIR"
  fi
  [[ -x $BIN_DIR/worker ]] || die "no worker binary in $BIN_DIR" "run \`make build\`, or fix HARNESS_BIN_DIR"
  WORKER=$BIN_DIR/worker
}

# Sets RUN_ID to `<unix-time>-<role>-<FEATURE>`, suffixed -2, -3… if that run exists already.
next_run_id() {
  local role=$1 feature=$2 base n=2
  base="${EPOCHSECONDS:-$(date +%s)}-$role-$feature"
  RUN_ID=$base
  while [[ -e $STATE_DIR/runs/$feature/$RUN_ID ]]; do
    RUN_ID=$base-$n
    n=$((n + 1))
  done
}

cmd_init() {
  find_binaries
  "$WORKER" init -C "$WORKDIR"
}

# The Ralph loop on one feature: one worker invocation per iteration, under the feature's lock.
cmd_feature() {
  local feature=$1 rc
  find_binaries
  # Every input error (config, features, id, agent command) surfaces before anything changes.
  "$WORKER" check -C "$WORKDIR" --feature "$feature" || exit $?

  mkdir -p "$STATE_DIR/locks"
  # The lock lives as long as this shell holds descriptor 9; it is closed for the worker, so no
  # agent can inherit it and outlive us holding it.
  exec 9>>"$STATE_DIR/locks/$feature.lock"
  "$WORKER" lock -C "$WORKDIR" --feature "$feature" --fd 9 || exit $?
  export HARNESS_FEATURE_LOCK_PID=$$
  export HARNESS_WORKDIR=$WORKDIR HARNESS_STATE_DIR=$STATE_DIR HARNESS_FEATURE_ID=$feature

  local -a flags=()
  [[ -n $MAX_ITERATIONS ]] && flags+=(--max-iterations "$MAX_ITERATIONS")
  [[ -n $QUIET ]] && flags+=(--quiet)
  while :; do
    next_run_id worker "$feature"
    export HARNESS_RUN_ID=$RUN_ID
    rc=0
    "$WORKER" --feature "$feature" -C "$WORKDIR" --run-id "$RUN_ID" ${flags[@]+"${flags[@]}"} 9>&- || rc=$?
    [[ $rc -eq $EXIT_CONTINUE ]] || break
  done
  exit "$rc"
}

main() {
  WORKDIR=. MAX_ITERATIONS='' QUIET=''
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
      -h | --help) usage; exit 0 ;;
      --) shift; positional+=("$@"); break ;;
      -*) die "unknown option $1" "see \`./run.sh help\`" ;;
      *) positional+=("$1"); shift ;;
    esac
  done
  if [[ -n $MAX_ITERATIONS && ! $MAX_ITERATIONS =~ ^[1-9][0-9]*$ ]]; then
    die "--max-iterations needs a whole number of at least 1, not '$MAX_ITERATIONS'"
  fi
  [[ -d $WORKDIR ]] || die "$WORKDIR: no such directory"
  WORKDIR=$(cd "$WORKDIR" && pwd)
  STATE_DIR=$WORKDIR/.harness

  local command=${positional[0]:-help}
  case $command in
    help) usage ;;
    init) [[ ${#positional[@]} -eq 1 ]] || die "init takes no argument"; cmd_init ;;
    all | plan | replan | curate | status | explain | report)
      die "'$command' is not available in this version of the harness" "run one feature with \`./run.sh <FEATURE>\`"
      ;;
    *)
      [[ ${#positional[@]} -eq 1 ]] || die "one feature at a time: ${positional[*]}"
      # Checked here too: the id becomes part of a lock file's path below.
      if [[ ! $command =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$ || $command == *..* ]]; then
        die "invalid feature id '$command': use letters, digits, '-', '_' and '.' (no '..', no '/')"
      fi
      cmd_feature "$command"
      ;;
  esac
}

main "$@"

#!/usr/bin/env bash
# The demo of `make demo`: a three-feature mission run end to end by the harness, with the scripted
# agent standing in for the model. Everything happens in a new temporary directory; nothing is
# written into the repository.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${HARNESS_BIN_DIR:-$REPO/target/release}
FEATURES=(F-001 F-002 F-003)

usage() {
  cat <<'USAGE'
Usage: examples/demo.sh [--clean]

Runs the demo mission (examples/demo/) in a new temporary directory with the scripted agent,
then prints what happened. --clean removes the directory at the end instead of keeping it.
Build first: `make build` (or just run `make demo`); HARNESS_BIN_DIR picks other binaries.
USAGE
}

# A project in a fresh temp dir: a git repository, `run.sh init`, the demo's features and config.
setup() {
  DEMO=$(mktemp -d "${TMPDIR:-/tmp}/harness-demo.XXXXXX")
  PROJECT=$DEMO/greeting-cli
  mkdir -p "$PROJECT" "$DEMO/identity"
  export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid
  export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.invalid
  export HARNESS_IDENTITY_DIR=$DEMO/identity HARNESS_BIN_DIR=$BIN_DIR
  git -C "$PROJECT" init -q
  git -C "$PROJECT" commit -q --allow-empty -m "empty project"
  "$REPO/run.sh" -C "$PROJECT" init >/dev/null
  cp "$REPO/examples/demo/features.yaml" "$PROJECT/.harness/features.yaml"
  cp "$REPO/examples/demo/scenario.yaml" "$DEMO/scenario.yaml"
  printf '# Mission\n\nA tiny greeting CLI in shell: greet.sh greets the world or a name, with --help.\n' \
    >"$PROJECT/.harness/mission.md"
  cat >"$PROJECT/.harness/config.yaml" <<CONFIG
# The demo's agent is the scripted agent; a real project names claude, codex, ... here.
agent:
  command: ["$HARNESS_BIN_DIR/scripted-agent", "--scenario", "$DEMO/scenario.yaml", "--state-dir", "$DEMO/agent-state"]
  prompt_via: stdin
  timeout_secs: 60
max_iterations: 5
completion_promise: TASK_COMPLETE
CONFIG
}

run_mission() {
  local feature
  for feature in "${FEATURES[@]}"; do
    printf '\n== ./run.sh %s\n' "$feature"
    "$REPO/run.sh" -C "$PROJECT" --quiet "$feature"
  done
}

# A field of a pretty-printed state.json, e.g. `"status": "done"` -> done.
state_field() {
  sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$PROJECT/.harness/runs/$1/state.json"
}

summarise() {
  local feature commits all_done=1
  printf '\n== What happened\n\n'
  for feature in "${FEATURES[@]}"; do
    commits=$(sed -n 's/^ *"commits": \([0-9]*\),$/\1/p' "$PROJECT/.harness/runs/$feature/state.json" |
      awk '{ n += $1 } END { print n + 0 }')
    printf '  %s  %-5s  %s of %s iterations  %s commits\n' "$feature" \
      "$(state_field "$feature" status)" "$(state_field "$feature" iteration_count)" \
      "$(state_field "$feature" max_iterations)" "$commits"
    [[ $(state_field "$feature" status) == done ]] || all_done=0
  done
  printf '\n== Memory the agents left (.harness/raw.md)\n\n'
  grep -E '\] [a-z]+ [^ ]+ (TRICK|LESSON|DECISION|AVOID|FAIL):' "$PROJECT/.harness/raw.md" | sed 's/^/  /'
  printf '\n== The project'"'"'s git log\n\n'
  git -C "$PROJECT" log --oneline | sed 's/^/  /'
  printf '\n== Where to look\n\n'
  printf '  project:        %s\n' "$PROJECT"
  printf '  each prompt:    %s/.harness/runs/<FEATURE>/<RUN_ID>/prompt.md (and output.log, result.json)\n' "$PROJECT"
  printf '  run state:      %s/.harness/runs/<FEATURE>/state.json\n' "$PROJECT"
  printf '  memory log:     %s/.harness/raw.md\n' "$PROJECT"
  [[ $all_done -eq 1 ]]
}

main() {
  local clean=0
  case ${1:-} in
    -h | --help) usage; return 0 ;;
    --clean) clean=1 ;;
    '') ;;
    *) usage >&2; return 1 ;;
  esac
  [[ -x $BIN_DIR/scripted-agent ]] ||
    { printf 'demo: build first: make build\n' >&2; return 1; }
  setup
  local status=0
  run_mission && summarise || status=$?
  if [[ $clean -eq 1 ]]; then
    rm -rf "$DEMO"
  fi
  if [[ $status -eq 0 ]]; then
    printf '\nThe mission is done: every feature was delivered and recorded.\n'
  else
    printf '\nThe demo failed (exit %s); its files are in %s\n' "$status" "$DEMO" >&2
  fi
  return "$status"
}

main "$@"

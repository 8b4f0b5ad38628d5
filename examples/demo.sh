#!/usr/bin/env bash
# The demo of `make demo`: a three-feature mission run end to end by the harness, with the
# scripted agent standing in for the model. Everything happens in a new temporary directory;
# nothing is written into the repository. Progress goes to stderr, the summary to stdout.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly REPO
# The binaries: the release build, unless HARNESS_BIN_DIR names others (the tests use the debug one).
BIN_DIR=${HARNESS_BIN_DIR:-$REPO/target/release}
readonly BIN_DIR
readonly DEMO_SOURCES=$REPO/examples/demo
readonly FEATURES=(F-001 F-002 F-003) # in dependency order
# Exit codes of the scripted agent that mean the scenario did not play as written.
readonly SCENARIO_ERRORS='2|96|97|98'

usage() {
  cat <<'USAGE'
Usage: examples/demo.sh [--clean]

Runs the demo mission of examples/demo/ (a tiny greeting CLI, three features) with the scripted
agent standing in for the model: a new project in a temporary directory, `run.sh init`, then
`run.sh F-001`, `F-002` and `F-003`. Prints what happened and where to look; the directory is
kept so that you can read every prompt, output and state file.

Options:
  --clean     remove the temporary directory at the end instead of keeping it
  -h, --help  show this help

Build first: `make build` (or run `make demo`, which does both).
Exit status: 0 when every feature ended done, 1 otherwise.
USAGE
}

die() {
  printf 'demo: error: %s\n' "$1" >&2
  if [[ -n ${2:-} ]]; then
    printf 'hint: %s\n' "$2" >&2
  fi
  exit 1
}

check_prerequisites() {
  local binary
  for binary in worker scripted-agent; do
    [[ -x $BIN_DIR/$binary ]] ||
      die "$BIN_DIR/$binary is not built" "run \`make build\`, or just \`make demo\`"
  done
  command -v git >/dev/null || die "git is not installed" "the demo's project is a git repository"
}

# A new project in a new temp dir: `run.sh init`, the demo's mission, features and a config whose
# agent is the scripted agent, all in the first commit of a new git repository.
setup() {
  DEMO=$(mktemp -d "${TMPDIR:-/tmp}/harness-demo.XXXXXX")
  PROJECT=$DEMO/greeting-cli
  mkdir -p "$PROJECT" "$DEMO/identity"

  # Nothing from the user's git config (hooks, signing, identity) changes what the demo does.
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
  export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid
  export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.invalid
  # The identity files and the binaries: never the repository's own identity/, never a build.
  export HARNESS_IDENTITY_DIR=$DEMO/identity HARNESS_BIN_DIR=$BIN_DIR

  git -C "$PROJECT" -c init.defaultBranch=main init -q
  "$REPO/run.sh" -C "$PROJECT" init >/dev/null
  cp "$DEMO_SOURCES/features.yaml" "$PROJECT/.harness/features.yaml"
  cp "$DEMO_SOURCES/scenario.yaml" "$DEMO/scenario.yaml"
  write_mission
  write_config
  git -C "$PROJECT" add -A
  git -C "$PROJECT" commit -q -m "A new project: the mission and features for the harness"
}

write_mission() {
  cat >"$PROJECT/.harness/mission.md" <<'MISSION'
# Mission

A tiny greeting CLI in POSIX shell: `greet.sh` greets the world, or the name it is given, and
explains itself with `--help`; `test.sh` checks it. Done means every feature of features.yaml is
done and `sh test.sh` prints ok.
MISSION
}

write_config() {
  cat >"$PROJECT/.harness/config.yaml" <<CONFIG
# The demo's agent is the scripted agent, which plays $DEMO/scenario.yaml.
# A real project names claude, codex, ... here (see the template of \`./run.sh init\`).
agent:
  command: ["$HARNESS_BIN_DIR/scripted-agent", "--scenario", "$DEMO/scenario.yaml", "--state-dir", "$DEMO/agent-state"]
  prompt_via: stdin
  output_format: text
  timeout_secs: 60
  kill_grace_secs: 5
max_iterations: 5
completion_promise: TASK_COMPLETE
CONFIG
}

# Runs the features in dependency order; stops at the first that does not end done.
run_mission() {
  local feature rc
  for feature in "${FEATURES[@]}"; do
    printf '\n== ./run.sh -C %s --quiet %s\n' "$PROJECT" "$feature" >&2
    rc=0
    "$REPO/run.sh" -C "$PROJECT" --quiet "$feature" || rc=$?
    if [[ $rc -ne 0 ]]; then
      printf 'demo: ./run.sh %s exited %s: not done, so the demo stops here\n' "$feature" "$rc" >&2
      return 1
    fi
  done
  printf '\n' >&2
}

state_file() {
  printf '%s/.harness/runs/%s/state.json' "$PROJECT" "$1"
}

# A top-level field of a feature's state.json (pretty-printed): `"status": "done",` -> done.
state_field() {
  local file
  file=$(state_file "$1")
  [[ -f $file ]] || return 0
  sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$file"
}

# The `run_id` and `commits` fields of the feature's attempts, one `<field> <value>` a line, oldest
# first: most attempts are in attempts.jsonl (one JSON record a line), the newest in state.json
# (pretty-printed); an attempt may be in both.
attempt_fields() {
  local dir="$PROJECT/.harness/runs/$1"
  cat "$dir/attempts.jsonl" "$dir/state.json" 2>/dev/null | tr ',' '\n' |
    sed -n 's/^ *{\{0,1\} *"\(run_id\|commits\)": *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1 \2/p'
}

# The commits of all the feature's attempts (each attempt counted once).
commit_count() {
  attempt_fields "$1" |
    awk '$1 == "run_id" { id = $2 } $1 == "commits" { n[id] = $2 } END { for (i in n) t += n[i]; print t + 0 }'
}

# The run id of the feature's last attempt.
last_run_id() {
  attempt_fields "$1" | sed -n 's/^run_id //p' | tail -n 1
}

# Prints the table of features; fails unless every feature is done.
print_features() {
  local feature status iterations all_done=0
  printf '== The features (.harness/runs/<FEATURE>/state.json)\n\n'
  printf '  %-7s %-9s %-12s %s\n' feature status iterations commits
  for feature in "${FEATURES[@]}"; do
    status=$(state_field "$feature" status)
    iterations="$(state_field "$feature" iteration_count) of $(state_field "$feature" max_iterations)"
    [[ -n $status ]] || { status='not run'; iterations='-'; }
    printf '  %-7s %-9s %-12s %s\n' "$feature" "$status" "$iterations" "$(commit_count "$feature")"
    [[ $status == done ]] || all_done=1
  done
  return "$all_done"
}

print_memory() {
  printf '\n== The memory the agents left (.harness/raw.md)\n\n'
  grep -E '^\[[^]]*\] [a-z]+ [^ ]+ (TRICK|LESSON|DECISION|AVOID|FAIL):' "$PROJECT/.harness/raw.md" |
    sed 's/^/  /' || printf '  (none)\n'
}

print_git_log() {
  printf "\n== The project's git log\n\n"
  git -C "$PROJECT" log --format='%h %<(15)%an %s' | sed 's/^/  /'
  if [[ -z $(git -C "$PROJECT" status --porcelain) ]]; then
    printf '  (working tree clean: every change is committed)\n'
  else
    printf '  (uncommitted changes:)\n'
    git -C "$PROJECT" status --short | sed 's/^/    /'
  fi
}

# Runs what the agents delivered, as a user would.
print_result() {
  local -a command
  local line
  printf '\n== What was delivered (run in the project)\n\n'
  for line in 'sh greet.sh' 'sh greet.sh Ada' 'sh greet.sh --help' 'sh test.sh'; do
    read -r -a command <<<"$line"
    printf '  $ %-20s -> %s\n' "$line" "$(cd "$PROJECT" && "${command[@]}" 2>&1 || printf '(exit %s)' "$?")"
  done
}

print_where_to_look() {
  local example
  example=$(last_run_id F-002)
  printf '\n== Where to look\n\n'
  printf '  project:    %s\n' "$PROJECT"
  printf '  per iteration, in .harness/runs/<FEATURE>/<RUN_ID>/:\n'
  printf '              prompt.md (exactly what the agent was sent), output.log, result.json\n'
  printf '  run state:  .harness/runs/<FEATURE>/state.json (status) and attempts.jsonl (one record per attempt)\n'
  printf '  memory:     .harness/raw.md (the agents'"'"' TRICK/LESSON/... lines and each outcome)\n'
  printf '  scenario:   %s/scenario.yaml (what the scripted agent played)\n' "$DEMO"
  if [[ -n $example ]]; then
    printf '  e.g.        less %s/.harness/runs/F-002/%s/prompt.md\n' "$PROJECT" "$example"
    printf '              (F-002'"'"'s last prompt, with the notes of its earlier attempts)\n'
  fi
}

# Fails if the scripted agent met a prompt it did not expect, or ran out of steps: the harness
# did not inject what the scenario checks for.
check_scenario_played() {
  local feature file bad=0
  for feature in "${FEATURES[@]}"; do
    file=$(state_file "$feature")
    [[ -f $file ]] || continue
    if grep -Eq "^ *\"exit_code\": ($SCENARIO_ERRORS),\$" "$file"; then
      printf 'demo: the scripted agent did not play %s as written (see its output.log files)\n' \
        "$feature" >&2
      bad=1
    fi
  done
  return "$bad"
}

summarise() {
  local status=0
  print_features || status=1
  print_memory
  print_git_log
  print_result
  [[ -n $CLEAN ]] || print_where_to_look
  check_scenario_played || status=1
  return "$status"
}

main() {
  CLEAN=''
  while [[ $# -gt 0 ]]; do
    case $1 in
      -h | --help) usage; return 0 ;;
      --clean) CLEAN=1; shift ;;
      *) printf 'demo: error: unknown argument %s\n' "$1" >&2; usage >&2; return 1 ;;
    esac
  done
  check_prerequisites
  setup

  local status=0
  run_mission || status=1
  summarise || status=1

  if [[ -n $CLEAN ]]; then
    rm -rf "$DEMO"
    printf '\n(--clean: removed %s)\n' "$DEMO"
  fi
  if [[ $status -eq 0 ]]; then
    printf '\nThe mission is done: three features, delivered and recorded.\n'
  else
    printf '\ndemo: FAILED: not every feature ended done as the scenario says.\n' >&2
    [[ -n $CLEAN ]] || printf 'demo: everything is kept in %s\n' "$DEMO" >&2
  fi
  return "$status"
}

main "$@"

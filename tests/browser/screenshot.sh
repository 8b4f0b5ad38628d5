#!/usr/bin/env bash
# `make test-browser`: runs a small scripted mission (tests/browser/mission/), writes its report
# with `planner report`, opens it in headless Chromium and saves screenshots into docs/. Opt-in:
# it needs Debian's `chromium` package, which `make test` does not.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly REPO
readonly MISSION=$REPO/tests/browser/mission

usage() {
  cat <<'USAGE'
Usage: tests/browser/screenshot.sh [--out DIR] [--keep]

Builds the binaries (release; or uses HARNESS_BIN_DIR), runs the mission of tests/browser/mission/
with the scripted agent in a new temporary directory (about 40 seconds), runs one curator pass
(when the curator is built), writes the report with `planner report`, and saves what headless
Chromium shows of it:

  DIR/report.png         1280x1600, light
  DIR/report-phone.png   390x1400, light
  DIR/report-dark.png    1280x1600, dark (prefers-color-scheme: dark)

Options:
  --out DIR   where to save the screenshots [default: docs/ of the repository]
  --keep      keep the temporary mission (its path is printed) instead of removing it
  -h, --help  show this help

Needs: chromium (Debian: `sudo apt-get install -y chromium`), git, and the Rust toolchain
unless HARNESS_BIN_DIR names built binaries.
It also checks that the page, every attempt list open, never scrolls sideways at 320 and 375px.
Exit status: 0 when every screenshot was saved and the check passed, 1 otherwise.
USAGE
}

die() {
  printf 'test-browser: error: %s\n' "$1" >&2
  if [[ -n ${2:-} ]]; then
    printf 'hint: %s\n' "$2" >&2
  fi
  exit 1
}

find_chromium() {
  local candidate
  for candidate in chromium chromium-browser google-chrome; do
    # type -P: a program on PATH, never a function of this script.
    if CHROMIUM=$(type -P "$candidate"); then
      return 0
    fi
  done
  die "headless Chromium is not installed" \
    "install Debian's package: sudo apt-get update && sudo apt-get install -y chromium"
}

build() {
  if [[ -n ${HARNESS_BIN_DIR:-} ]]; then
    BIN_DIR=$HARNESS_BIN_DIR
  else
    printf '== cargo build --release --workspace --bins\n' >&2
    (cd "$REPO" && cargo build --release --workspace --bins)
    BIN_DIR=$REPO/target/release
  fi
  local binary
  for binary in worker validator planner scripted-agent; do
    [[ -x $BIN_DIR/$binary ]] || die "$BIN_DIR/$binary is not built" "run \`make build\`"
  done
  export HARNESS_BIN_DIR=$BIN_DIR
}

# A new git project in a temp dir: `run.sh init`, the mission's features, a hand-written
# summary.md, and a config running the scripted agent in Claude's stream-json.
setup() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/harness-browser.XXXXXX")
  PROJECT=$WORK/sheets
  mkdir -p "$PROJECT" "$WORK/identity"
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
  export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
  export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
  export HARNESS_IDENTITY_DIR=$WORK/identity
  git -C "$PROJECT" -c init.defaultBranch=main init -q
  "$REPO/run.sh" -C "$PROJECT" init >/dev/null
  cp "$MISSION/features.yaml" "$MISSION/summary.md" "$PROJECT/.harness/"
  cp "$MISSION/scenario.yaml" "$WORK/scenario.yaml"
  printf '# Mission\n\nA spreadsheet in the browser: a grid, formulas, CSV, sharing, undo.\n' \
    >"$PROJECT/.harness/mission.md"
  cat >"$PROJECT/.harness/config.yaml" <<CONFIG
agent:
  command: ["$BIN_DIR/scripted-agent", "--scenario", "$WORK/scenario.yaml", "--state-dir", "$WORK/agent-state"]
  prompt_via: stdin
  output_format: claude-stream-json
  timeout_secs: 5
  kill_grace_secs: 1
max_iterations: 3
completion_promise: TASK_COMPLETE
CONFIG
  git -C "$PROJECT" add -A
  git -C "$PROJECT" commit -q -m "The mission"
}

run_mission() {
  local rc=0
  printf '== ./run.sh -C %s --quiet all (a failed and a blocked feature are expected)\n' \
    "$PROJECT" >&2
  "$REPO/run.sh" -C "$PROJECT" --quiet all >&2 || rc=$?
  # 3: a feature failed and one is blocked, as the scenario says; anything else is a problem.
  [[ $rc -eq 3 ]] || die "./run.sh all exited $rc, not 3 as the scenario says" \
    "read the runs in $PROJECT/.harness/runs (run with --keep to keep them)"
  # One curator pass, when the curator is built, so that the memory panels show its work.
  if [[ -x $BIN_DIR/curator ]]; then
    "$BIN_DIR/curator" -C "$PROJECT" >/dev/null 2>"$WORK/curator.log" ||
      printf 'test-browser: warning: the curator pass failed (%s); the report shows none\n' \
        "$(tail -n 1 "$WORK/curator.log")" >&2
  fi
  "$BIN_DIR/planner" report -C "$PROJECT" >/dev/null
  REPORT=$PROJECT/.harness/report.html
}

# Runs headless Chromium, offline, with a fresh profile: run_chromium [FLAGS...] URL.
run_chromium() {
  local profile
  profile=$(mktemp -d "$WORK/chromium.XXXXXX")
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$profile" "$@" \
    2>"$WORK/chromium.log"
}

# screenshot NAME WIDTH HEIGHT [EXTRA FLAGS...]
screenshot() {
  local name=$1 width=$2 height=$3
  shift 3
  local path=$OUT/$name
  rm -f "$path"
  run_chromium --screenshot="$path" --window-size="$width,$height" "$@" "file://$REPORT" \
    >/dev/null || true
  [[ -s $path ]] || die "chromium saved no $name" "see its messages: $(tail -n 3 "$WORK/chromium.log")"
  printf '  %s (%sx%s)\n' "$path" "$width" "$height"
}

# Fails if the page scrolls sideways on a phone, every attempt list open. Headless windows are
# at least 500px wide, so the page is measured in an iframe of the phone's width.
check_no_sideways_scroll() {
  local width widths scroll client
  sed 's/<details class="attempts">/<details class="attempts" open>/g' "$REPORT" >"$WORK/open.html"
  for width in 320 375; do
    cat >"$WORK/frame.html" <<HTML
<!DOCTYPE html><html><body style="margin:0"><iframe id="f" src="open.html" style="width:${width}px;height:800px;border:0"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {
  var page = this.contentDocument.documentElement;
  document.body.setAttribute("data-widths", page.scrollWidth + " " + page.clientWidth);
});
</script></body></html>
HTML
    widths=$(run_chromium --allow-file-access-from-files --virtual-time-budget=3000 --dump-dom \
      "file://$WORK/frame.html" | sed -n 's/.*data-widths="\([0-9]*\) \([0-9]*\)".*/\1 \2/p') || true
    read -r scroll client <<<"$widths" || true
    [[ -n ${client:-} ]] || die "could not measure the page at ${width}px" \
      "see chromium's messages: $(tail -n 3 "$WORK/chromium.log")"
    ((scroll <= client)) || die "the report scrolls sideways at ${width}px (${scroll}px of content)"
    printf '  no sideways scroll at %spx\n' "$width"
  done
}

cleanup() {
  if [[ -n ${WORK:-} && -z $KEEP ]]; then
    rm -rf "$WORK"
  fi
}

main() {
  OUT=$REPO/docs
  KEEP=''
  while [[ $# -gt 0 ]]; do
    case $1 in
      -h | --help) usage; return 0 ;;
      --out) [[ $# -ge 2 ]] || die "--out needs a directory"; OUT=$2; shift 2 ;;
      --keep) KEEP=1; shift ;;
      *) usage >&2; die "unknown argument $1" ;;
    esac
  done
  find_chromium
  command -v git >/dev/null || die "git is not installed"
  build
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  trap cleanup EXIT
  setup
  run_mission
  printf '== screenshots of %s\n' "$REPORT" >&2
  screenshot report.png 1280 1600
  screenshot report-phone.png 390 1400
  screenshot report-dark.png 1280 1600 --force-dark-mode --blink-settings=preferredColorScheme=0
  check_no_sideways_scroll
  if [[ -n $KEEP ]]; then
    printf 'kept the mission: %s\n' "$PROJECT"
  fi
}

main "$@"

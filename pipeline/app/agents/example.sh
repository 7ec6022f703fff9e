#!/bin/sh
# An agent for ralph-pipeline, as a shell script (docs/your-own-agent.md has the contract).
#
# ralph starts an agent in the workspace once per task, with the prompt on its standard input
# (prompt_via = "stdin"). The agent does the work, writes the one report its kind of prompt
# asks for under $RALPH_OUTPUT_DIR (.agent/out/), publishes topics with "$RALPH_BIN" emit,
# and exits 0 (any other status is a failed attempt, retried, then the next agent of the chain).
#
# This one hands each prompt to the program given as its arguments (any command that reads a
# prompt on standard input, edits the files and prints its answer), then turns that answer
# into the report. In ralph.toml:
#
#   [agents.mine]
#   command = ["sh", "/path/to/example.sh", "my-tool", "--its-flag"]
#
#   [chains]
#   default = ["mine"]
#
# Without arguments it changes nothing and reports every task done: a dry run of the loop.
set -eu

out="${RALPH_OUTPUT_DIR:-.agent/out}"
kind="${RALPH_PROMPT_KIND:-development}"
mkdir -p "$out"
answer=$(mktemp)
trap 'rm -f "$answer"' EXIT

if [ "$#" -gt 0 ]; then
    "$@" >"$answer" # the prompt is on this script's standard input, so on the program's
else
    cat >/dev/null
fi

case "$kind" in
planning)
    # plan.md: the plan, not empty.
    if [ -s "$answer" ]; then cp "$answer" "$out/plan.md"; else echo "1. Do the task." >"$out/plan.md"; fi
    ;;
development | review_fix | dev_fix | hat)
    # status: completed, partial or failed on the first line, then what was done.
    { echo completed; cat "$answer"; } >"$out/status"
    if [ "$kind" = development ]; then
        # What every development prompt asks once the whole task is done. ralph still has
        # the work reviewed (review_completion) and checked (validate) before it completes.
        "$RALPH_BIN" emit LOOP_COMPLETE "the task is done"
    fi
    ;;
review)
    # issues.md: one list item per issue that must be fixed; none (an empty file) is clean.
    grep -E '^[[:space:]]*([-*+]|[0-9]+[.)])[[:space:]]' "$answer" >"$out/issues.md" || :
    ;;
commit_message)
    # commit-message: the message, not empty.
    if [ -s "$answer" ]; then cp "$answer" "$out/commit-message"; else echo "Work by ralph" >"$out/commit-message"; fi
    ;;
*)
    echo "example.sh: no report for a $kind prompt" >&2
    exit 1
    ;;
esac

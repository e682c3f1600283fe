#!/usr/bin/env bash
# test_man_page.sh -- docs/mtrace.1 documents every long option each
# subcommand's --help lists (the --help texts are checked against the
# parsers by test_capture_cli.sh and test_sim_cli.sh), names every key of
# `mtrace play --json` (against a real `mtrace replay`), has an options
# section for every subcommand, and renders with groff without a warning.
. "$(dirname "$0")/lib.sh"

MAN=$TOP/docs/mtrace.1
[ -s "$MAN" ] || fail "no $MAN"
# the option names as the page spells them: groff's \- is a plain -
sed 's/\\-/-/g' "$MAN" >"$TMP/man.txt"
n=0
for cmd in capture replay play sim calibrate dump stats; do
    "$MTRACE" $cmd --help >"$TMP/help" 2>&1 || fail "$cmd --help exit $?"
    grep -Eiq "^\.SH .*\b$cmd\b.* OPTIONS" "$TMP/man.txt" ||
        fail "the man page has no options section for $cmd"
    for opt in $(grep -oE -- '--[a-z][a-z0-9-]+' "$TMP/help" | sort -u); do
        grep -qE -- "$opt([^a-z0-9-]|$)" "$TMP/man.txt" ||
            fail "mtrace $cmd --help lists $opt, the man page does not"
        n=$((n + 1))
    done
done
# every key `mtrace play --json` prints (sample.zst played against
# `mtrace replay` of it: a report with commands and lateness) is named
# in the man page, the per-command names aside
. "$(dirname "$0")/replay_lib.sh"
start_replay REP "$TOP/traces/sample.zst"
"$MTRACE" play "$TOP/traces/sample.zst" --target 127.0.0.1:"$REP" --max-speed --json \
    >"$TMP/play.json" 2>"$TMP/play.err" || fail "play sample.zst exit $?: $(cat "$TMP/play.err")"
keys=$("$PYTHON" - "$TMP/play.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keys = set()
def walk(o, under_names=False):
    if isinstance(o, dict):
        for k, v in o.items():
            if not under_names:
                keys.add(k)
            # the values of "commands" and "errors_by_code" are keyed by
            # command name and error code, not by documented keys
            walk(v, k in ("commands", "errors_by_code") and not under_names)
assert "lateness_ms" in d["report"] and d["report"]["commands"], d
walk(d)
print(" ".join(sorted(keys)))
PY
) || fail "play --json output: $(head -c 300 "$TMP/play.json")"
nk=0
for k in $keys; do
    grep -qF "\\fB${k}\\fR" "$MAN" || fail "play --json prints \"$k\", the man page does not name it"
    nk=$((nk + 1))
done
stop_wait $REPLAY_PID
# -ww: all warnings; -z: no output, only the diagnostics
groff -man -ww -z "$MAN" >"$TMP/groff.err" 2>&1 || fail "groff exit $?"
[ ! -s "$TMP/groff.err" ] || fail "groff warns: $(head -5 "$TMP/groff.err")"
echo "man page: $n options of 7 subcommands and $nk keys of play --json documented; groff -ww quiet"

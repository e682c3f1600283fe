#!/usr/bin/env bash
# test_man_page.sh -- docs/mtrace.1 documents every long option each
# subcommand's --help lists (the --help texts are checked against the
# parsers by test_capture_cli.sh and test_sim_cli.sh), has an options
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
# -ww: all warnings; -z: no output, only the diagnostics
groff -man -ww -z "$MAN" >"$TMP/groff.err" 2>&1 || fail "groff exit $?"
[ ! -s "$TMP/groff.err" ] || fail "groff warns: $(head -5 "$TMP/groff.err")"
echo "man page: $n options of 7 subcommands documented; groff -ww quiet"

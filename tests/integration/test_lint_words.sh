#!/usr/bin/env bash
# test_lint_words.sh -- tools/lint_words.sh (the work-log word rule of `make
# lint`) reports every planted work-log phrase, line by line, and passes
# MongoDB's session vocabulary and the tests/helpers/ programs.
. "$(dirname "$0")/lib.sh"

LW=$TOP/tools/lint_words.sh
[ -x "$LW" ] || fail "no $LW"

# one phrase per line; each must be reported
cat >"$TMP/bad.md" <<'X'
the proxy overhead (session 4) is 11 us
Session 9 reruns on a quiet machine
before the session-2 fmemopen stream
sessions 3-5 measured it
round 14 made it the default
Round 15's calibration
rounds 1-6's gil_handoff_us
figures of this work session
as the work log says
driver /work/notes/s7/quiet.sh
run under /work/coord/measure
a sub-agent ran the fuzzers
the lead reruns it on a quiet machine
the lead's notes
while four helpers built and tested
another helper's fuzzers at nice 15
other engineers' builds
the sim helper saw it
as in the helper's noisy runs
Helper runs, every one under the bench lock
a reviewer asked for it
X
n_bad=$(wc -l <"$TMP/bad.md")
cp "$TMP/bad.md" "$TMP/bad.c"
sed -i 's|^|/* |; s|$| */|' "$TMP/bad.c"

for f in bad.md bad.c; do
    "$LW" "$TMP/$f" >"$TMP/$f.out" 2>"$TMP/$f.err"
    st=$?
    [ $st -eq 1 ] || fail "$f: exit $st, want 1: $(cat "$TMP/$f.err")"
    got=$(grep -c "^$TMP/$f:[0-9]*:" "$TMP/$f.out")
    [ "$got" -eq "$n_bad" ] || {
        cut -d: -f2 "$TMP/$f.out" | sort -n >"$TMP/hit"
        seq "$n_bad" | comm -23 - "$TMP/hit" | while read -r l; do
            echo "missed line $l: $(sed -n "${l}p" "$TMP/$f")"
        done
        fail "$f: $got of $n_bad planted lines reported"
    }
    grep -q "work-log words" "$TMP/$f.err" || fail "$f: no summary line on stderr"
done

# product words: none may be reported
cat >"$TMP/good.c" <<'X'
/* the lsid of an implicit session; server sessions and client sessions */
/* logical sessions, the session pool, endSessions, killAllSessions */
/* startSession, session 0x1f's lsid is copied; session_id = 3 */
#define SESSION_MAX 100
#define ROUNDS 5
/* a round trip per request; rounds 0: not measured; round 0.5 up */
/* tests/helpers/loadgen and the other test helper programs (make helpers) */
/* helper programs: fixedsrv, mktrace; a bench helper program */
/* the leading byte, lead time */
X
"$LW" "$TMP/good.c" >"$TMP/good.out" 2>&1 || fail "product words reported: $(cat "$TMP/good.out")"

# the whole tree, with make lint's exclusions, is checked by make lint; here
# only the file discovery: a file under a skipped prefix is not read
mkdir -p "$TMP/tree/skipme" "$TMP/tree/keep"
cp "$TMP/bad.md" "$TMP/tree/skipme/x.md"
echo ok >"$TMP/tree/keep/y.md"
(cd "$TMP/tree" && git init -q . && git add . &&
    mkdir tools && cp "$LW" tools/ && LINT_WORDS_SKIP="skipme/" tools/lint_words.sh) \
    >"$TMP/tree.out" 2>&1 || fail "skipped prefix read: $(head -3 "$TMP/tree.out")"
(cd "$TMP/tree" && tools/lint_words.sh) >"$TMP/tree2.out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q '^skipme/x.md:1:' "$TMP/tree2.out" ||
    fail "without LINT_WORDS_SKIP: exit $st, want 1 and skipme/x.md reported"
echo "lint_words: $n_bad planted phrases reported in .md and .c, product words pass, skip list honoured"

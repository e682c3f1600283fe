#!/usr/bin/env bash
# lint_words.sh [FILE...] -- fail on words that describe how the work was
# done instead of the product: numbered work sessions and rounds, helpers or
# engineers as people, "the lead", sub-agents.  Code, help text, docs and
# tests speak of the product alone; that story belongs in commit messages.
#
# Without FILE arguments it checks every tracked text file (git ls-files, or
# find outside a git checkout) except node_modules/, this script, its test
# and the paths in LINT_WORDS_SKIP (space-separated path prefixes; `make
# lint` passes them).  Prints "FILE:LINE: text" for each hit and exits 1 if
# there is one, 0 if there is none, 2 on bad usage.
#
# Product words stay: MongoDB's sessions (lsid, server/client/logical
# sessions, endSessions, the session pool), the tests/helpers/ programs
# ("test helper programs", `make helpers`), "round trip".
set -u
cd "$(dirname "$0")/.."

# Perl regular expressions (grep -P); matched case-sensitively where an
# upper-case spelling is a C constant (ROUNDS, SESSION_MAX).
PATTERNS=(
    # "session 3", "Session 9 reruns", "the session-2 stream", "sessions 3-5"
    '\b[Ss]ession(s|-)?[ -]?#?[1-9][0-9]*(?![.][0-9])'
    # "round 14", "Round 15's", "rounds 1-6" (not "round 0.5 up")
    '\b[Rr]ound(s|-)?[ -]?#?[1-9][0-9]*(?![.][0-9])'
    '(?i)\bwork[ -]sessions?\b'
    '(?i)\bwork[ -]?logs?\b'
    '/work/(notes|coord)\b'
    '(?i)\bsub-?agents?\b'
    "(?i)\\bthe lead(?:'s)?\\b(?![ -](?:time|byte|in|ing))"
    '(?i)\breviewers?\b'
    # helpers and engineers as people: "other helpers", "another helper",
    # "four helpers", "the sim helper", "the helper's runs", "helper rounds"
    '(?i)\b(other|another|both|several|two|three|four|five|six|each|every|no)\s+(helpers?|engineers?|agents?)\b(?!\s+programs?)'
    '(?i)\bthe\s+(sim|pcap|capture|replay|play|match|srv|shared|recording|house|fuzz)\s+(helpers?|engineers?)\b(?!\s+programs?)'
    "(?i)\\bhelpers?(?:'s|s'|')"
    '(?i)\bhelpers?\s+(rounds?|runs?|sessions?|had|have|has|began|built|ran|saw|stopped)\b'
)

SKIP=${LINT_WORDS_SKIP:-}
files=()
if [ $# -gt 0 ]; then
    files=("$@")
else
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        mapfile -t all < <(git ls-files)
    else
        mapfile -t all < <(find . -type f ! -path './.git/*' ! -path './build/*' | sed 's|^\./||')
    fi
    for f in "${all[@]}"; do
        case "$f" in
        */node_modules/* | node_modules/* | tools/lint_words.sh | tests/integration/test_lint_words.sh) continue ;;
        esac
        skip=0
        for p in $SKIP; do
            case "$f" in "$p"*) skip=1 ;; esac
        done
        [ $skip -eq 0 ] && [ -f "$f" ] && files+=("$f")
    done
fi
[ ${#files[@]} -gt 0 ] || { echo "lint_words: no files to check" >&2; exit 2; }

# grep -P takes one pattern: join them, each in its own group so that an
# inline (?i) stays inside it.
re=
for p in "${PATTERNS[@]}"; do re="${re:+$re|}(?:$p)"; done
# -I: skip binary files; -H: name the file even when there is one
grep -HnIP -- "$re" "${files[@]}"
case $? in
0)
    echo "lint: work-log words above (say what the product is or does; the story goes in the commit message)" >&2
    exit 1 ;;
1) exit 0 ;;
*) echo "lint_words: grep failed" >&2; exit 2 ;;
esac

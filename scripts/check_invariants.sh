#!/usr/bin/env bash
# The stated invariants (common/check.h): every DT_ASSERT in product code
# says its invariant in words (a string literal as its second argument), and
# there are at least MIN of them (issue 44: >= 100).  Prints the count per
# folder.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN=${MIN:-100}
dirs=$(ls -d */ | tr -d / | grep -v -E '^(build.*|tests|fuzz|examples|python|docs|scripts|models|packaging)$')
# shellcheck disable=SC2086
uses=$(grep -rn --include='*.c' --include='*.h' 'DT_ASSERT(' $dirs | grep -v 'common/check\.[ch]' || true)
bad=$(printf '%s\n' "$uses" | grep -v -E 'DT_ASSERT\(.*, *"' | grep -v '^$' || true)
# a DT_ASSERT whose message is on the next line is fine: check those files' next line
missing=""
while IFS= read -r l; do
    [ -z "$l" ] && continue
    f=${l%%:*}; rest=${l#*:}; n=${rest%%:*}
    # the message may follow on one of the next three lines
    next=$(sed -n "$((n + 1)),$((n + 3))p" "$f")
    if ! printf '%s' "$next" | grep -qE '^ *"|, *"'; then missing+="$l"$'\n'; fi
done <<< "$bad"
if [ -n "$missing" ]; then
    echo "check_invariants: a DT_ASSERT without its invariant in words:" >&2
    printf '%s' "$missing" >&2
    exit 1
fi
count=$(printf '%s\n' "$uses" | grep -c 'DT_ASSERT(' || true)
printf '%s\n' "$uses" | cut -d/ -f1 | sort | uniq -c | sort -rn | sed 's/^/  /'
echo "check_invariants: $count stated invariants (at least $MIN required)"
[ "$count" -ge "$MIN" ] || { echo "check_invariants: fewer than $MIN" >&2; exit 1; }

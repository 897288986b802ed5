#!/usr/bin/env bash
# Summarises what one configuration's test run skipped and which native
# back-ends it ran, from the report the suites append to
# ($DTUNE_TEST_REPORT, written by tests/dt_test.c):
#   skip<TAB>SUITE<TAB>WHY
#   backend<TAB>NAME<TAB>ran | skipped<TAB>WHY
#
#   scripts/test_report.sh REPORT LABEL
# prints "== LABEL: skipped N", one line per suite that skipped, and one
# "== LABEL: native back-ends run: ...; not run: ..." line.
set -euo pipefail
report=$1
label=$2
[ -f "$report" ] || : >"$report"
nskip=$(awk -F'\t' '$1 == "skip"' "$report" | wc -l)
echo "== $label: skipped $nskip"
awk -F'\t' '$1 == "skip" { print $2 "\t" $3 }' "$report" | sort | uniq -c |
    awk -F'\t' '{ split($1, a, " "); s = a[2]; n[s] += a[1]; w[s] = w[s] (w[s] ? "; " : "") $2 (a[1] > 1 ? " (x" a[1] ")" : "") }
                END { for (s in n) printf "   %s: skipped %d: %s\n", s, n[s], w[s] }' | sort
ran=$(awk -F'\t' '$1 == "backend" && $3 == "ran" { print $2 }' "$report" | sort -u)
notrun=$(awk -F'\t' '$1 == "backend" && $3 == "skipped" { print $2 "\t" $4 }' "$report" | sort -u |
    while IFS=$'\t' read -r b why; do
        grep -qxF "$b" <<<"$ran" || printf '%s (%s)\n' "$b" "$why"
    done)
join() { paste -sd';' | sed 's/;/; /g'; }
ran_list=$(printf '%s\n' "$ran" | sed '/^$/d' | paste -sd',' | sed 's/,/, /g')
notrun_list=none
[ -z "$notrun" ] || notrun_list=$(printf '%s\n' "$notrun" | join)
echo "== $label: native back-ends run: ${ran_list:-none}; not run: $notrun_list"

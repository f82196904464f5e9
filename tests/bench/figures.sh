# figures.sh — sourced by the benchmark scripts that print a table of
# timings saved in $tmp/NAME.out files (bench-codegen.sh, bench-train.sh).

# get NAME KEY [FIELD]: field 2 (the median; 3 the minimum) of KEY's line
# in $tmp/NAME.out, or nothing.
get() {
  [ -f "$tmp/$1.out" ] && awk -v k="$2" -v f="${3:-2}" \
    '$1 == k { print $f; exit }' "$tmp/$1.out"
}

# div A B: A / B to 2 decimals, '-' when either is missing.
div() {
  awk -v a="${1:-}" -v b="${2:-}" 'BEGIN {
    if (a == "" || b == "" || b + 0 == 0) print "-";
    else printf "%.2f\n", a / b }'
}

# ms VALUE: milliseconds to 3 or 4 digits, '-' when missing.
ms() {
  awk -v a="${1:-}" 'BEGIN {
    if (a == "") print "-";
    else if (a >= 100) printf "%.0f\n", a;
    else if (a >= 1) printf "%.1f\n", a;
    else printf "%.3f\n", a }'
}

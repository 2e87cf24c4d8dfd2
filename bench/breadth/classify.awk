# Reads `ggp playout` output (the trace format) and prints "ROLES SIMULTANEOUS": the most
# roles with a LEGAL line in one step (`random` left out), and 1 when at some step two or more
# roles have more than one legal move (else 0). Used by bench/breadth.sh.
function terms(s,   i, c, n, depth, tok) {
    n = 0; depth = 0; tok = 0
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "(") { if (depth == 0) n++; depth++; tok = 0 }
        else if (c == ")") { depth--; tok = 0 }
        else if (c == " " || c == "\t") tok = 0
        else if (depth == 0 && !tok) { n++; tok = 1 }
    }
    return n
}
/^STEP/ { if (many >= 2) sim = 1; many = 0; step++; r = 0; next }
/^LEGAL/ {
    if ($2 == "random") next
    r++; if (r > roles) roles = r
    s = $0; sub(/^LEGAL [^ ]+ ?/, "", s)
    if (terms(s) > 1) many++
}
END { if (many >= 2) sim = 1; print roles + 0, sim + 0 }

# SPDX-License-Identifier: MIT
# syz_table.awk - the call table of the guest's ioctl fuzzer (fuzz_ioctl_test.c), made from the
# syzkaller descriptions (driver/syzkaller/gdrdrv.txt, gdrdrv_emu.txt) by tests/kernel/guest.mk:
#   awk -f syz_table.awk gdrdrv.txt gdrdrv_emu.txt > syz_table.h
# The fuzzer then makes its calls from what the descriptions say and nothing else: the device
# each resource of kind fd opens (openat$...), each ioctl's code, the resource fd it takes and
# its struct, each struct's fields in order with their size, and each field's kind: any number
# (intN), a constant (const[V, intN]), one of a set of values (flags[SET, intN]), a range with
# a step (intN[LO:HI, STEP]), a resource (given to the call, or made by it when marked out),
# with the resource's special values. A description this script cannot read is an error here
# (a line "#error"), not a call the fuzzer leaves out without a word.

function fail(msg) { printf "#error \"syz_table.awk: %s:%d: %s\"\n", FILENAME, FNR, msg; bad = 1 }
function size_of(t) {
    if (t ~ /int64/) return 8
    if (t ~ /int32/) return 4
    if (t ~ /int16/) return 2
    if (t ~ /int8/) return 1
    return 0
}
function c_str(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }

/^#/ || /^[[:space:]]*$/ || /^include / { next }

/^resource / {
    # resource NAME[BASE]: SPECIAL, SPECIAL...
    name = $2; sub(/\[.*/, "", name)
    base = $2; sub(/^[^[]*\[/, "", base); sub(/\].*/, "", base)
    specials = ""
    if (index($0, ":")) { specials = $0; sub(/^[^:]*: */, "", specials) }
    res[name] = nres++
    res_order[nres - 1] = name
    res_base[name] = base
    res_special[name] = specials
    next
}

/^openat\$/ {
    dev = $0; sub(/.*string\["/, "", dev); sub(/"\].*/, "", dev)
    r = $0; sub(/.*\) /, "", r)
    if (!(r in res)) { fail("openat makes an unknown resource " r); next }
    res_dev[r] = dev
    next
}

/^ioctl\$/ {
    name = $0; sub(/\(.*/, "", name)
    cmd = $0; sub(/.*cmd const\[/, "", cmd); sub(/\].*/, "", cmd)
    fdr = $0; sub(/^[^(]*\(fd /, "", fdr); sub(/,.*/, "", fdr)
    dir = $0; sub(/.*arg ptr\[/, "", dir); sub(/,.*/, "", dir)
    st = $0; sub(/.*arg ptr\[[a-z]+, /, "", st); sub(/\].*/, "", st)
    if (!(fdr in res)) { fail("ioctl on an unknown resource " fdr); next }
    calls[ncalls++] = sprintf("    { %s, %sUL, SYZ_RES_%s, SYZ_%s, SYZ_ST_%s },", c_str(name), cmd, fdr,
                              toupper(dir), st)
    used_st[st] = 1
    next
}

/^mmap\$/ { next }   # the mmap of a pin is made by hand: its offset is a handle in pages

/^[a-z_0-9]+ = / {
    set = $1; vals = $0; sub(/^[^=]*= */, "", vals)
    sets[set] = nsets++
    set_order[nsets - 1] = set
    set_vals[set] = vals
    next
}

/^[a-z_0-9]+ \{$/ { st = $1; structs[st] = nst++; st_order[nst - 1] = st; nf[st] = 0; next }

st != "" && /^\}/ { st = ""; next }

st != "" {
    f = $1; t = $2
    for (i = 3; i <= NF && $i !~ /^\(/; i++) t = t " " $i
    out = $0 ~ /\(out\)/
    kind = ""; a = 0; b = 0; step = 0; set = "-1"; r = "-1"
    if (t ~ /^const\[/) {
        kind = "CONST"; a = t; sub(/^const\[/, "", a); sub(/,.*/, "", a); sz = size_of(t)
    } else if (t ~ /^flags\[/) {
        kind = "FLAGS"; s = t; sub(/^flags\[/, "", s); sub(/,.*/, "", s); sz = size_of(t)
        if (!(s in sets)) { fail("unknown set " s); next }
        set = "SYZ_SET_" s
    } else if (t ~ /^int[0-9]+\[/) {
        kind = "RANGE"; sz = size_of(t)
        a = t; sub(/^int[0-9]+\[/, "", a); sub(/:.*/, "", a)
        b = t; sub(/^[^:]*:/, "", b); sub(/,.*/, "", b)
        step = t; sub(/.*, */, "", step); sub(/\].*/, "", step)
    } else if (t ~ /^int[0-9]+$/) {
        kind = "INT"; sz = size_of(t)
    } else if (t in res) {
        kind = "RES"; sz = size_of(res_base[t]); r = "SYZ_RES_" t
    } else {
        fail("field " f " of " st ": unknown type " t); next
    }
    if (!sz) { fail("field " f " of " st ": no size"); next }
    fields[st, nf[st]++] = sprintf("    { %s, SYZ_K_%s, %d, %s, %s, %s, %s, %s, %d },", c_str(f), kind, sz,
                                   a "ULL", b "ULL", step "ULL", set, r, out)
    next
}

{ fail("a line this script does not read: " $0) }

END {
    print "/* Made by tests/kernel/guest/syz_table.awk from the syzkaller descriptions: do not edit. */"
    print "#include \"syz_types.h\""
    printf "enum {"; for (i = 0; i < nres; i++) printf " SYZ_RES_%s,", res_order[i]; print " SYZ_NRES };"
    printf "enum {"; for (i = 0; i < nsets; i++) printf " SYZ_SET_%s,", set_order[i]; print " SYZ_NSETS };"
    printf "enum {"; for (i = 0; i < nst; i++) printf " SYZ_ST_%s,", st_order[i]; print " SYZ_NSTRUCTS };"
    for (i = 0; i < nsets; i++) {
        s = set_order[i]
        printf "static const uint64_t syz_set_%s[] = { %s };\n", s, set_vals[s]
    }
    print "static const struct syz_set syz_sets[SYZ_NSETS] = {"
    for (i = 0; i < nsets; i++) {
        s = set_order[i]
        printf "    { %s, syz_set_%s, sizeof(syz_set_%s) / sizeof(uint64_t) },\n", c_str(s), s, s
    }
    print "};"
    for (i = 0; i < nst; i++) {
        s = st_order[i]
        printf "static const struct syz_field syz_fields_%s[] = {\n", s
        for (k = 0; k < nf[s]; k++) print fields[s, k]
        print "};"
    }
    print "static const struct syz_struct syz_structs[SYZ_NSTRUCTS] = {"
    for (i = 0; i < nst; i++) {
        s = st_order[i]
        printf "    { %s, syz_fields_%s, %d },\n", c_str(s), s, nf[s]
    }
    print "};"
    for (i = 0; i < nres; i++) {
        r = res_order[i]
        printf "static const uint64_t syz_special_%s[] = { %s };\n", r, res_special[r] == "" ? "0" : res_special[r]
    }
    print "static const struct syz_resource syz_resources[SYZ_NRES] = {"
    for (i = 0; i < nres; i++) {
        r = res_order[i]
        printf "    { %s, %s, %s, syz_special_%s, %d },\n", c_str(r), res_base[r] == "fd" ? 1 : 0,
               (r in res_dev) ? c_str(res_dev[r]) : "NULL", r,
               res_special[r] == "" ? 0 : split(res_special[r], tmp, ",")
    }
    print "};"
    print "static const struct syz_call syz_calls[] = {"
    for (i = 0; i < ncalls; i++) print calls[i]
    print "};"
    print "#define SYZ_NCALLS (sizeof(syz_calls) / sizeof(syz_calls[0]))"
    exit bad
}

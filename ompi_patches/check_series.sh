#!/usr/bin/env bash
# Checks the patch series in ompi_patches/VERSION/ (git format-patch files):
#   - a cover letter, 0000-cover-letter.patch, with its subject and text
#     filled in;
#   - patches numbered 0001..N without gaps, each with From, Date and a
#     Subject "[PATCH] area: what it does" of at most 72 characters;
#   - every patch applies to the pristine tarball with git am, and with
#     patch -p1 (build_ompi.sh's way where git is missing), neither with fuzz
#     or offset (ompi_patches/series.sh apply), and both give the same tree;
#   - no patch removes a line an earlier patch of the series added (each
#     feature's patch holds its lines in their final form), and none adds a
#     patch tool's leftover (*.orig, *.rej);
#   - no tracked file outside results/ names a patch by its number (numbers
#     change with the series; name a patch by its subject), and every
#     subject quoted after the word patch is one of the series.
# First it checks copies with one planted defect each and fails unless it
# finds every one: a check that cannot fail proves nothing.
#
# usage: ompi_patches/check_series.sh ORIG_TARBALL [VERSION]
#   VERSION defaults to the tarball's (openmpi_VERSION.orig.tar.xz)
set -euo pipefail

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
case "${1:-}" in -h | --help) usage; exit 0 ;; "") usage >&2; exit 2 ;; esac
tarball=$1
[ -f "$tarball" ] || { echo "check_series.sh: no tarball at $tarball" >&2; exit 1; }
version=${2:-$(basename "$tarball" | sed -n 's/^openmpi_\(.*\)\.orig\.tar\..*$/\1/p')}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
series=$here/$version
[ -d "$series" ] || { echo "check_series.sh: no series at $series" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
have_git=false
command -v git >/dev/null && have_git=true

# --- the checks; each prints what is wrong and returns non-zero ---------------

# header FILE NAME: the value of the mail header NAME (continuation lines joined).
header() {
    awk -v name="$2:" '/^$/ { exit }
        found && /^[ \t]/ { sub(/^[ \t]+/, " "); value = value $0; next }
        found { exit }
        $1 == name { found = 1; value = substr($0, length(name) + 2) }
        END { print value }' "$1"
}

# check_format DIR: cover letter, numbering, headers, subject lengths.
check_format() {
    local dir=$1 bad=0 patches=() file name i n subject
    if [ ! -f "$dir/0000-cover-letter.patch" ]; then
        echo "no cover letter (0000-cover-letter.patch)"; bad=1
    elif grep -qF -e '*** SUBJECT HERE ***' -e '*** BLURB HERE ***' "$dir/0000-cover-letter.patch"; then
        echo "0000-cover-letter.patch: subject or text not filled in"; bad=1
    fi
    for file in "$dir"/*.patch; do
        name=${file##*/}
        case "$name" in
            0000-cover-letter.patch) ;;
            [0-9][0-9][0-9][0-9]-*.patch) patches+=("$file") ;;
            *) echo "$name: not named NNNN-subject.patch"; bad=1 ;;
        esac
    done
    n=${#patches[@]}
    [ "$n" -gt 0 ] || { echo "no patches"; return 1; }
    for i in $(seq 1 "$n"); do
        file=${patches[i - 1]}
        name=${file##*/}
        if [ "$((10#${name:0:4}))" -ne "$i" ]; then
            echo "$name: numbered ${name:0:4}, but it is patch $i of $n (a gap or a double)"; bad=1
        fi
        head -1 "$file" | grep -q '^From [0-9a-f]\{40\} ' || { echo "$name: not a git format-patch file (no From line)"; bad=1; }
        [ -n "$(header "$file" From)" ] || { echo "$name: no From: header"; bad=1; }
        [ -n "$(header "$file" Date)" ] || { echo "$name: no Date: header"; bad=1; }
        subject=$(header "$file" Subject)
        if ! grep -qE "^\[PATCH\] [a-z0-9]+: [^ ]" <<<"$subject"; then
            echo "$name: subject '$subject' is not [PATCH] area: what it does"; bad=1
        fi
        if [ ${#subject} -gt 72 ]; then
            echo "$name: subject longer than 72 characters (${#subject}): $subject"; bad=1
        fi
    done
    return $bad
}

# subjects DIR: the series' subjects, without "[PATCH] ".
subjects() {
    local file
    for file in "$1"/[0-9][0-9][0-9][0-9]-*.patch; do
        [ "${file##*/}" = 0000-cover-letter.patch ] || header "$file" Subject | sed 's/^\[PATCH[^]]*\] //'
    done
}

# joined FILE...: each line as "FILE:LINE: W TEXT", W the previous line's
# last word and TEXT the line without its indent and comment mark, so that
# a "patch" ending one line is seen before the subject starting the next.
joined() {
    awk 'FNR == 1 { prev = "" }
         { text = $0; sub(/^[ \t]*(\*|\/\/|#|>)?[ \t]*/, "", text)
           print FILENAME ":" FNR ": " prev " " text
           n = split($0, words, /[ \t]+/); prev = n ? words[n] : "" }' "$@"
}

# check_references DIR FILE...: no patch named by number in FILE...; every
# subject quoted after the word patch there is one of DIR's series or of
# another version's series beside it (ompi_patches/VERSION/ with a cover
# letter: the documents name the patches of both), and on one line, so that
# this check sees it.
check_references() {
    local dir=$1 bad=0 known reference
    shift
    # Numbers as the old series had them ("patch" or "patches", four
    # digits) and file names (four digits but the cover letter's, a dash,
    # a word).
    if grep -HInE '[Pp]atch(es)?:? 0[0-9]{3}\b|\b00(0[1-9]|[1-9][0-9])-[a-z]' "$@"; then
        echo "patches named by number above: name them by subject (patch \"area: what it does\") or by the file they change"
        bad=1
    fi
    if joined "$@" | grep -E '\b[Pp]atch(es)? "[a-z0-9]+: [^"]*$'; then
        echo "subjects split across lines above: keep a quoted subject on one line"
        bad=1
    fi
    known=$(subjects "$dir"
            for other in "$here"/*/; do
                [ -f "$other/0000-cover-letter.patch" ] && [ "$(cd "$other" && pwd)" != "$(cd "$dir" && pwd)" ] &&
                    subjects "$other"
            done)
    while read -r reference; do
        [ -n "$reference" ] || continue
        grep -qxF -- "$reference" <<<"$known" || { echo "no patch has the subject \"$reference\""; bad=1; }
    done < <(joined "$@" | grep -oE '\b[Pp]atch(es)? "[a-z0-9]+: [^"]+"' | sed 's/^[^"]*"\(.*\)"$/\1/' | sort -u)
    return $bad
}

# check_rewrites PATCH...: no patch removes a line that an earlier patch of
# the series added to the same file (a series by feature holds each line
# in its final form), blank lines and lone braces aside; and no patch adds
# a patch tool's leftover (*.orig, *.rej).  By content: a pristine line
# equal to one an earlier patch added would be a false alarm (none today).
check_rewrites() {
    awk 'function trivial(s) { gsub(/[ \t]/, "", s); return s ~ /^([{}]|};|)$/ }
         FNR == 1 { body = 0 }
         /^diff --git / { body = 1; file = $4; sub(/^b\//, "", file); next }
         !body || /^-- $/ { next }
         /^\+\+\+ / { if ($2 ~ /\.(orig|rej)$/) { print FILENAME ": adds " $2 ", a leftover of a patch tool"; bad = 1 }
                      next }
         /^--- / { next }
         /^\+/ { if (!trivial(substr($0, 2))) added[file SUBSEP substr($0, 2)] = FILENAME; next }
         /^-/ { key = file SUBSEP substr($0, 2)
                if (!trivial(substr($0, 2)) && (key in added) && added[key] != FILENAME) {
                    n = split(added[key], p, "/"); m = split(FILENAME, q, "/")
                    print q[m] ": removes a line " p[n] " added to " file ": " substr($0, 2); bad = 1 } }
         END { exit bad }' "$@"
}

# applied DIR WITH TREE [partial]: DIR's series applied to a fresh pristine
# TREE; partial: a tree of only the files the series changes (and VERSION),
# enough for a control and much less to write.
applied() {
    local members=()
    if [ "${4:-}" = partial ]; then
        members=("openmpi-$version/VERSION")
        members+=($(sed -n "s|^+++ b/|openmpi-$version/|p" "$1"/[0-9]*.patch | sort -u))
    fi
    mkdir -p "$3"
    tar -xf "$tarball" -C "$3" --strip-components=1 "${members[@]}"
    "$here/series.sh" apply --with "$2" --patches "$1" "$version" "$3"
}

# --- control: planted defects must be found ------------------------------------

# expect_failure WHAT PATTERN COMMAND...: COMMAND fails, saying PATTERN.
controls=0
expect_failure() {
    local what=$1 pattern=$2 output
    shift 2
    if output=$("$@" 2>&1); then
        echo "FAIL: the check missed a planted defect ($what):"; echo "$output"; exit 1
    fi
    grep -qiE -- "$pattern" <<<"$output" ||
        { echo "FAIL: a planted defect ($what) failed the check for another reason:"; echo "$output"; exit 1; }
    echo "ok: control: $what is found"
    controls=$((controls + 1))
}

# planted NAME: a copy of the series to plant a defect in.
planted() { cp -r "$series" "$scratch/$1"; echo "$scratch/$1"; }
first=$(ls "$series"/000[1-9]-*.patch | sed -n 1p)
first=${first##*/}
second=$(ls "$series"/000[1-9]-*.patch | sed -n 2p)
second=${second##*/}

copy=$(planted long-subject)
sed -i '0,/^Subject: /s/^Subject: .*/& and then some more words until it is far too long/' "$copy/$second"
expect_failure "a subject of more than 72 characters" 'longer than 72' check_format "$copy"
copy=$(planted gap)
rm "$copy/$second"
expect_failure "a gap in the numbering" 'gap' check_format "$copy"
copy=$(planted no-cover)
rm "$copy/0000-cover-letter.patch"
expect_failure "no cover letter" 'no cover letter' check_format "$copy"
copy=$(planted no-date)
sed -i '0,/^Date: /{/^Date: /d}' "$copy/$first"
expect_failure "a patch without Date" 'no Date' check_format "$copy"

# A one-patch series whose first hunk names a line one below its place.
copy=$scratch/offset
mkdir "$copy"
awk '!done && /^@@ / { split($2, old, ","); split($3, new, ",")
                       $2 = "-" (substr(old[1], 2) + 1) "," old[2]; $3 = "+" (substr(new[1], 2) + 1) "," new[2]; done = 1 }
     { print }' "$series/$first" >"$copy/$first"
# A one-patch series whose first context line differs from the tree's:
# patch would apply it with fuzz 1.
copy=$scratch/fuzz
mkdir "$copy"
awk 'hunk && !done && /^ / { $0 = $0 " /* planted */"; done = 1 } /^@@ / { hunk = 1 } { print }' \
    "$series/$first" >"$copy/$first"
for with in git patch; do
    [ $with = git ] && ! $have_git && continue
    expect_failure "a hunk at an offset ($with)" 'offset' \
        applied "$scratch/offset" $with "$scratch/tree-offset-$with" partial
    expect_failure "a hunk that needs fuzz ($with)" 'does not apply' \
        applied "$scratch/fuzz" $with "$scratch/tree-fuzz-$with" partial
done

# Two patches, the second removing a line the first added; one adding a
# leftover of patch(1).
copy=$scratch/rewrites
mkdir "$copy"
printf 'Subject: [PATCH] %s: a\n\ndiff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1 +1,2 @@\n int a;\n+int planted;\n' \
    spc >"$copy/first.patch"
printf 'Subject: [PATCH] %s: b\n\ndiff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,2 +1 @@\n int a;\n-int planted;\n' \
    spc >"$copy/second.patch"
expect_failure "a patch removing what an earlier one added" 'removes a line' check_rewrites "$copy/first.patch" "$copy/second.patch"
printf 'Subject: [PATCH] %s: c\n\ndiff --git a/x.c.orig b/x.c.orig\n--- /dev/null\n+++ b/x.c.orig\n@@ -0,0 +1 @@\n+int a;\n' \
    spc >"$copy/leftover.patch"
expect_failure "a leftover of a patch tool" 'leftover' check_rewrites "$copy/leftover.patch"

# (Made of pieces, so that this file does not hold what it looks for.)
quote='"'
area=$(subjects "$series" | sed -n "1s/:.*//p")
printf 'Built as patch 00%s does.\nSee patch %s.\nAnd patch %s\n' 12 "$quote$area: no such subject$quote" \
    "$quote$area: a subject split" >"$scratch/references.txt"
printf 'across lines%s.\n' "$quote" >>"$scratch/references.txt"
expect_failure "a patch named by number" 'by number' check_references "$series" "$scratch/references.txt"
expect_failure "a patch named by a subject it does not have" 'no patch has the subject' \
    check_references "$series" "$scratch/references.txt"
expect_failure "a subject split across lines" 'split across lines' \
    check_references "$series" "$scratch/references.txt"
printf 'See patch %s.\n' "$quote$(subjects "$series" | sed -n 1p)$quote" >"$scratch/references.txt"
check_references "$series" "$scratch/references.txt" >/dev/null ||
    { echo "FAIL: a reference by a real subject is refused"; exit 1; }

# --- the series -------------------------------------------------------------------

failed=0
check_format "$series" || failed=1
mapfile -t numbered < <(ls "$series"/[0-9][0-9][0-9][0-9]-*.patch | grep -v '/0000-cover-letter.patch$')
check_rewrites "${numbered[@]}" || failed=1
if $have_git && git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -d '' files < <(git -C "$repo" ls-files -z | grep -zv '^results/' | sed -z "s|^|$repo/|")
    check_references "$series" "${files[@]}" || failed=1
else
    echo "note: not a git checkout (or no git): references not checked"
fi
if $have_git; then
    applied "$series" git "$scratch/tree-git" || failed=1
else
    echo "note: no git: the series applied with patch -p1 only"
fi
applied "$series" patch "$scratch/tree-patch" || failed=1
if $have_git && [ -d "$scratch/tree-git" ] && [ -d "$scratch/tree-patch" ]; then
    diff -r "$scratch/tree-git" "$scratch/tree-patch" || { echo "git am and patch -p1 give different trees"; failed=1; }
fi
[ $failed -eq 0 ] || { echo "FAIL: the series in $series (above)"; exit 1; }
tools="patch -p1"
$have_git && tools="git am and patch -p1"
echo "series $version: $(subjects "$series" | wc -l) patches and a cover letter, numbered without gaps," \
     "subjects within 72 characters, no line rewritten by a later patch," \
     "applied with $tools, no fuzz, no offset; $controls planted defects found"

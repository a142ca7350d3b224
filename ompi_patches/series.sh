#!/usr/bin/env bash
# The patch series against Open MPI VERSION lives in ompi_patches/VERSION/ as
# git format-patch files: 0000-cover-letter.patch, then 0001-... in the order
# they apply (the sorted file names are the order; nothing else lists them).
#
# usage: ompi_patches/series.sh branch VERSION DIR
#            DIR (new or empty) becomes a git repository of the pristine
#            Open MPI VERSION: commit "pristine" (tag pristine), then the
#            series applied with git am, one commit per patch, on branch
#            spc-VERSION.  Edit there: commit a new patch on top, or change
#            one with git rebase -i pristine (edit, commit --amend).
#        ompi_patches/series.sh export VERSION DIR
#            rewrites ompi_patches/VERSION/*.patch from DIR's branch
#            spc-VERSION with git format-patch; the cover letter keeps its
#            subject and text (edit them in the file), its list of patches
#            and diffstat are regenerated.
#        ompi_patches/series.sh apply [--with git|patch] VERSION TREE
#            applies the series to TREE, an extracted tarball: with git am in
#            a throwaway repository beside it (git apply --check first, so an
#            offset is refused too), or with patch -p1 --fuzz=0 where git is
#            missing.  Either refuses fuzz and offsets.  TREE gets no .git.
#   --patches FOLDER  use FOLDER's *.patch instead of ompi_patches/VERSION/
#   --tarball FILE    the pristine tarball (default: openmpi_VERSION.orig.tar.xz
#                     in the src/ of build_ompi.sh --where, which honours SPC_CACHE)
#
# Commits carry the project's identity and their own dates, and format-patch
# runs without user configuration, so exporting an unchanged branch rewrites
# the files byte for byte.
set -euo pipefail

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }
die() { echo "series.sh: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
identity_name="ompi-spc developers"
identity_email="ompi-spc@invalid"
# What git writes must not depend on who runs it: no user or system
# configuration (signature, abbreviations, diff options, 3-way merges).
# No automatic gc either: a fresh tree is thousands of loose objects, and a
# gc in the background would pack a throwaway repository while it goes.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=gc.auto GIT_CONFIG_VALUE_0=0
export GIT_COMMITTER_NAME=$identity_name GIT_COMMITTER_EMAIL=$identity_email
export GIT_AUTHOR_NAME=$identity_name GIT_AUTHOR_EMAIL=$identity_email

command=${1:-}
[ $# -gt 0 ] && shift
patches_dir="" tarball="" with=""
while [ $# -gt 0 ]; do
    case "$1" in
        --patches) patches_dir=$(cd "$2" && pwd); shift 2 ;;
        --tarball) tarball=$2; shift 2 ;;
        --with) with=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) break ;;
    esac
done
case "$command" in
    branch | export | apply) [ $# -eq 2 ] || { usage >&2; exit 2; } ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
esac
version=$1
target=$2
patches_dir=${patches_dir:-$here/$version}
[ -d "$patches_dir" ] || die "no series for Open MPI $version ($patches_dir)"

# series_patches: the patches in the order they apply, cover letter left out.
series_patches() {
    local patch
    for patch in "$patches_dir"/[0-9][0-9][0-9][0-9]-*.patch; do
        [ -f "$patch" ] && [ "${patch##*/}" != 0000-cover-letter.patch ] && echo "$patch"
    done
    return 0
}

# am_strict GIT_ARGS...: applies each patch with git am, as one commit, in the
# repository git "${GIT_ARGS[@]}" names, run from its work tree.  git am has
# no fuzz but takes a hunk at an offset silently; git apply --verbose says
# so first.  Reads the patches from stdin, one path per line.
am_strict() {
    local patch report
    while read -r patch; do
        report=$(git "$@" apply --check --verbose --whitespace=nowarn "$patch" 2>&1) ||
            { echo "$report"; die "${patch##*/} does not apply (git applies no fuzz)"; }
        if grep -qiE 'offset|context reduced|fuzz' <<<"$report"; then
            echo "$report"
            die "${patch##*/} applies only at an offset"
        fi
        git "$@" am --quiet --no-3way --whitespace=nowarn --committer-date-is-author-date "$patch" ||
            { git "$@" am --abort; die "git am ${patch##*/} failed"; }
    done
}

# commit_pristine GIT_ARGS...: the extracted tree as one commit, dated as the
# release's VERSION file, so its id is the same on every machine.  --force:
# the tarball's files are all source, whatever a .gitignore would say.
commit_pristine() {
    local when
    when="$(stat -c %Y VERSION) +0000"
    git "$@" add --all --force
    GIT_AUTHOR_DATE=$when GIT_COMMITTER_DATE=$when \
        git "$@" commit --quiet --no-verify -m "Open MPI $version, pristine (openmpi_$version.orig.tar.xz)"
}

default_tarball() {
    echo "$("$here/build_ompi.sh" --where)/src/openmpi_$version.orig.tar.xz"
}

do_apply() {
    local tree=$1
    [ -f "$tree/VERSION" ] || die "$tree is not an extracted Open MPI tree"
    tree=$(cd "$tree" && pwd)
    if [ -z "$with" ]; then
        with=patch
        command -v git >/dev/null && with=git
    fi
    case "$with" in
        git)
            local git_dir=$scratch/git
            cd "$tree"
            git --git-dir="$git_dir" --work-tree="$tree" init --quiet
            commit_pristine --git-dir="$git_dir" --work-tree="$tree"
            series_patches | am_strict --git-dir="$git_dir" --work-tree="$tree"
            ;;
        patch)
            local patch report
            while read -r patch; do
                report=$(patch -d "$tree" -p1 --forward --batch --fuzz=0 <"$patch" 2>&1) ||
                    { echo "$report"; die "${patch##*/} does not apply (--fuzz=0)"; }
                if grep -qiE 'offset|fuzz' <<<"$report"; then
                    echo "$report"
                    die "${patch##*/} applies only at an offset"
                fi
            done < <(series_patches)
            ;;
        *) die "--with takes git or patch" ;;
    esac
    echo "series.sh: $(series_patches | wc -l) patches of ${patches_dir##*/} applied with $with"
}

do_branch() {
    local dir=$1
    tarball=${tarball:-$(default_tarball)}
    [ -f "$tarball" ] || die "no tarball at $tarball (ompi_patches/build_ompi.sh spc fetches it; --tarball or SPC_CACHE points elsewhere)"
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
        die "$dir exists and is not empty"
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    tar -xf "$tarball" -C "$dir" --strip-components=1
    cd "$dir"
    git init --quiet --initial-branch="spc-$version"
    # New commits made there carry the project's identity too.
    git config user.name "$identity_name"
    git config user.email "$identity_email"
    commit_pristine
    git tag pristine
    series_patches | am_strict
    echo "series.sh: $dir: branch spc-$version, $(git rev-list --count pristine..HEAD) patches on tag pristine"
}

# cover_text COVER_LETTER: its subject (without "[PATCH] ") on the first
# line, then its text: what lies between the headers and the list of
# patches format-patch writes ("Author (N):" and the subjects, indented).
cover_text() {
    sed -n 's/^Subject: \[PATCH[^]]*\] //p' "$1" | sed -n 1p
    awk '!body { if ($0 == "") body = 1; next }
         held != "" { if (/^  /) exit; print held; held = "" }
         /^[^ ].* \([0-9]+\):$/ { held = $0; next }
         { print }' "$1" |
        sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'  # without trailing empty lines
}

do_export() {
    local dir=$1 branch=spc-$version
    [ -d "$dir" ] || die "no repository at $dir (series.sh branch $version $dir makes one)"
    cd "$dir"
    git rev-parse --quiet --verify "refs/heads/$branch" >/dev/null || die "$dir has no branch $branch"
    git rev-parse --quiet --verify refs/tags/pristine >/dev/null || die "$dir has no tag pristine"
    git merge-base --is-ancestor pristine "$branch" || die "$branch does not start at pristine"
    # format-patch leaves merges out without a word.
    [ -z "$(git rev-list --merges "pristine..$branch")" ] || die "$branch has merges; rebase it onto pristine"
    local state
    for state in rebase-merge rebase-apply MERGE_HEAD CHERRY_PICK_HEAD; do
        [ -e "$(git rev-parse --git-path "$state")" ] && die "$dir: a rebase, am or merge is under way; finish it first"
    done
    if [ "$(git symbolic-ref --quiet HEAD)" = "refs/heads/$branch" ] && ! git diff --quiet HEAD; then
        die "$dir has changes not committed to $branch; commit them first"
    fi

    local out=$scratch/out cover=$patches_dir/0000-cover-letter.patch newest
    # The cover letter's From and Date are the committer's: the project's
    # identity and the newest patch's date.  Subjects are "[PATCH] ...", not
    # "[PATCH i/N] ...", so that adding a patch leaves the others' files be.
    newest=$(git log --format=%at "pristine..$branch" | sort -n | tail -1)
    GIT_COMMITTER_DATE="$newest +0000" \
        git format-patch --quiet --output-directory="$out" --cover-letter --no-numbered --zero-commit \
            --no-signature --full-index --no-renames --diff-algorithm=myers --no-thread \
            --filename-max-length=100 "pristine..$branch"
    if [ -f "$cover" ]; then
        local text
        text=$(cover_text "$cover")
        # Through the environment: awk -v would expand backslashes.
        subject=$(head -1 <<<"$text") blurb=$(tail -n +2 <<<"$text") awk '
            /^Subject: / && (i = index($0, "*** SUBJECT HERE ***")) {
                $0 = substr($0, 1, i - 1) ENVIRON["subject"] substr($0, i + 20)
            }
            $0 == "*** BLURB HERE ***" { print ENVIRON["blurb"]; next }
            { print }' "$out/0000-cover-letter.patch" >"$out/cover" &&
            mv "$out/cover" "$out/0000-cover-letter.patch"
    else
        echo "series.sh: no cover letter yet; fill in the subject and text of $cover" >&2
    fi
    rm -f "$patches_dir"/*.patch
    cp "$out"/*.patch "$patches_dir/"
    echo "series.sh: $(ls "$out" | wc -l) files written to $patches_dir (cover letter included)"
}

case "$command" in
    branch) do_branch "$target" ;;
    export) do_export "$target" ;;
    apply) do_apply "$target" ;;
esac

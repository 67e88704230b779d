# Shared by the scripts (sourced, not run).

# ensure_debs PKG...: installs the Debian packages that are missing, with apt-get (as root, or
# through `sudo -n`). Prints what it installs; returns 1 with the reason on stderr when it
# cannot (no apt-get, no root, no network), so that the caller can say SKIPPED and why.
ensure_debs() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    if ! command -v apt-get >/dev/null; then
        echo "no apt-get to install ${missing[*]}" >&2
        return 1
    fi
    local sudo=()
    if [[ $(id -u) != 0 ]]; then
        if ! sudo -n true 2>/dev/null; then
            echo "not root and no password-less sudo to install ${missing[*]}" >&2
            return 1
        fi
        sudo=(sudo -n)
    fi
    echo "installing ${missing[*]} with apt-get" >&2
    "${sudo[@]}" apt-get update -qq >&2 || { echo "apt-get update failed" >&2; return 1; }
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2 || { echo "apt-get install ${missing[*]} failed" >&2; return 1; }
}

# ensure_target TRIPLE: the target's standard library, with rustup when it is missing.
ensure_target() {
    rustup target list --installed 2>/dev/null | grep -qx "$1" && return 0
    if ! command -v rustup >/dev/null; then
        echo "no rustup to add $1" >&2
        return 1
    fi
    rustup target add "$1" >&2 || { echo "rustup target add $1 failed" >&2; return 1; }
}

# The programs that consume profpoint's exports, which the consumer tests run
# (profpoint/tests/consumers.rs, scripts/render-svg): `go tool pprof` (golang-go), `protoc`
# (protobuf-compiler), `promtool` (Debian ships it in the server's package, prometheus) and
# headless `chromium`; and `tmux`, in which scripts/live-view runs `profpoint top`. Measured
# here (2026-11-24, Debian 12): protobuf-compiler and chromium with their libraries 16 s,
# apt-get update included; golang-go and prometheus 21 s (96 MB downloaded); nothing when they
# are present.
CONSUMER_DEBS=(golang-go protobuf-compiler prometheus chromium tmux)

# step NAME COMMAND...: runs one step of a suite and remembers whether it passed (in the
# arrays `passed` and `failed`, which the caller declares). Every step runs even when an
# earlier one failed: one failure must not hide the others. $STEP_PREFIX names the script.
step() {
    local name=$1
    shift
    echo "=== $STEP_PREFIX: $name" >&2
    local t0=$SECONDS rc=0
    "$@" || rc=$?
    if ((rc == 0)); then
        echo "=== $STEP_PREFIX: passed in $((SECONDS - t0)) s: $name ($(disk_free_mb) MB free)" >&2
        passed+=("$name")
    else
        echo "=== $STEP_PREFIX: FAILED after $((SECONDS - t0)) s: $name (exit $rc)" >&2
        disk_note
        failed+=("$name")
    fi
}

# disk_free_mb: the megabytes free for this user on the filesystem that holds the target
# directory (or, before the first build, the checkout).
disk_free_mb() {
    local d=${CARGO_TARGET_DIR:-target}
    [[ -d $d ]] || d=.
    df -Pm "$d" 2>/dev/null | awk 'NR == 2 { print $4 }'
}

# disk_note: after a failed step, says so when the disk is nearly full, since a full disk
# fails builds and tests with errors that do not name it (a CI run once failed ten steps so).
disk_note() {
    local free
    free=$(disk_free_mb)
    [[ -n $free ]] && ((free < 2048)) &&
        echo "=== $STEP_PREFIX: the disk is nearly full (${free} MB free): a step may have failed for want of space" >&2
    return 0
}

# summary: names the failed steps; returns 1 if any failed.
summary() {
    echo >&2
    echo "=== $STEP_PREFIX: ${#passed[@]} steps passed, ${#failed[@]} failed" >&2
    if ((${#failed[@]})); then
        for f in "${failed[@]}"; do echo "    FAILED: $f" >&2; done
        return 1
    fi
    echo "=== $STEP_PREFIX: all passed" >&2
}

# tidy_target DIR: removes a side build's target directory after its step when
# PROFPOINT_TIDY_TARGETS=1 (.ci/run sets it: a CI machine's disk is small); by hand the
# directory stays, so the next run reuses it.
tidy_target() {
    [[ ${PROFPOINT_TIDY_TARGETS:-0} == 1 && -d $1 ]] || return 0
    echo "=== $STEP_PREFIX: removing $1 ($(du -sh "$1" 2>/dev/null | cut -f1))" >&2
    rm -rf "$1"
}

# The features of profpoint's build for the consumers' tests in scripts/test-ci, which
# scripts/render-svg reuses (the same features: no second build). The sampler and the flame
# graphs are opt-in features; the consumers read their exports too.
export PROFPOINT_CI_FEATURES="serve,criterion,heatmap,flame"

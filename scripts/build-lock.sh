# Sourced by the build scripts (after `cd` to the repository root, with `log` defined).
#
# take_build_lock DIR: one build at a time per cache root, since several clones on one machine share it.
# Creates DIR, holds DIR/.lock on file descriptor 9 until the script exits, then removes the staging
# directories a killed build left behind (we hold the lock, so none of them is live).
take_build_lock() {
    mkdir -p "$1"
    exec 9>"$1/.lock"
    if command -v flock >/dev/null 2>&1; then
        log "waiting for the build lock $1/.lock"
        flock 9
        rm -rf "$1"/.stage.*
    fi
}

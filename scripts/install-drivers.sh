#!/usr/bin/env bash
# Installs hami-core and the chosen vendor drivers into a virtualenv. It is the image's install step (the
# Dockerfile's only RUN) and what tests/install/test_image.py runs into a fresh venv.
#
#   bash scripts/install-drivers.sh --venv DIR [--drivers LIST] [--extra REQUIREMENTS]
#
#   --venv DIR       the virtualenv; created with $PYTHON (default python3) when DIR/bin/python is missing
#   --drivers LIST   in-tree drivers (directories of vendors/), separated by spaces or commas;
#                    "all" (the default) or "none"
#   --extra REQS     more pip requirements separated by spaces: third-party drivers from an index
#                    ("hami-vendor-acme==1.2") or local paths ("./examples/hami-vendor-acme")
#
# Packages are built with the venv's own setuptools (installed first, >= 77), not in isolated build
# environments, so an offline install needs nothing but the dependencies. At the end every installed
# driver must load: `hami vendors` is printed, and a driver that failed to load, or no driver at all,
# fails the install.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf 'install-drivers: error: %s\n' "$*" >&2; exit 2; }
fail() { printf 'install-drivers: error: %s\n' "$*" >&2; exit 1; }

venv="" drivers="all" extra=""
while [ $# -gt 0 ]; do
    case "$1" in
        --venv | --drivers | --extra)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --venv) venv=$2 ;;
                --drivers) drivers=$2 ;;
                --extra) extra=$2 ;;
            esac
            shift 2
            ;;
        -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (usage: install-drivers.sh --venv DIR [--drivers LIST] [--extra REQS])" ;;
    esac
done
[ -n "$venv" ] || die "--venv DIR is required"

in_tree=()
for d in vendors/*/; do
    [ -f "$d/pyproject.toml" ] && in_tree+=("$(basename "$d")")
done
chosen=()
case "${drivers//,/ }" in
    *[![:space:]]*) ;;
    *) die "--drivers is empty (give driver names, 'all' or 'none')" ;;
esac
for name in ${drivers//,/ }; do
    case "$name" in
        all) chosen+=("${in_tree[@]}") ;;
        none) ;;
        *)
            [ -f "vendors/$name/pyproject.toml" ] \
                || die "unknown in-tree driver '$name' (in-tree: ${in_tree[*]}; or 'all', 'none')"
            chosen+=("$name")
            ;;
    esac
done

[ ${#chosen[@]} -gt 0 ] || [ -n "${extra// /}" ] \
    || die "no driver to install: --drivers none and no --extra (the image would have no driver)"

if [ ! -x "$venv/bin/python" ]; then
    echo "== creating the virtualenv $venv"
    "${PYTHON:-python3}" -m venv "$venv" || fail "could not create the virtualenv $venv"
fi
py="$venv/bin/python"

packages=(.)
for name in "${chosen[@]}"; do
    packages+=("./vendors/$name")
done
read -r -a extras <<< "$extra"

echo "== installing hami-core, in-tree drivers: ${chosen[*]:-none}; extra: ${extras[*]:-none}"
"$py" -m pip install --quiet "setuptools>=77"
"$py" -m pip install --quiet --no-build-isolation "${packages[@]}" "${extras[@]}"

echo "== installed drivers"
report=$(mktemp)
trap 'rm -f "$report"' EXIT
"$venv/bin/hami" vendors 2> "$report" || { cat "$report" >&2; fail "hami vendors failed"; }
if grep -q '^error:' "$report"; then
    cat "$report" >&2
[ "$("$venv/bin/hami" vendors --json 2>/dev/null)" != "[]" ] || fail "no vendor driver is installed"
    fail "a driver failed to load (see above)"
fi
cat "$report" >&2
[ "$("$venv/bin/hami" vendors --json 2>/dev/null)" != "[]" ] || fail "no vendor driver is installed"

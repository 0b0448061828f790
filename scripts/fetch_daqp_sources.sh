#!/usr/bin/env bash
# Put DAQP's C sources where setup.py looks for them (build/daqp-<version>/csrc, its LICENSE beside them): the sdist
# of the version requirements.txt pins, fetched by pip by name and version (no other download) and extracted.
# setup.py compiles csrc/src/*.c into the OInK kernel, which then solves the step's QP in the same C call; without
# them the kernel is built without its QP and the daqp Python module solves it (same results, slower).
#
#   scripts/fetch_daqp_sources.sh [PIP...]    # PIP: the pip command (default: python3 -m pip); bootstrap.sh runs it
#
# Prints the sources' folder. Exit 1 (with the reason on stderr) if they could not be fetched; bootstrap goes on.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
if [ "$#" -gt 0 ]; then PIP=("$@"); else PIP=(python3 -m pip --disable-pip-version-check); fi

version=$(sed -n 's/^daqp==\([0-9][0-9A-Za-z.]*\).*/\1/p' "$ROOT/requirements.txt")
if [ -z "$version" ]; then
    echo "requirements.txt pins no daqp==<version>" >&2
    exit 1
fi
dest=$BUILD/daqp-$version
if [ -f "$dest/csrc/src/daqp.c" ] && [ -f "$dest/LICENSE" ]; then
    echo "$dest"
    exit 0
fi
mkdir -p "$BUILD/daqp-sdist"
tarball=$BUILD/daqp-sdist/daqp-$version.tar.gz
if [ ! -f "$tarball" ]; then
    # the sdist only (--no-binary): pip prepares its metadata in an isolated build environment (a few seconds)
    "${PIP[@]}" download "daqp==$version" --no-binary :all: --no-deps -d "$BUILD/daqp-sdist" >&2 || {
        echo "pip could not fetch daqp==$version's sdist" >&2
        exit 1
    }
fi
rm -rf "$dest"
tar -xzf "$tarball" -C "$BUILD"  # its top folder is daqp-<version>/: csrc/src, csrc/include, LICENSE (MIT)
if [ ! -f "$dest/csrc/src/daqp.c" ] || [ ! -f "$dest/LICENSE" ]; then
    echo "$tarball holds no csrc/src/daqp.c or no LICENSE" >&2
    exit 1
fi
echo "$dest"

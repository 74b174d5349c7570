#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a consumer
# project with find_package(Blink), and a C file compiled with pkg-config.
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/e2e/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$(LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer")
echo "find_package consumer: $out"
[[ $out == "Blink "* ]]

libdir=$(ls -d "$work/prefix"/lib*/pkgconfig | head -1)
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs blink)
cc "$src/tests/e2e/consumer/consumer.c" -o "$work/pc_consumer" $flags
out=$(LD_LIBRARY_PATH="$(dirname "$libdir"):${LD_LIBRARY_PATH:-}" "$work/pc_consumer")
echo "pkg-config consumer: $out"
[[ $out == "Blink "* ]]
echo "install_consumer: OK"

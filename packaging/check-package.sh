#!/usr/bin/env bash
# CTest packaging_deb: builds the Debian packages from a build tree, unpacks them into a temporary
# root and runs the unpacked programs, then checks them the way Debian would.
#
#   packaging/check-package.sh BUILD_DIR [SOURCE_DIR]
#
# 1. `cmake --install` into a staging prefix: the layout every installation gets;
# 2. `cpack -G DEB`: ampgan-studio and (where they were built) ampgan-studio-cuda and -mpi;
#    every file `cmake --install` lays out must be in exactly one of them, and their version is
#    packaging/changelog's newest entry;
# 3. the unpacked ampgan: --version, a 2-step training run on synthetic data, and `devices`
#    alone, with the CUDA package, and with it but without NVIDIA's libraries: it must say why
#    no GPU is usable, never crash; every program exports what the CUDA plug-in needs from it;
#    with the MPI package, a 2-rank run under mpirun (where mpirun is installed);
# 4. the unpacked ampgan-studio: --version and --help, then the window itself (offscreen) for a
#    2-step run and a screenshot;
# 5. the man pages document every command and option that the programs' --help lists;
# 6. desktop-file-validate, appstreamcli validate --no-net, lintian (errors fail; warnings and
#    infos are printed).
# Tools: dpkg-dev, file, binutils, desktop-file-utils, appstream, lintian (scripts/setup.sh --dev).
# Set AMPGAN_KEEP_PACKAGES=DIR to keep the .deb files there.
set -euo pipefail

build=$(cd "${1:?usage: check-package.sh BUILD_DIR [SOURCE_DIR]}" && pwd)
src=$(cd "${2:-$(dirname "$0")/..}" && pwd)
cpack=${CPACK:-cpack}
cmake=${CMAKE:-cmake}
t0=$SECONDS

step() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - t0)); }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

missing=()
for tool in "$cpack" "$cmake" dpkg-deb dpkg-shlibdeps dpkg-parsechangelog file nm readelf desktop-file-validate appstreamcli lintian; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  fail "missing tools: ${missing[*]} (Debian packages dpkg-dev, file, binutils, desktop-file-utils, appstream, lintian: scripts/setup.sh --dev installs them)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ampgan-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake" 2>/dev/null | head -n1)
[[ -n "$version" ]] || fail "no CPACK_PACKAGE_VERSION in $build/CPackConfig.cmake (configure the build first)"

# ---- 1. the installed layout ----------------------------------------------------------------
step "cmake --install $build --prefix <tmp>/inst"
"$cmake" --install "$build" --prefix "$work/inst" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  fail "cmake --install failed"
}
(cd "$work/inst" && find . -type f | sed 's|^\./||' | sort -u) >"$work/installed.txt"
sed 's/^/  /' "$work/installed.txt"

# ---- 2. the packages ------------------------------------------------------------------------
step "cpack -G DEB"
(cd "$work" && "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg") >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  fail "cpack failed"
}
shopt -s nullglob
debs=("$work"/pkg/*.deb)
((${#debs[@]})) || fail "cpack made no .deb (see above)"
main="$work/pkg/ampgan-studio_${version}_$(dpkg --print-architecture).deb"
cuda="$work/pkg/ampgan-studio-cuda_${version}_$(dpkg --print-architecture).deb"
[[ -f "$main" ]] || fail "no $(basename "$main") among: ${debs[*]##*/}"
for deb in "${debs[@]}"; do
  printf '\n%s (%s KiB)\n' "${deb##*/}" $(($(stat -c %s "$deb") / 1024))
  dpkg-deb -f "$deb" Package Version Architecture Section Installed-Size Depends Recommends Suggests | sed 's/^/  /'
done
if [[ -n "${AMPGAN_KEEP_PACKAGES:-}" ]]; then
  mkdir -p "$AMPGAN_KEEP_PACKAGES" && cp "${debs[@]}" "$AMPGAN_KEEP_PACKAGES"/
fi

step "the packages hold what cmake --install lays out, each file once"
for deb in "${debs[@]}"; do
  dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | sed 's|^\./usr/||'
done | sort >"$work/packaged-all.txt"
sort -u "$work/packaged-all.txt" >"$work/packaged.txt"
dups=$(uniq -d "$work/packaged-all.txt")
[[ -z "$dups" ]] || fail "files in more than one package: $dups"
if ! diff -u "$work/installed.txt" "$work/packaged.txt"; then
  fail "cmake --install and the packages differ (- only installed, + only packaged): give new install() rules a COMPONENT (packaging/CMakeLists.txt)"
fi
echo "ok: $(wc -l <"$work/packaged.txt") files"

step "the packages' version is packaging/changelog's newest"
cl_version=$(dpkg-parsechangelog -l "$src/packaging/changelog" -S Version)
for deb in "${debs[@]}"; do
  [[ "$(dpkg-deb -f "$deb" Version)" == "$cl_version" ]] ||
    fail "${deb##*/} is version $(dpkg-deb -f "$deb" Version), packaging/changelog's newest entry $cl_version: add an entry"
done
echo "ok: $cl_version"

# ---- 3. the unpacked ampgan -----------------------------------------------------------------
root="$work/root"
dpkg-deb -x "$main" "$root"
bin="$root/usr/bin"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache"
export XDG_RUNTIME_DIR="$work/runtime"
mkdir -p "$HOME" && mkdir -m 700 "$XDG_RUNTIME_DIR"
export AMPGAN_THREADS=2

step "ampgan --version"
out=$("$bin/ampgan" --version)
echo "$out"
[[ "$out" == "ampgan $version" ]] || fail "expected 'ampgan $version'"

step "ampgan train --dataset synthetic --steps 2 (unpacked)"
"$bin/ampgan" train --dataset synthetic --steps 2 --width 8 --batch 8 --synthetic-count 64 --backend cpu \
  --out "$work/run" || fail "ampgan train failed"
for f in config.json metrics.csv events.jsonl; do
  [[ -s "$work/run/$f" ]] || fail "the run folder has no $f"
done
compgen -G "$work/run/checkpoints/*.safetensors" >/dev/null || fail "the run folder has no checkpoint"
compgen -G "$work/run/samples/*.png" >/dev/null || fail "the run folder has no sample grid"
echo "ok: the run folder has $(find "$work/run" -type f | wc -l) files"

check_devices() {  # ampgan devices: exits 0, names a usable GPU or says why there is none
  local out
  out=$("$bin/ampgan" devices 2>&1) || {
    echo "$out"
    fail "ampgan devices failed"
  }
  echo "$out"
  grep -q '^cpu ' <<<"$out" || fail "ampgan devices did not list the CPU"
  grep -qE '^cuda:[0-9]|^no usable NVIDIA GPU: .{20,}' <<<"$out" || fail "ampgan devices neither listed a GPU nor said why there is none"
}
# Without ampgan-studio-cuda the programs say "this installation has no CUDA backend", except
# that programs built beside a CUDA plug-in also look in their build tree (AMPGAN_BUILD_PLUGIN_DIR),
# which this test runs next to: only "no crash, a reason" is checked here.
step "ampgan devices (ampgan-studio alone)"
check_devices
if [[ -f "$cuda" ]]; then
  step "ampgan devices (with ampgan-studio-cuda)"
  dpkg-deb -x "$cuda" "$root"
  plugin=$(find "$root/usr/lib" -name libampgan-cuda.so | head -n1)
  [[ -n "$plugin" ]] || fail "ampgan-studio-cuda has no libampgan-cuda.so"
  echo "plug-in: ${plugin#"$root"}"
  check_devices
  # A machine without NVIDIA's libraries: the dynamic loader, told to ignore ld.so.cache, finds
  # only the system's default folders, where Debian's libraries are and NVIDIA's are not.
  step "ampgan devices with ampgan-studio-cuda but without NVIDIA's libraries"
  interp=$(readelf -l "$bin/ampgan" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
  out=$(AMPGAN_CUDA_PLUGIN="$plugin" "$interp" --inhibit-cache "$bin/ampgan" devices 2>&1) || {
    echo "$out"
    fail "ampgan devices failed without NVIDIA's libraries"
  }
  echo "$out"
  grep -q '^cpu ' <<<"$out" || fail "ampgan devices did not list the CPU"
  if grep -q 'could not be loaded' <<<"$out"; then
    grep -qE 'lib[a-zA-Z]+\.so\.[0-9]+: cannot open' <<<"$out" || fail "ampgan devices did not name the missing library"
    grep -q 'cuDNN' <<<"$out" || fail "ampgan devices did not say which NVIDIA libraries the backend needs"
  fi
  # The plug-in takes the engine's functions from the program that loads it: every program must
  # export each one it uses (cmake: ampgan_link_engine), or the plug-in cannot load in it.
  nm -D --undefined-only "$plugin" | awk '{print $NF}' | grep '6ampgan' | sort -u >"$work/plugin-needs.txt"
  for prog in "$bin"/*; do
    nm -D --defined-only "$prog" | awk '{print $NF}' | sort -u >"$work/exports.txt"
    lacking=$(comm -23 "$work/plugin-needs.txt" "$work/exports.txt" | wc -l)
    ((lacking == 0)) || fail "${prog##*/} does not export $lacking of the $(wc -l <"$work/plugin-needs.txt") engine functions the CUDA plug-in needs, so the plug-in cannot load in it: link it as ampgan_link_engine (core/CMakeLists.txt) does, with ENABLE_EXPORTS and the whole ampgan_engine"
    echo "ok: ${prog##*/} exports the $(wc -l <"$work/plugin-needs.txt") engine functions the plug-in needs"
  done
fi

mpi="$work/pkg/ampgan-studio-mpi_${version}_$(dpkg --print-architecture).deb"
if [[ -f "$mpi" ]]; then
  step "mpirun -np 2 ampgan train (with ampgan-studio-mpi)"
  dpkg-deb -f "$mpi" Depends | grep -q 'libopenmpi' || fail "ampgan-studio-mpi does not depend on Open MPI's library"
  dpkg-deb -x "$mpi" "$root"
  mpi_plugin=$(find "$root/usr/lib" -name libampgan-mpi.so | head -n1)
  [[ -n "$mpi_plugin" ]] || fail "ampgan-studio-mpi has no libampgan-mpi.so"
  echo "plug-in: ${mpi_plugin#"$root"}"
  if command -v mpirun >/dev/null; then
    # The packaged plug-in, not the build tree's (programs built here also look there).
    out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 AMPGAN_THREADS=1 timeout 300 \
      mpirun -np 2 --oversubscribe -x AMPGAN_MPI_PLUGIN="$mpi_plugin" "$bin/ampgan" train --dataset synthetic \
      --synthetic-count 64 --steps 2 --width 8 --batch 8 --backend cpu --out "$work/mpi-run" 2>&1) || {
      echo "$out"
      fail "mpirun -np 2 ampgan train failed with the packaged MPI plug-in"
    }
    grep -q '"world_size": *2' "$work/mpi-run/config.json" || fail "the 2-rank run's config.json does not record world_size 2"
    echo "ok: 2 ranks trained 2 steps ($(grep -o 'global batch [^;]*' <<<"$out" | head -n1))"
  fi
fi

# ---- 4. the unpacked ampgan-studio ----------------------------------------------------------
if [[ -x "$bin/ampgan-studio" ]]; then
  step "ampgan-studio --version, --help (offscreen)"
  out=$(QT_QPA_PLATFORM=offscreen "$bin/ampgan-studio" --version)
  echo "$out"
  [[ "$out" == "ampgan-studio $version" ]] || fail "expected 'ampgan-studio $version'"
  QT_QPA_PLATFORM=offscreen "$bin/ampgan-studio" --help >"$work/studio-help.txt" || fail "ampgan-studio --help failed"
  grep -q -- '--start' "$work/studio-help.txt" || fail "ampgan-studio --help does not list --start"
  echo "ok: --help lists $(grep -c -- '^ *-' "$work/studio-help.txt") options"

  step "ampgan-studio opens its window, trains 2 steps and takes a screenshot (offscreen)"
  QT_QPA_PLATFORM=offscreen QT_LOGGING_RULES='qt.qpa.*=false' timeout 120 "$bin/ampgan-studio" --fresh \
    --dataset synthetic --steps 2 --width 8 --batch 8 --backend cpu --out "$work/gui-run" --start \
    --screenshot "$work/window.png" --quit-after-screenshot || fail "ampgan-studio failed (status $?)"
  [[ -s "$work/window.png" && -s "$work/gui-run/metrics.csv" ]] || fail "ampgan-studio wrote no screenshot or no run"
  echo "ok: $(file -b "$work/window.png" | cut -d, -f1-2)"
fi

# ---- 5. the man pages document every command and option the programs' --help lists ------------
options_of() {  # the --options a --help text defines: "  --name VALUE  text" or "  -h, --help"
  grep -E '^ +-' | sed -E 's/^ +(-[a-zA-Z], )?//' | grep -oE '^--[a-z0-9][a-z0-9-]*' | sort -u
}
documents() {  # documents MANPAGE.gz TEXT...: each TEXT is an option or command the page explains
  local page=$1 missing=()
  shift
  zcat "$page" | sed 's/\\-/-/g' >"$work/man.txt"
  for word in "$@"; do
    grep -qE -- "(^|[^a-z0-9-])${word}([^a-z0-9-]|\$)" "$work/man.txt" || missing+=("$word")
  done
  ((${#missing[@]} == 0)) || fail "${page##*/} does not document: ${missing[*]} (packaging/man/)"
}
step "the man pages cover every command and option of --help"
man1="$root/usr/share/man/man1"
mapfile -t commands < <("$bin/ampgan" --help | sed -n '/^Commands:/,/^$/p' | grep -oE '^  [a-z][a-z-]+' | tr -d ' ')
((${#commands[@]})) || fail "found no commands in ampgan --help"
documents "$man1/ampgan.1.gz" "${commands[@]}"
for c in "${commands[@]}"; do
  mapfile -t opts < <("$bin/ampgan" "$c" --help | options_of)
  documents "$man1/ampgan.1.gz" "${opts[@]}"
done
echo "ok: ampgan.1 documents ${#commands[@]} commands and their options"
if [[ -x "$bin/ampgan-studio" ]]; then
  mapfile -t opts < <("$bin/ampgan-studio" --help | options_of)
  documents "$man1/ampgan-studio.1.gz" "${opts[@]}"
  echo "ok: ampgan-studio.1 documents its ${#opts[@]} options"
fi

# ---- 6. validators --------------------------------------------------------------------------
desktop=("$root"/usr/share/applications/*.desktop)
metainfo=("$root"/usr/share/metainfo/*.metainfo.xml)
if [[ -x "$bin/ampgan-studio" ]]; then
  ((${#desktop[@]} == 1)) || fail "expected one desktop entry, found ${#desktop[@]}"
  ((${#metainfo[@]} == 1)) || fail "expected one metainfo file, found ${#metainfo[@]}"
  step "desktop-file-validate ${desktop[0]#"$root"}"
  desktop-file-validate "${desktop[0]}" || fail "desktop-file-validate"
  echo ok
  step "appstreamcli validate --no-net ${metainfo[0]#"$root"}"
  appstreamcli validate --no-net --explain "${metainfo[0]}" || fail "appstreamcli validate"
  app_id=$(basename "${desktop[0]}" .desktop)
  grep -q "<id>$app_id</id>" "${metainfo[0]}" || fail "the metainfo's <id> is not $app_id"
  grep -q "^Icon=$app_id\$" "${desktop[0]}" || fail "the desktop entry's Icon is not $app_id"
  for s in 16 22 24 32 48 64 128 256; do
    [[ -f "$root/usr/share/icons/hicolor/${s}x${s}/apps/$app_id.png" ]] || fail "no ${s}x${s} icon"
  done
  [[ -f "$root/usr/share/icons/hicolor/scalable/apps/$app_id.svg" ]] || fail "no scalable icon"
fi

step "lintian ${debs[*]##*/}"
# Errors fail the test; warnings and infos are shown. Running as root (CI) is expected.
lintian --display-info --pedantic --fail-on error "${debs[@]}" 2>&1 | tee "$work/lintian.txt" || fail "lintian reports errors (E: lines above)"
echo "lintian: $(grep -c '^E: ' "$work/lintian.txt" || true) errors, $(grep -c '^W: ' "$work/lintian.txt" || true) warnings, $(grep -c '^[IP]: ' "$work/lintian.txt" || true) infos"

step "all packaging checks passed"

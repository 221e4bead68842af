#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The modulefile make installs ($(datadir)/modulefiles/weft/VERSION, from
# contrib/modulefiles/weft.in) loads in environment-modules' modulecmd and in
# Lmod, whichever is installed, from a clean environment: it prepends weft's
# configured directories (as make knows them) to PATH, MANPATH,
# PKG_CONFIG_PATH, CPATH, LIBRARY_PATH, LD_LIBRARY_PATH and XDG_DATA_DIRS
# (keeping its default, for the bash completion), sets WEFT_ROOT,
# answers whatis and help, and unloads to the environment it started from.
# The same file made for prefix /usr (the Debian package's directories) puts
# no system directory anywhere: no MANPATH (which would replace man's own
# search path), LD_LIBRARY_PATH, LIBRARY_PATH, CPATH, PKG_CONFIG_PATH or
# XDG_DATA_DIRS, PATH as it was; only WEFT_ROOT=/usr.
# With neither installed (Debian: environment-modules, or lmod; they
# conflict) the file is run by tclsh with the module commands stubbed, and
# the test says so; without tclsh either it is skipped.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
module="$WEFT_BUILDDIR/weft.module"
fail=0 tried=0
[ -f "$module" ] || fail "$module was not built"

# What make substituted: its own variables, read back from the build's Makefile.
# (make check's own flags and jobserver are not passed on to it.)
dirs() { printf 'weft-print:\n\t@echo "$(%s)"\n' "$1" |
         env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
           make -s --no-print-directory -C "$WEFT_BUILDDIR" -f Makefile -f - weft-print; }
version=$(dirs VERSION) prefix=$(dirs prefix) bindir=$(dirs bindir) mandir=$(dirs mandir)
libdir=$(dirs libdir) includedir=$(dirs includedir) datadir=$(dirs datadir)
mkdir -p "$tmp/modulefiles/weft"
cp "$module" "$tmp/modulefiles/weft/$version"
clean="env -i HOME=$tmp PATH=/usr/bin:/bin MODULEPATH=$tmp/modulefiles"

check() { # tool name, file with the environment after load (env output)
  for want in "PATH=$bindir:/usr/bin:/bin" "MANPATH=$mandir" "PKG_CONFIG_PATH=$libdir/pkgconfig" \
              "CPATH=$includedir" "LIBRARY_PATH=$libdir" "LD_LIBRARY_PATH=$libdir" "WEFT_ROOT=$prefix"; do
    grep -q -x -F -e "$want" "$2" || grep -q -x -e "${want%%=*}=${want#*=}:*" "$2" ||
      { echo "FAIL $1: no $want after module load:"; grep -e "^${want%%=*}=" "$2"; fail=1; }
  done
  # datadir first (bash-completion's look-up), the default kept after it.
  x=$(sed -n 's/^XDG_DATA_DIRS=//p' "$2")
  case ":$x:" in
    ":$datadir:"*) case ":$x:" in *":/usr/share:"*) x= ;; esac ;;
  esac
  [ -z "$x" ] || { echo "FAIL $1: XDG_DATA_DIRS='$x' after module load, not $datadir first and /usr/share kept"; fail=1; }
}

# environment-modules 4/5: modulecmd writes shell code to eval.
if command -v modulecmd >/dev/null 2>&1; then
  tried=1
  $clean sh -c 'eval "$(modulecmd sh load weft)" && env' >"$tmp/loaded" 2>"$tmp/err" ||
    { echo "FAIL modulecmd load weft: $(cat "$tmp/err")"; fail=1; }
  check modulecmd "$tmp/loaded"
  $clean sh -c 'eval "$(modulecmd sh load weft)" && eval "$(modulecmd sh unload weft)" && env' \
    >"$tmp/unloaded" 2>"$tmp/err"
  grep -q -x 'PATH=/usr/bin:/bin' "$tmp/unloaded" && ! grep -q -e '^WEFT_ROOT=' -e '^XDG_DATA_DIRS=.' "$tmp/unloaded" ||
    { echo "FAIL modulecmd unload weft:"; cat "$tmp/unloaded" "$tmp/err"; fail=1; }
  $clean modulecmd sh whatis weft 2>&1 | grep -q "weft $version: GPU- and NIC-aware launcher" ||
    { echo "FAIL modulecmd whatis weft"; fail=1; }
  $clean modulecmd sh help weft 2>&1 | grep -q "Examples: .*/examples" ||
    { echo "FAIL modulecmd help weft"; fail=1; }
  [ $fail = 0 ] && echo "ok environment-modules: $(modulecmd sh --version 2>&1 | head -1)"
fi

# Made for prefix /usr, as the Debian package is: nothing the system searches already.
mkdir -p "$tmp/usr/weft"
sed -e "s|@VERSION@|$version|g" -e 's|@prefix@|/usr|g' -e 's|@bindir@|/usr/bin|g' \
  -e 's|@mandir@|/usr/share/man|g' -e 's|@libdir@|/usr/lib/x86_64-linux-gnu|g' \
  -e 's|@includedir@|/usr/include|g' -e 's|@datadir@|/usr/share|g' -e 's|@pkgdatadir@|/usr/share/weft|g' \
  -e 's|@pkglibexecdir@|/usr/libexec/weft|g' -e 's|@modulefilesdir@|/usr/share/modules/modulefiles|g' \
  "$WEFT_TOPDIR/contrib/modulefiles/weft.in" >"$tmp/usr/weft/$version"
if command -v modulecmd >/dev/null 2>&1; then
  env -i HOME="$tmp" PATH=/usr/bin:/bin MODULEPATH="$tmp/usr" \
    sh -c 'eval "$(modulecmd sh load weft)" && env' >"$tmp/usr.env" 2>"$tmp/err" ||
    { echo "FAIL modulecmd load weft (prefix /usr): $(cat "$tmp/err")"; fail=1; }
  if grep -e '^MANPATH=' -e '^LD_LIBRARY_PATH=' -e '^LIBRARY_PATH=' -e '^CPATH=' -e '^PKG_CONFIG_PATH=' \
       -e '^XDG_DATA_DIRS=' "$tmp/usr.env" || ! grep -q -x 'PATH=/usr/bin:/bin' "$tmp/usr.env" ||
     ! grep -q -x 'WEFT_ROOT=/usr' "$tmp/usr.env"; then
    echo "FAIL prefix /usr: the module puts system directories in the environment (above), or lost PATH/WEFT_ROOT"
    fail=1
  else
    echo "ok prefix /usr: no system directory in MANPATH, LD_LIBRARY_PATH, LIBRARY_PATH, CPATH, PKG_CONFIG_PATH, XDG_DATA_DIRS"
  fi
fi

# Lmod reads Tcl modulefiles too.
lmod=${LMOD_CMD:-/usr/share/lmod/lmod/libexec/lmod}
if [ -x "$lmod" ]; then
  tried=1
  $clean sh -c "eval \"\$($lmod sh load weft)\" && env" >"$tmp/lmod" 2>"$tmp/err" ||
    { echo "FAIL Lmod load weft: $(cat "$tmp/err")"; fail=1; }
  check Lmod "$tmp/lmod"
  [ $fail = 0 ] && echo "ok Lmod: $lmod"
fi

if [ $tried = 0 ]; then
  command -v tclsh >/dev/null 2>&1 ||
    skip "neither modulecmd (environment-modules) nor Lmod nor tclsh is installed"
  echo "note: neither environment-modules' modulecmd nor Lmod is installed: tclsh runs the file instead"
  cat >"$tmp/stub.tcl" <<'EOF'
proc prepend-path {var dir} { puts "$var=$dir" }
proc append-path {var dir} { puts "append $var=$dir" }
proc setenv {var value} { puts "$var=$value" }
proc module-whatis {text} { puts "whatis $text" }
proc conflict {args} {}
source [lindex $argv 0]
ModulesHelp
EOF
  env -u XDG_DATA_DIRS -u WEFT_XDG_DEFAULTS tclsh "$tmp/stub.tcl" "$module" >"$tmp/tcl" 2>&1 ||
    { echo "FAIL tclsh: $(cat "$tmp/tcl")"; fail=1; }
  sed -i "s|^PATH=.*|&:/usr/bin:/bin|" "$tmp/tcl"
  # What the appends before the prepend make of XDG_DATA_DIRS.
  grep -q -x 'append XDG_DATA_DIRS=/usr/share' "$tmp/tcl" &&
    sed -i "s|^XDG_DATA_DIRS=.*|&:/usr/local/share:/usr/share|" "$tmp/tcl"
  check tclsh "$tmp/tcl"
fi
exit $fail

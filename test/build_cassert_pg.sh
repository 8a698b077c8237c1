#!/usr/bin/env bash
#
# build_cassert_pg.sh -- build an assert-enabled PostgreSQL 15 for pg_fastckpt's
# test suites, from Debian's postgresql-15 source package.
#
# Usage:
#   PG_CONFIG=$(bash test/build_cassert_pg.sh | tail -1)
#   make PG_CONFIG="$PG_CONFIG" && make PG_CONFIG="$PG_CONFIG" install installcheck
#
# Environment:
#   FASTCKPT_CASSERT_PREFIX   install prefix        (default /opt/pg15-cassert)
#   FASTCKPT_CASSERT_BUILD    work/build directory  (default /var/tmp/pg15-cassert-build)
#   FASTCKPT_CASSERT_VERSION  Debian source version to try first (default: the
#                             version of the installed postgresql-15 package,
#                             else the newest one apt knows about).  If it cannot
#                             be downloaded, the other versions apt lists are
#                             tried, newest first.
#   FASTCKPT_CASSERT_CFLAGS   CFLAGS for the build  (default "-O1 -g -fno-omit-frame-pointer")
#   FASTCKPT_CASSERT_JOBS     make parallelism      (default: nproc)
#
# Progress messages ("build_cassert_pg: ...") go to stderr; the only thing
# written to stdout is the path of the installed pg_config, as the last line.
# Compiler/apt output goes to $FASTCKPT_CASSERT_BUILD/build.log, whose tail is
# printed if anything fails.
#
# When $PREFIX/bin/pg_config exists and the stamp file in $PREFIX records the
# same requested source version and configure flags, the script prints the
# pg_config path and exits immediately (no apt, no network).
#
# Layout note: because the prefix contains neither "postgres" nor "pgsql",
# PostgreSQL puts its private files under $PREFIX/lib/postgresql and
# $PREFIX/share/postgresql; PGXS therefore lives in $PREFIX/lib/postgresql/pgxs
# (what `pg_config --pgxs` reports).  A convenience symlink
# $PREFIX/lib/pgxs -> postgresql/pgxs is also created.

set -euo pipefail
umask 022

PROG=build_cassert_pg
PREFIX=${FASTCKPT_CASSERT_PREFIX:-/opt/pg15-cassert}
WORK=${FASTCKPT_CASSERT_BUILD:-/var/tmp/pg15-cassert-build}
CFLAGS_BUILD=${FASTCKPT_CASSERT_CFLAGS:--O1 -g -fno-omit-frame-pointer}
JOBS=${FASTCKPT_CASSERT_JOBS:-$(nproc 2>/dev/null || echo 2)}
SRCPKG=postgresql-15
# Bump when the build recipe changes in a way that requires a rebuild.
RECIPE=1

STAMP=$PREFIX/fastckpt-cassert.stamp
LOG=$WORK/build.log

say() { echo "$PROG: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

case $PREFIX in
	/*) ;;
	*) die "FASTCKPT_CASSERT_PREFIX must be an absolute path (got '$PREFIX')" ;;
esac
PREFIX=${PREFIX%/}
[ -n "$PREFIX" ] || die "refusing to use / as prefix"
case $WORK in
	/*) ;;
	*) die "FASTCKPT_CASSERT_BUILD must be an absolute path (got '$WORK')" ;;
esac
WORK=${WORK%/}
[ -n "$WORK" ] || die "refusing to use / as build directory"

CONFIGURE_FLAGS=(
	"--prefix=$PREFIX"
	--enable-cassert
	--enable-debug
	--enable-tap-tests
	--without-icu
)

# Which Debian source version we want.  This is computed without touching the
# network so that the "already built" check below stays instant.
if [ -n "${FASTCKPT_CASSERT_VERSION:-}" ]; then
	WANT_VERSION=$FASTCKPT_CASSERT_VERSION
elif WANT_VERSION=$(dpkg-query -W -f='${Version}' "$SRCPKG" 2>/dev/null) && [ -n "$WANT_VERSION" ]; then
	:
else
	WANT_VERSION=newest
fi

# Everything that must match for an existing install to be reused.
stamp_key() {
	printf 'recipe=%s\nrequested=%s\nconfigure=%s\ncflags=%s\n' \
		"$RECIPE" "$WANT_VERSION" "${CONFIGURE_FLAGS[*]}" "$CFLAGS_BUILD"
}

already_built() {
	[ -x "$PREFIX/bin/pg_config" ] && [ -f "$STAMP" ] || return 1
	# The stamp has the key lines followed by "source=<version>".
	[ "$(grep -v '^source=' "$STAMP")" = "$(stamp_key)" ]
}

if already_built; then
	say "up to date ($(sed -n 's/^source=//p' "$STAMP"), $PREFIX)"
	echo "$PREFIX/bin/pg_config"
	exit 0
fi

# ---------------------------------------------------------------------------
# Real work from here on.

mkdir -p "$WORK"
# Serialise concurrent invocations (e.g. two test runners starting at once).
exec 9>"$WORK/.lock"
if ! flock -n 9; then
	say "another build is running in $WORK, waiting for it"
	flock 9
fi
if already_built; then
	say "up to date ($(sed -n 's/^source=//p' "$STAMP"), $PREFIX)"
	echo "$PREFIX/bin/pg_config"
	exit 0
fi

# Refuse to clobber a prefix this script did not create.
if [ -e "$PREFIX" ] && [ ! -f "$STAMP" ] && [ -n "$(ls -A "$PREFIX" 2>/dev/null)" ]; then
	die "$PREFIX exists, is not empty and was not created by this script; remove it or set FASTCKPT_CASSERT_PREFIX"
fi

: >"$LOG"
on_exit() {
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		say "FAILED (exit $rc); last lines of $LOG:"
		tail -n 60 "$LOG" >&2 || true
		say "FAILED; full log: $LOG"
	fi
}
trap on_exit EXIT

# Run a command with its output going to the log.
run() {
	{ printf '+'; printf ' %q' "$@"; echo; } >>"$LOG"
	"$@" >>"$LOG" 2>&1
}

# ---------------------------------------------------------------------------
# 1. Build dependencies.
#
# The release tarball ships the bison/flex outputs, so bison and flex are not
# needed.  libipc-run-perl is required by --enable-tap-tests; prove comes with
# perl.  bzip2 is needed to unpack the .orig.tar.bz2.

DEPS=(build-essential perl libipc-run-perl libreadline-dev zlib1g-dev bzip2 pkg-config)
missing=()
for p in "${DEPS[@]}"; do
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
		missing+=("$p")
	fi
done
if [ "${#missing[@]}" -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "missing build dependencies (${missing[*]}); run as root or install them"
	say "installing build dependencies: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	run apt-get update -q
	run apt-get install -y -q --no-install-recommends "${missing[@]}"
else
	say "build dependencies present"
fi

# ---------------------------------------------------------------------------
# 2. Source: apt-get source --download-only, trying the wanted version first.

apt_updated=no
apt_update_once() {
	[ "$apt_updated" = no ] && [ "$(id -u)" -eq 0 ] || return 1
	say "running apt-get update"
	run apt-get update -q
	apt_updated=yes
}

known_versions() {
	apt-cache showsrc "$SRCPKG" 2>/dev/null | sed -n 's/^Version: //p' | sort -u | sort -rV
}

upstream_of() {
	local v=${1#*:}	# drop epoch
	echo "${v%-*}"	# drop Debian revision
}

SRC_VERSION=
TARBALL=
# Try the wanted version, then every other version apt lists, newest first.
try_download() {
	local v up dldir tb
	local -a candidates=()
	[ "$WANT_VERSION" != newest ] && candidates+=("$WANT_VERSION")
	while read -r v; do
		[ "$v" = "$WANT_VERSION" ] || candidates+=("$v")
	done < <(known_versions)
	for v in "${candidates[@]}"; do
		up=$(upstream_of "$v")
		dldir=$WORK/download/$v
		tb=$dldir/${SRCPKG}_${up}.orig.tar.bz2
		if [ -f "$dldir/.complete" ] && [ -f "$tb" ]; then
			say "using previously downloaded source $SRCPKG $v"
			SRC_VERSION=$v TARBALL=$tb
			return 0
		fi
		say "downloading source $SRCPKG=$v"
		rm -rf "$dldir" "$dldir.tmp"
		mkdir -p "$dldir.tmp"
		# As root apt warns that it cannot drop privileges to _apt; harmless.
		if (cd "$dldir.tmp" && run apt-get source -q --download-only "$SRCPKG=$v") &&
			[ -f "$dldir.tmp/${SRCPKG}_${up}.orig.tar.bz2" ]; then
			touch "$dldir.tmp/.complete"
			mv "$dldir.tmp" "$dldir"
			SRC_VERSION=$v TARBALL=$tb
			return 0
		fi
		rm -rf "$dldir.tmp"
		say "could not download $SRCPKG=$v"
	done
	TRIED="${candidates[*]}"
	return 1
}

# A fresh Debian image lists binary packages only.  As root, add a deb-src
# twin of every deb822 "Types: deb" entry (same URIs, suites, keys), once.
DEB_SRC_LIST=/etc/apt/sources.list.d/pg-fastckpt-deb-src.sources
enable_deb_src() {
	local f
	[ "$(id -u)" -eq 0 ] && [ ! -e "$DEB_SRC_LIST" ] || return 1
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && [ "$f" != "$DEB_SRC_LIST" ] || continue
		grep -q '^Types:.*\bdeb\b' "$f" && grep -q '^URIs:.*debian' "$f" || continue
		sed -n '/^Types:/s/.*/Types: deb-src/p; /^Types:/!p' "$f"
		echo
	done >"$DEB_SRC_LIST.tmp"
	# The one-line format, for images that still use sources.list.
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb \(.*debian.*\)/deb-src \1/p' /etc/apt/sources.list >"$DEB_SRC_LIST.list.tmp"
		[ -s "$DEB_SRC_LIST.list.tmp" ] &&
			mv "$DEB_SRC_LIST.list.tmp" /etc/apt/sources.list.d/pg-fastckpt-deb-src.list
		rm -f "$DEB_SRC_LIST.list.tmp"
	fi
	if [ -s "$DEB_SRC_LIST.tmp" ]; then
		mv "$DEB_SRC_LIST.tmp" "$DEB_SRC_LIST"
	else
		rm -f "$DEB_SRC_LIST.tmp"
	fi
	say "enabled Debian source packages (deb-src)"
	apt_updated=no
	return 0
}

TRIED=
if [ -z "$(known_versions)" ]; then
	say "apt has no source index for $SRCPKG"
	apt_update_once || true
	[ -n "$(known_versions)" ] || { enable_deb_src && apt_update_once; } || true
fi
[ -n "$(known_versions)" ] ||
	die "apt-cache showsrc $SRCPKG lists no versions; is deb-src enabled in /etc/apt/sources.list.d (and apt-get update run)?"
if ! try_download; then
	# The package lists may be stale (old versions purged from the mirror).
	apt_update_once && try_download ||
		die "no $SRCPKG source version could be downloaded (tried: $TRIED)"
fi
[ "$SRC_VERSION" = "$WANT_VERSION" ] || say "note: building $SRC_VERSION instead of $WANT_VERSION"

# ---------------------------------------------------------------------------
# 3. Unpack and configure (reusing an already configured tree from an
#    interrupted run if source version and flags are the same).

UPSTREAM=$(upstream_of "$SRC_VERSION")
SRCDIR=$WORK/postgresql-$UPSTREAM
CONF_KEY="$(stamp_key)
source=$SRC_VERSION"

if [ -f "$SRCDIR/.fastckpt-configured" ] && [ "$(cat "$SRCDIR/.fastckpt-configured")" = "$CONF_KEY" ] &&
	[ -f "$SRCDIR/src/Makefile.global" ]; then
	say "reusing configured tree $SRCDIR"
else
	say "unpacking $(basename "$TARBALL")"
	rm -rf "$SRCDIR"
	run tar -xjf "$TARBALL" -C "$WORK"
	[ -f "$SRCDIR/configure" ] || die "tarball did not unpack to $SRCDIR"
	say "configuring: ${CONFIGURE_FLAGS[*]} CFLAGS='$CFLAGS_BUILD'"
	(cd "$SRCDIR" && run ./configure "${CONFIGURE_FLAGS[@]}" CFLAGS="$CFLAGS_BUILD")
	printf '%s\n' "$CONF_KEY" >"$SRCDIR/.fastckpt-configured"
fi

# ---------------------------------------------------------------------------
# 4. Build.  This is src/Makefile's SUBDIRS list (same order; it is not
#    parallel-safe across directories) minus ecpg: server, libpq, client
#    programs, plpgsql, PGXS makefiles, pg_regress, isolation tester, TAP
#    perl modules.  contrib and docs are skipped.

SUBDIRS=(
	common port timezone backend backend/utils/mb/conversion_procs
	backend/snowball include interfaces/libpq
	backend/replication/libpqwalreceiver backend/replication/pgoutput
	fe_utils bin pl makefiles test/regress test/isolation test/perl
)

start=$(date +%s)
for d in "${SUBDIRS[@]}"; do
	say "building src/$d"
	run make -C "$SRCDIR/src/$d" -j"$JOBS"
done
say "build finished in $(( $(date +%s) - start ))s"

# ---------------------------------------------------------------------------
# 5. Install into a staging area, then move into place, so that $PREFIX is
#    never left half-installed.

STAGE=$WORK/stage
rm -rf "$STAGE"
say "installing (staging in $STAGE)"
run make -C "$SRCDIR/src" install-local DESTDIR="$STAGE"	# Makefile.global & co.
run make -C "$SRCDIR/config" install DESTDIR="$STAGE"	# install-sh, missing
for d in "${SUBDIRS[@]}"; do
	run make -C "$SRCDIR/src/$d" install DESTDIR="$STAGE"
done

NEW=$STAGE$PREFIX
# Where PGXS went, relative to the prefix (lib/postgresql/pgxs unless the
# prefix contains "postgres" or "pgsql").
PGXS_REL=$(cd "$NEW" && find lib -path '*/pgxs/src/makefiles/pgxs.mk' | head -n 1)
[ -n "$PGXS_REL" ] || die "install has no pgxs.mk"
PGXS_REL=${PGXS_REL%/src/makefiles/pgxs.mk}
PGXSDIR=$PREFIX/$PGXS_REL
for f in src/makefiles/pgxs.mk src/Makefile.global config/install-sh \
	src/test/regress/pg_regress src/test/isolation/pg_isolation_regress \
	src/test/isolation/isolationtester src/test/perl/PostgreSQL/Test/Cluster.pm; do
	[ -e "$NEW/$PGXS_REL/$f" ] || die "install is missing $PGXSDIR/$f"
done
# Convenience: also reachable as $PREFIX/lib/pgxs.
if [ "$PGXS_REL" != lib/pgxs ] && [ ! -e "$NEW/lib/pgxs" ]; then
	ln -s "${PGXS_REL#lib/}" "$NEW/lib/pgxs"
fi
chmod -R a+rX "$NEW"

{
	stamp_key
	echo "source=$SRC_VERSION"
} >"$NEW/$(basename "$STAMP")"

mkdir -p "$(dirname "$PREFIX")"
if [ -e "$PREFIX" ]; then
	rm -rf "$PREFIX.old"
	mv "$PREFIX" "$PREFIX.old"
fi
mv "$NEW" "$PREFIX"
rm -rf "$PREFIX.old" "$STAGE"

# ---------------------------------------------------------------------------
# 6. Sanity checks of the final install.

"$PREFIX/bin/postgres" --version >>"$LOG" 2>&1 || die "$PREFIX/bin/postgres does not run"
"$PREFIX/bin/pg_config" --configure | grep -q -- '--enable-cassert' ||
	die "$PREFIX/bin/pg_config does not report --enable-cassert"
say "installed $("$PREFIX/bin/postgres" --version) (Debian source $SRC_VERSION, assertions on) in $PREFIX"
say "PGXS: $PGXSDIR"
echo "$PREFIX/bin/pg_config"

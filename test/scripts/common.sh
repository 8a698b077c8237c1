# Shared helpers for pg_fastckpt's scripts: package installs, the non-root
# user PostgreSQL runs as, and a private copy of the source tree.
# Sourced, not run.

FC_USER=${FASTCKPT_TEST_USER:-fastckpt}
FC_DEBIAN_PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

fc_say() { echo "== $*"; }
fc_die() { echo "ERROR: $*" >&2; exit 1; }

# Install what the project needs from Debian, only if something is missing.
fc_install_packages() {
	local need=()
	local pkg
	for pkg in postgresql-15 postgresql-client-15 postgresql-server-dev-15 \
		libipc-run-perl libkrb5-dev build-essential rsync python3 locales; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
			need+=("$pkg")
	done
	if [ ${#need[@]} -gt 0 ]; then
		[ "$(id -u)" = 0 ] || fc_die "missing packages (${need[*]}); run as root to install them"
		fc_say "installing ${need[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
	fi
	# A locale whose money has no cents, for test/t/009_call_replay.pl.
	if ! locale -a 2>/dev/null | grep -qix 'ja_JP.utf8' && [ "$(id -u)" = 0 ]; then
		localedef -i ja_JP -f UTF-8 ja_JP.UTF-8 ||
			echo "could not make the ja_JP.UTF-8 locale; its test will be skipped"
	fi
	# Debian starts a default cluster on install; we never use it.
	if command -v pg_lsclusters >/dev/null && pg_lsclusters -h 2>/dev/null | grep -q online; then
		pg_lsclusters -h | awk '$4=="online"{print $1, $2}' | while read -r v c; do
			pg_ctlcluster "$v" "$c" stop || true
		done
	fi
}

# PostgreSQL refuses to run as root: make an unprivileged user for it.
fc_ensure_user() {
	if [ "$(id -u)" = 0 ]; then
		id "$FC_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$FC_USER"
	else
		FC_USER=$(id -un)
	fi
}

# Run a command as the unprivileged user, keeping the environment we set.
fc_as_user() {
	if [ "$(id -u)" = 0 ]; then
		su "$FC_USER" -s /bin/bash -c "$*"
	else
		bash -c "$*"
	fi
}

# Copy the tree (without .git) to a directory the user owns.
fc_private_copy() {
	local src=$1 dst=$2
	rm -rf "$dst"
	mkdir -p "$dst"
	rsync -a --exclude .git --exclude 'tmp_check*' --exclude results \
		--exclude output_iso --exclude '*.o' --exclude '*.so' "$src"/ "$dst"/
	[ "$(id -u)" = 0 ] && chown -R "$FC_USER" "$dst"
	return 0
}

# Build as the user, install as root (into PostgreSQL's directories).
fc_build_install() {
	local dir=$1 pg_config=$2
	fc_as_user "cd '$dir' && make -s PG_CONFIG='$pg_config' >build.log 2>&1" ||
		{ tail -40 "$dir/build.log"; fc_die "build failed"; }
	if [ "$(id -u)" = 0 ]; then
		make -s -C "$dir" PG_CONFIG="$pg_config" install >/dev/null
	else
		make -s -C "$dir" PG_CONFIG="$pg_config" install >/dev/null ||
			fc_die "make install failed (run as root, or own the PostgreSQL install)"
	fi
}

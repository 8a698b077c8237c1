"""Checkpoint benchmarks for fastckpt: overhead, latency over time, recovery.

Run by ckpt_bench.sh.  Three phases, selectable with --only:

  overhead  pgbench TPC-B on fastckpt (early lock release), checkpoints every
            second vs checkpoints off, interleaved rounds in one cluster:
            tps, mean/p99 latency from pgbench's per-transaction logs, and
            the checkpoints done during each run (fastckpt_stat_checkpointer,
            polled every 100 ms by one psql \\watch).
  latency   mean latency per 100 ms window over a run: fastckpt with a
            checkpoint every second (the overhead phase's first round if it
            ran, else a run of its own) and, for contrast, heap tables with
            synchronous_commit=on across PostgreSQL's own checkpoints
            (checkpoint_timeout=30s, times from log_checkpoints lines).
  recovery  for each scale: pgbench -i into fastckpt, a fixed pgbench load
            with a checkpoint timer, kill -9 of the postmaster and all its
            children; then, with no new writes (timer off), for 2 MB huge
            pages and 4 kB pages (--pages) and recovery_workers=1 and 2:
            page cache dropped, start, kill -9 again, same checkpoint and
            log; the checkpoint's chunk files read cold with one sequential
            reader (the disk's rate on those very bytes); and PostgreSQL's
            own crash recovery after the same load on heap, per page kind.

Dropping the page cache and sizing the hugetlb pool need root (the pool is
put back as it was at the end), so ckpt_bench.sh runs this driver as root and every PostgreSQL program runs as the unprivileged user through
runuser.  Run as that user directly, it still works but cannot drop the
cache (the report then says so).
"""
import argparse
import bisect
import calendar
import csv
import glob
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

IS_ROOT = os.geteuid() == 0
A = None            # parsed arguments
OUT = None          # output directory of this run
COMMAND = ""        # how ckpt_bench.sh was called, for the reports


# --------------------------------------------------------------------------
# small helpers

def say(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def as_user(cmd):
    return ["runuser", "-u", A.user, "--", *cmd] if IS_ROOT else list(cmd)


def run(cmd, env=None, check=True, user=True, timeout=None):
    full = as_user(cmd) if user else list(cmd)
    res = subprocess.run(full, env=env, check=False, text=True, timeout=timeout,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check and res.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(full)}\n{res.stdout}")
    return res.stdout or ""


def chown_user(path):
    if IS_ROOT:
        shutil.chown(path, A.user)


def user_dir(path):
    os.makedirs(path, exist_ok=True)
    chown_user(path)
    return path


def drop_caches():
    """Write dirty pages back and empty the page cache; False without root."""
    os.sync()
    if not IS_ROOT:
        return False
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    return True


def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, spec=".2f", none="-"):
    return none if v is None else format(v, spec)


def mb(nbytes):
    return nbytes / 1048576.0


# a start that will not come up (a FATAL of a client during startup is no such thing)
START_FAIL = (r"startup recovery failed|PANIC:|could not start|"
              r"FATAL: +(?!the database system is (starting up|shutting down|in recovery mode))")

LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)? UTC")


def log_lines(path):
    """(epoch seconds, text) of each timestamped line of a server log."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        for line in f:
            m = LOG_TS.match(line)
            if not m:
                continue
            t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
            out.append((t + float(m.group(2) or 0), line.rstrip("\n")))
    return out


def lsn(text):
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


# --------------------------------------------------------------------------
# one throwaway cluster

class Cluster:
    def __init__(self, name, mem_mb, settings):
        self.data = os.path.join(A.base, name)
        self.name = name
        self.conn = ["-h", A.base, "-p", str(A.port)]
        self.mem_mb = mem_mb
        self.nlog = 0
        self.log = None
        self.settings = {}
        b = lambda p: os.path.join(A.bindir, p)
        self.b = b
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            run([b("pg_ctl"), "-D", self.data, "-m", "immediate", "stop"], check=False)
        shutil.rmtree(self.data, ignore_errors=True)
        for old in glob.glob(os.path.join(A.base, f"{name}.*.log")):
            os.remove(old)
        run([b("initdb"), "-D", self.data, "-A", "trust", "--no-sync"])
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"""
shared_preload_libraries = 'pg_fastckpt'
pg_fastckpt.memory_limit = '{mem_mb}MB'
port = {A.port}
unix_socket_directories = '{A.base}'
listen_addresses = ''
max_connections = 50
max_worker_processes = 16
shared_buffers = '1GB'
max_wal_size = '8GB'
log_checkpoints = on
log_line_prefix = '%m [%p] '
log_timezone = 'UTC'
include_if_exists = 'ckpt_bench.conf'
""")
        self.set_conf(settings)

    def set_conf(self, settings, reload=False):
        """Settings of this benchmark, in a file of their own."""
        self.settings.update(settings)
        path = os.path.join(self.data, "ckpt_bench.conf")
        with open(path, "w") as f:
            for k, v in self.settings.items():
                f.write(f"{k} = '{v}'\n")
        chown_user(path)
        if reload:
            self.psql("postgres", "SELECT pg_reload_conf()")
            time.sleep(1.0)     # let every process take the SIGHUP

    def pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def start(self, wait=True):
        """Start with a server log of its own; returns the launch time."""
        self.nlog += 1
        self.log = os.path.join(A.base, f"{self.name}.{self.nlog}.log")
        if os.path.exists(self.log):
            os.remove(self.log)
        cmd = [self.b("pg_ctl"), "-D", self.data, "-l", self.log]
        t0 = time.time()
        run(cmd + (["-w", "-t", "3600", "start"] if wait else ["start"]))
        if wait:    # and until fastckpt's tables (and its checkpointer) are open
            self.wait_log(r"pg_fastckpt: startup recovery finished", fail=START_FAIL)
        return t0

    def stop(self):
        run([self.b("pg_ctl"), "-D", self.data, "-m", "fast", "-t", "3600", "stop"])

    def crash(self):
        """kill -9 of the postmaster and every child, as a power cut would."""
        pm = self.pid()
        os.kill(pm, signal.SIGSTOP)     # no new children from here on
        kids = []
        for st in glob.glob("/proc/[0-9]*/stat"):
            try:
                with open(st) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pm:
                    kids.append(int(st.split("/")[2]))
            except (OSError, IndexError, ValueError):
                pass
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.kill(pm, signal.SIGKILL)
        # PostgreSQL takes a postmaster.pid whose process still exists, even
        # a zombie not yet reaped by init, for a live server: wait until
        # every process is gone, and past a while, for a dead one's lock
        # file, do what a reboot would (nothing of them runs any more)
        deadline = time.time() + 30
        alive = kids + [pm]
        while alive and time.time() < deadline:
            alive = [p for p in alive if os.path.exists(f"/proc/{p}")]
            if alive:
                time.sleep(0.05)
        for p in alive:
            with open(f"/proc/{p}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state not in ("Z", "X"):
                raise SystemExit(f"process {p} of the killed server still runs (state {state})")
        if pm in alive:
            os.remove(os.path.join(self.data, "postmaster.pid"))
        return len(kids)

    def psql(self, db, sql, check=True):
        return run([self.b("psql"), "-X", "-Atq", *self.conn, "-d", db, "-c", sql],
                   check=check).strip()

    def checkpoint(self, db):
        """SELECT fastckpt_checkpoint(), waiting for the checkpointer if it
        has not yet noticed that startup recovery finished (it polls)."""
        for _ in range(100):
            out = self.psql(db, "SELECT fastckpt_checkpoint()", check=False)
            if "checkpointer is not running" not in out:
                break
            time.sleep(0.1)
        if out:
            raise SystemExit(f"fastckpt_checkpoint() in {db}: {out}")

    def pgbench(self, db, seconds, log_prefix=None, env=None):
        cmd = [self.b("pgbench"), *self.conn, "-c", str(A.clients), "-j", str(A.jobs),
               "-T", str(seconds)]
        if log_prefix:
            cmd += ["-l", "--log-prefix", log_prefix]
        res = run(cmd + [db], env=env)
        return float(re.search(r"tps = ([\d.]+)", res).group(1)), res

    def pgbench_init(self, db, scale, fastckpt):
        env = dict(os.environ, PGOPTIONS="-c default_table_access_method=fastckpt" if fastckpt else "")
        t0 = time.time()
        run([self.b("pgbench"), *self.conn, "-i", "-q", "-s", str(scale), db], env=env)
        return time.time() - t0

    def wait_log(self, pattern, fail=None, timeout=7200):
        """First line of the current server log matching pattern: (epoch, line)."""
        rx = re.compile(pattern)
        rf = re.compile(fail) if fail else None
        deadline = time.time() + timeout
        while time.time() < deadline:
            for t, line in log_lines(self.log):
                if rx.search(line):
                    return t, line
                if rf and rf.search(line):
                    raise SystemExit(f"server log {self.log}: {line}")
            time.sleep(0.05)
        raise SystemExit(f"timed out waiting for /{pattern}/ in {self.log}")


# --------------------------------------------------------------------------
# pgbench per-transaction logs

def read_txn_logs(prefix, keep=False):
    """[(end epoch seconds, latency us)] of all transactions, and failures."""
    txns, failed = [], 0
    for fn in sorted(glob.glob(prefix + ".*")):
        with open(fn) as f:
            for line in f:
                p = line.split()
                if len(p) < 6:
                    continue
                try:
                    lat = int(p[2])
                except ValueError:      # "failed", "skipped"
                    failed += 1
                    continue
                txns.append((int(p[4]) + int(p[5]) / 1e6, lat))
        if not keep:
            os.remove(fn)
    txns.sort()
    return txns, failed


def latency_stats(txns):
    lat = sorted(x[1] for x in txns)
    n = len(lat)
    pct = lambda p: lat[min(n - 1, int(p * n))] / 1000.0
    return dict(txns=n, lat_mean_ms=sum(lat) / n / 1000.0, lat_p50_ms=pct(0.50),
                lat_p99_ms=pct(0.99), lat_p999_ms=pct(0.999), lat_max_ms=lat[-1] / 1000.0)


def windows(txns, width=0.1, skip=1.0):
    """Mean latency of the transactions ending in each window.

    Time 0 is the start of the first transaction; the first `skip` seconds
    (connections ramping up) and the last, partial window are left out.
    Returns (t0, [(window start s, transactions, mean ms)]).
    """
    t0 = min(end - lat / 1e6 for end, lat in txns)
    last = max(end for end, _ in txns)
    nwin = int((last - t0) / width)
    sums = [0] * nwin
    counts = [0] * nwin
    for end, lat in txns:
        i = int((end - t0) / width)
        if i < nwin:
            sums[i] += lat
            counts[i] += 1
    first = int(skip / width)
    out = [(i * width, counts[i], sums[i] / counts[i] / 1000.0 if counts[i] else None)
           for i in range(first, nwin)]
    return t0, out


def overlaps(t, intervals, width=0.1):
    """Does the window [t, t + width) overlap any of the intervals?"""
    return any(t < b and a < t + width for a, b in intervals)


def window_summary(wins, intervals):
    """Max/median of the window means; in vs out of the given intervals."""
    vals = [m for _, _, m in wins if m is not None]
    empty = sum(1 for _, n, _ in wins if n == 0)
    s = sorted(vals)
    med = statistics.median(s)
    inside, outside = [], []
    for t, n, m in wins:
        if m is None:
            continue
        (inside if overlaps(t, intervals) else outside).append(m)
    return dict(windows=len(wins), empty_windows=empty, median_ms=med,
                p99_ms=s[min(len(s) - 1, int(0.99 * len(s)))], max_ms=s[-1],
                max_over_median=s[-1] / med,
                mean_in_ckpt_ms=sum(inside) / len(inside) if inside else None,
                mean_outside_ms=sum(outside) / len(outside) if outside else None,
                windows_over_2x=sum(1 for v in s if v > 2 * med))


def cycle_offsets(txns, starts, width=0.1, skip=1.0):
    """Latency by how long after the latest checkpoint start a transaction began.

    Buckets of `width` seconds from each start; transactions of the first
    `skip` seconds and those before the first start are left out.
    Returns [(bucket start s, transactions, mean ms, p99 ms)].
    """
    starts = sorted(starts)
    t_skip = min(end - lat / 1e6 for end, lat in txns) + skip
    buckets = {}
    for end, lat in txns:
        begin = end - lat / 1e6
        i = bisect.bisect_right(starts, begin) - 1
        if i < 0 or begin < t_skip:
            continue
        buckets.setdefault(int((begin - starts[i]) / width), []).append(lat)
    out = []
    for k in sorted(buckets):
        v = sorted(buckets[k])
        out.append((k * width, len(v), sum(v) / len(v) / 1000.0,
                    v[min(len(v) - 1, int(0.99 * len(v)))] / 1000.0))
    return out


# --------------------------------------------------------------------------
# fastckpt_stat_checkpointer, polled during a run

CKPT_COLS = "checkpoints, bytes_written, failures"
POLL_SQL = ("SELECT extract(epoch FROM clock_timestamp()), checkpoints, in_progress, last_seq, "
            "extract(epoch FROM last_started_at), extract(epoch FROM last_finished_at), "
            "last_seconds, last_bytes_written, last_bytes_reused FROM fastckpt_stat_checkpointer")


class CkptPoller:
    """One psql running \\watch 0.1 on the checkpointer's view."""

    def __init__(self, cluster, db, path):
        self.path = path
        self.out = open(path, "w")
        self.proc = subprocess.Popen(
            as_user([cluster.b("psql"), "-X", "-Atq", *cluster.conn, "-d", db]),
            stdin=subprocess.PIPE, stdout=self.out, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)     # its own group: SIGINT reaches psql, not only runuser
        self.proc.stdin.write(POLL_SQL + "\n\\watch 0.1\n")
        self.proc.stdin.flush()

    def stop(self):
        try:
            self.proc.stdin.close()     # psql ends at EOF once \watch is cancelled
        except BrokenPipeError:
            pass
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.out.close()
        ckpts = {}
        samples = 0
        with open(self.path) as f:
            for line in f:
                p = line.strip().split("|")
                if len(p) != 9:
                    continue
                samples += 1
                if p[3] and p[4] and p[5]:
                    ckpts[int(p[3])] = dict(seq=int(p[3]), start=float(p[4]), end=float(p[5]),
                                            seconds=float(p[6]), written=int(p[7]),
                                            reused=int(p[8]))
        os.remove(self.path)
        return samples, sorted(ckpts.values(), key=lambda c: c["seq"])


# --------------------------------------------------------------------------
# phase 1 and 2: overhead and latency

def fc_run(c, arm, rnd, logdir, keep_log):
    """One pgbench run on fastckpt with checkpoints on (1 s) or off."""
    if arm == "ckpt_1s":
        c.set_conf({"pg_fastckpt.checkpoint_timeout": "1s",
                    "pg_fastckpt.max_log_size": "1024MB"}, reload=True)
    else:
        c.set_conf({"pg_fastckpt.checkpoint_timeout": "0",
                    "pg_fastckpt.max_log_size": "0"}, reload=True)
    c.checkpoint("fc")   # both arms start with a short log
    s0 = [float(x) for x in c.psql("fc", f"SELECT {CKPT_COLS} FROM fastckpt_stat_checkpointer").split("|")]
    prefix = os.path.join(logdir, f"fc_{arm}_{rnd}")
    poller = CkptPoller(c, "fc", os.path.join(logdir, f"poll_{arm}_{rnd}.txt"))
    tps, _ = c.pgbench("fc", A.seconds, prefix)
    samples, polled = poller.stop()
    s1 = [float(x) for x in c.psql("fc", f"SELECT {CKPT_COLS} FROM fastckpt_stat_checkpointer").split("|")]
    txns, failed = read_txn_logs(prefix, keep=keep_log)
    t_first = min(end - lat / 1e6 for end, lat in txns)
    t_last = txns[-1][0]
    inrun = [k for k in polled if k["start"] >= t_first - 0.001 and k["end"] <= t_last + 5]
    n_ck = int(s1[0] - s0[0])
    dur = sum(k["seconds"] for k in inrun)
    r = dict(round=rnd, arm=arm, tps=tps, failed=failed, **latency_stats(txns),
             checkpoints=n_ck, checkpoint_failures=int(s1[2] - s0[2]),
             ckpt_bytes_written=int(s1[1] - s0[1]),
             ckpt_mean_seconds=dur / len(inrun) if inrun else None,
             ckpt_max_seconds=max((k["seconds"] for k in inrun), default=None),
             ckpt_mean_mb_written=mb(s1[1] - s0[1]) / n_ck if n_ck else None,
             ckpt_mean_mb_reused=(mb(sum(k["reused"] for k in inrun)) / len(inrun)) if inrun else None,
             ckpt_busy_fraction=dur / (t_last - t_first),
             poll_samples=samples, polled_checkpoints=len(inrun))
    say(f"fastckpt {arm:8} round {rnd}: {tps:8.0f} tps  mean {r['lat_mean_ms']:.2f} ms  "
        f"p99 {r['lat_p99_ms']:.2f} ms  {n_ck} checkpoints")
    return r, txns, inrun


def heap_latency_run(c, logdir):
    """Heap, synchronous_commit=on, across PostgreSQL's timed checkpoints."""
    c.set_conf({"checkpoint_timeout": "30s"}, reload=True)
    c.psql("heap", "CHECKPOINT")        # the next timed one comes 30 s from here
    prefix = os.path.join(logdir, "heap_latency")
    tps, _ = c.pgbench("heap", A.heap_seconds, prefix)
    c.set_conf({"checkpoint_timeout": "30min"}, reload=True)
    txns, failed = read_txn_logs(prefix)
    t_first = min(end - lat / 1e6 for end, lat in txns)
    t_last = txns[-1][0]
    starts, spans, pending = [], [], None
    for t, line in log_lines(c.log):
        if "checkpoint starting:" in line and t_first <= t <= t_last:
            pending = t
            starts.append(t)
        elif "checkpoint complete:" in line and pending is not None:
            spans.append((pending, t))
            pending = None
    if pending is not None:
        spans.append((pending, t_last))
    say(f"latency heap run: {tps:.0f} tps, {len(starts)} PostgreSQL checkpoints inside")
    return tps, txns, failed, spans


def phase_overhead_latency(want_overhead, want_latency, facts):
    mem = A.memory_mb or A.scale * 150 + 2048
    c = Cluster("ovl", mem, {"pg_fastckpt.checkpoint_method": A.checkpoint_method,
                             "checkpoint_timeout": "30min"})
    c.start()
    logdir = user_dir(os.path.join(A.base, "txnlogs"))
    c.psql("postgres", "CREATE DATABASE fc")
    c.psql("fc", "CREATE EXTENSION pg_fastckpt")
    c.psql("postgres", "ALTER DATABASE fc SET pg_fastckpt.commit_mode = 'early_lock_release'")
    c.psql("postgres", "ALTER DATABASE fc SET synchronous_commit = on")
    say(f"pgbench -i -s {A.scale} into fastckpt")
    c.pgbench_init("fc", A.scale, True)
    if want_latency:
        c.psql("postgres", "CREATE DATABASE heap")
        c.psql("postgres", "ALTER DATABASE heap SET synchronous_commit = on")
        say(f"pgbench -i -s {A.scale} into heap")
        c.pgbench_init("heap", A.scale, False)
    c.psql("postgres", "CHECKPOINT")
    c.checkpoint("fc")

    results, lat_fc = [], {}
    rounds = A.rounds if want_overhead else 1
    arms = ["ckpt_1s", "ckpt_off"] if want_overhead else ["ckpt_1s"]
    for rnd in range(rounds):
        order = arms if rnd % 2 == 0 else list(reversed(arms))   # ABBA
        for arm in order:
            keep = want_latency and rnd == 0
            r, txns, inrun = fc_run(c, arm, rnd, logdir, keep)
            results.append(r)
            if keep:
                lat_fc[arm] = (txns, inrun)
            time.sleep(2)
    heap = None
    if want_latency:
        heap = heap_latency_run(c, logdir)
    balance = c.psql("fc", "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = "
                           "(SELECT sum(bbalance) FROM pgbench_branches)")
    c.stop()
    for fn in glob.glob(os.path.join(logdir, "*")):
        os.remove(fn)
    if want_overhead:
        write_overhead(results, balance, facts)
    if want_latency:
        write_latency(lat_fc, heap, facts)


def write_overhead(results, balance, facts):
    with open(os.path.join(OUT, "ckpt_overhead.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0].keys()))
        w.writeheader()
        w.writerows(results)
    med = lambda arm, key: median([r[key] for r in results if r["arm"] == arm])
    per_round = []
    for rnd in range(A.rounds):
        on = [r for r in results if r["round"] == rnd and r["arm"] == "ckpt_1s"]
        off = [r for r in results if r["round"] == rnd and r["arm"] == "ckpt_off"]
        if on and off:
            per_round.append((on[0]["tps"] / off[0]["tps"],
                              on[0]["lat_p99_ms"] / off[0]["lat_p99_ms"]))
    lines = facts + [
        "",
        f"Command: `{COMMAND}`; pgbench built-in TPC-B, -c {A.clients} "
        f"-j {A.jobs} -T {A.seconds}, scale {A.scale}, fastckpt with commit_mode="
        f"early_lock_release and synchronous_commit=on, checkpoint_method={A.checkpoint_method}, "
        "one cluster. Arms: `pg_fastckpt.checkpoint_timeout=1s` vs checkpoints off "
        "(`checkpoint_timeout=0`, `max_log_size=0`), each run starting right after a forced "
        "checkpoint; rounds interleaved A-B, B-A. Latencies from pgbench's per-transaction "
        "logs (-l); checkpoint figures from fastckpt_stat_checkpointer (counter deltas, "
        "durations from polling it every 100 ms). Table: medians over rounds.",
        "",
        "| checkpoints | tps | vs off | mean latency ms | p50 ms | p99 ms | p99.9 ms | max ms | "
        "checkpoints in run | mean duration s | max duration s | MB written each | "
        "MB reused each | time checkpointing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    off_tps = med("ckpt_off", "tps")
    for arm, label in (("ckpt_1s", "every 1 s"), ("ckpt_off", "off")):
        t = med(arm, "tps")
        ck = arm == "ckpt_1s"
        lines.append(
            f"| {label} | {t:,.0f} | {t / off_tps:.3f}x | {med(arm, 'lat_mean_ms'):.2f} | "
            f"{med(arm, 'lat_p50_ms'):.2f} | {med(arm, 'lat_p99_ms'):.2f} | "
            f"{med(arm, 'lat_p999_ms'):.2f} | {med(arm, 'lat_max_ms'):.1f} | "
            f"{med(arm, 'checkpoints'):.0f} | "
            + (f"{fmt(med(arm, 'ckpt_mean_seconds'), '.3f')} | {fmt(med(arm, 'ckpt_max_seconds'), '.3f')} | "
               f"{fmt(med(arm, 'ckpt_mean_mb_written'), '.1f')} | {fmt(med(arm, 'ckpt_mean_mb_reused'), '.1f')} | "
               f"{100 * med(arm, 'ckpt_busy_fraction'):.0f}% |" if ck else "- | - | - | - | - |"))
    lines += ["",
              "Checkpoints every 1 s / off, round by round: tps "
              + ", ".join(f"{x[0]:.3f}" for x in per_round)
              + (f" (mean {sum(x[0] for x in per_round) / len(per_round):.3f}); p99 latency "
                 + ", ".join(f"{x[1]:.2f}" for x in per_round) if per_round else "") + ".  ",
              f"Failed transactions: {sum(r['failed'] for r in results)}; checkpoint failures: "
              f"{sum(r['checkpoint_failures'] for r in results)}; balance check after the runs "
              f"(sum(abalance) = sum(bbalance)): {'passed' if balance == 't' else 'FAILED'}."]
    write_md("ckpt_overhead.md", lines)


def cycle_table(lat_fc):
    """Where in the checkpoint cycle the latency goes, against checkpoints off."""
    if "ckpt_1s" not in lat_fc or not lat_fc["ckpt_1s"][1]:
        return []
    txns, inrun = lat_fc["ckpt_1s"]
    rows = [r for r in cycle_offsets(txns, [k["start"] for k in inrun]) if r[0] < 1.0 - 1e-9]
    off = latency_stats(lat_fc["ckpt_off"][0]) if "ckpt_off" in lat_fc else None
    busy = [k["seconds"] for k in inrun]
    lines = ["",
             "By time since the latest checkpoint start (same fastckpt run, transactions by "
             "their start; a checkpoint took %s s at the median, paced over "
             "checkpoint_completion_target of the second): a cost that comes from the "
             "checkpoint's own work shows in the rows it overlaps."
             % fmt(statistics.median(busy) if busy else None),
             "",
             "| since checkpoint start | transactions | mean ms | p99 ms |"
             + (" mean vs off | p99 vs off |" if off else ""),
             "|---|---:|---:|---:|" + ("---:|---:|" if off else "")]
    for t, n, mean, p99 in rows:
        lines.append(f"| {1000 * t:.0f}-{1000 * (t + 0.1):.0f} ms | {n} | {mean:.2f} | {p99:.2f} |"
                     + (f" {mean / off['lat_mean_ms']:.2f}x | {p99 / off['lat_p99_ms']:.2f}x |" if off else ""))
    if off:
        lines.append(f"| checkpoints off (whole run) | {off['txns']} | {off['lat_mean_ms']:.2f} | "
                     f"{off['lat_p99_ms']:.2f} | 1.00x | 1.00x |")
    return lines


def write_latency(lat_fc, heap, facts):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = []     # name, label, t0, wins, spans (relative), starts (relative), tps
    for arm, label in (("ckpt_1s", "fastckpt, checkpoint every 1 s"),
                       ("ckpt_off", "fastckpt, checkpoints off (same round)")):
        if arm not in lat_fc:
            continue
        txns, inrun = lat_fc[arm]
        t0, wins = windows(txns)
        spans = [(k["start"] - t0, k["end"] - t0) for k in inrun]
        series.append((f"fastckpt_{arm}", label, wins, spans))
    htps, htxns, _, hspans = heap
    t0, hwins = windows(htxns)
    series.append(("heap_sync", "heap, synchronous_commit=on, PostgreSQL checkpoint_timeout=30s",
                   hwins, [(a - t0, b - t0) for a, b in hspans]))

    with open(os.path.join(OUT, "ckpt_latency.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "window_start_s", "transactions", "mean_latency_ms", "in_checkpoint"])
        for name, _, wins, spans in series:
            for t, n, m in wins:
                inside = overlaps(t, spans)
                w.writerow([name, f"{t:.1f}", n, "" if m is None else f"{m:.3f}", int(inside)])

    lines = facts + [
        "",
        f"Command: `{COMMAND}`; pgbench TPC-B -c {A.clients} "
        f"-j {A.jobs}, scale {A.scale}. Mean latency of the transactions ending in each 100 ms "
        "window (from pgbench -l; the first second left out). fastckpt: "
        f"{A.seconds} s runs (the overhead phase's first round when both ran), checkpoint "
        "times from fastckpt_stat_checkpointer polled every 100 ms. Heap: "
        f"{A.heap_seconds} s right after a CHECKPOINT with checkpoint_timeout=30s "
        "(checkpoint_completion_target 0.9, the default), checkpoint times from the "
        "log_checkpoints lines. \"In checkpoint\": windows that overlap a checkpoint "
        "(from its start to its end).",
        "",
        "| run | windows | checkpoints | median window ms | p99 window ms | max window ms | "
        "max / median | windows > 2x median | mean in checkpoint ms | mean outside ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label, wins, spans in series:
        s = window_summary(wins, spans)
        lines.append(f"| {label} | {s['windows']} | {len(spans)} | {s['median_ms']:.2f} | "
                     f"{s['p99_ms']:.2f} | {s['max_ms']:.2f} | {s['max_over_median']:.2f} | "
                     f"{s['windows_over_2x']} | {fmt(s['mean_in_ckpt_ms'])} | "
                     f"{fmt(s['mean_outside_ms'])} |")
    lines += ["", "![mean latency per 100 ms window](ckpt_latency.png)"]
    lines += cycle_table(lat_fc)
    write_md("ckpt_latency.md", lines)

    panels = [s for s in series if s[0] != "fastckpt_ckpt_off"]
    off = [s for s in series if s[0] == "fastckpt_ckpt_off"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 3.4 * len(panels)))
    for ax, (name, label, wins, spans) in zip(axes, panels):
        if name.startswith("fastckpt") and off:
            ow = off[0][2]
            ax.plot([t for t, _, m in ow if m is not None], [m for _, _, m in ow if m is not None],
                    color="0.7", lw=0.7, label=off[0][1])
        ax.plot([t for t, _, m in wins if m is not None], [m for _, _, m in wins if m is not None],
                color="tab:blue" if name.startswith("fastckpt") else "tab:red", lw=0.8, label=label)
        for i, (a, b) in enumerate(spans):
            ax.axvspan(a, b, color="tab:orange", alpha=0.12, lw=0,
                       label="checkpoint in progress" if i == 0 else None)
            ax.axvline(a, color="tab:orange", lw=0.6, alpha=0.8)
        ax.set_ylabel("mean latency per 100 ms (ms)")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("seconds since the run started")
    fig.suptitle(f"TPC-B scale {A.scale}, {A.clients} clients: latency over time, checkpoint starts marked")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "ckpt_latency.png"), dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------
# phase 3: recovery

def fc_recovery_once(c, workers, pages, cache_dropped):
    """Start after a crash; seconds to open and the recovery's own figures."""
    c.set_conf({"pg_fastckpt.recovery_workers": str(workers)})
    t0 = c.start(wait=False)
    t_open, _ = c.wait_log(r"pg_fastckpt: startup recovery finished",
                           fail=START_FAIL)
    t_ready = next((t for t, l in log_lines(c.log) if "ready to accept connections" in l), None)
    cols = ("tables_open, extract(epoch FROM finished_at), load_seconds, replay_seconds, "
            "index_rebuild_seconds, total_seconds, load_bytes, load_rows, load_workers, log_bytes, "
            "records_applied, checkpoint_seq, checkpoint_fallback, coalesce(error, '')")
    v = None
    for _ in range(100):
        out = c.psql("fc", f"SELECT {cols} FROM fastckpt_stat_recovery", check=False)
        if out.startswith("t|"):
            v = out.split("|")
            break
        time.sleep(0.1)
    if v is None:
        raise SystemExit(f"fastckpt_stat_recovery never showed the tables open ({out})")
    redo = pg_redo(c.log)
    r = dict(config=f"fastckpt_{workers}w_{pages}", pages=pages, workers_asked=workers,
             start_to_open_s=float(v[1]) - t0,
             pg_ready_s=t_ready - t0 if t_ready else None,
             load_s=float(v[2]), replay_s=float(v[3]), index_s=float(v[4]),
             server_total_s=float(v[5]), load_bytes=int(v[6]), load_rows=int(v[7]),
             load_workers=int(v[8]), log_bytes=int(v[9]), records_applied=int(v[10]),
             checkpoint_seq=int(v[11]), checkpoint_fallback=v[12], error=v[13],
             pg_redo_s=redo["redo_s"], wal_bytes_replayed=redo["wal_bytes"],
             cache_dropped=cache_dropped)
    r["load_mb_s"] = mb(r["load_bytes"]) / r["load_s"] if r["load_s"] > 0 else None
    say(f"recovery, {PAGE_LABEL[pages]}, {workers} worker(s): open after {r['start_to_open_s']:.2f} s "
        f"(load {r['load_s']:.2f} s by {r['load_workers']}, replay {r['replay_s']:.2f} s, "
        f"indexes {r['index_s']:.2f} s), {mb(r['load_bytes']):.0f} MB checkpoint {r['checkpoint_seq']}, "
        f"{mb(r['log_bytes']):.1f} MB log")
    return r


# Memory pages of the shared segment (and so of fastckpt's arena) in the
# recovery phase: "huge" is PostgreSQL's huge_pages = on over a hugetlb
# pool this driver sizes (vm.nr_hugepages), "4k" is huge_pages = off.
PAGE_LABEL = {"huge": "2 MB huge pages", "4k": "4 kB pages"}
NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"


def hugepages_now():
    with open(NR_HUGEPAGES) as f:
        return int(f.read())


def set_hugepages(n):
    """Size the hugetlb pool; the kernel may give fewer than asked."""
    with open(NR_HUGEPAGES, "w") as f:
        f.write(f"{n}\n")
    return hugepages_now()


def use_pages(c, pages):
    """Configure a stopped (or crashed) cluster's next start for these pages."""
    if pages == "huge":
        need = int(run([c.b("postgres"), "-D", c.data, "-C", "shared_memory_size_in_huge_pages"]).strip())
        got = set_hugepages(need)
        if got < need:      # free and defragment memory, then ask again
            drop_caches()
            with open("/proc/sys/vm/compact_memory", "w") as f:
                f.write("1\n")
            got = set_hugepages(need)
        if got < need:
            raise SystemExit(f"asked the kernel for {need} huge pages, got {got}: "
                             "run the recovery phase with --pages 4k, or free memory")
        c.set_conf({"huge_pages": "on"})
    else:
        # hand the pool back first: its pages are of no use to 4 kB mappings
        set_hugepages(0)
        c.set_conf({"huge_pages": "off"})


def pg_redo(logfile):
    """PostgreSQL's redo after a crash, from its server log."""
    start = end = secs = None
    for _, line in log_lines(logfile):
        m = re.search(r"redo starts at ([0-9A-F]+/[0-9A-F]+)", line)
        if m:
            start = lsn(m.group(1))
        m = re.search(r"redo done at ([0-9A-F]+/[0-9A-F]+).*elapsed: ([\d.]+) s", line)
        if m:
            end, secs = lsn(m.group(1)), float(m.group(2))
    return dict(redo_s=secs, wal_bytes=(end - start) if start is not None and end is not None else None)


def read_files(paths):
    """Read the files in turn, 4 MB at a time; bytes read."""
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            try:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except (AttributeError, OSError):
                pass
            while True:
                b = f.read(4 << 20)
                if not b:
                    break
                total += len(b)
    return total


def cold_read(paths, readers=1):
    """Sequential readers over the files, page cache dropped first.

    With several readers, each takes whole chunks (a base file and its
    deltas) in turn, as the loaders do.  Threads: the reads release the GIL.
    """
    dropped = drop_caches()
    chunks = {}
    for p in paths:
        chunks.setdefault(re.sub(r"\.d\d+$", "", p), []).append(p)
    shares = [[] for _ in range(readers)]
    for i, key in enumerate(sorted(chunks)):
        shares[i % readers] += chunks[key]
    got = [0] * readers

    def reader(i):
        got[i] = read_files(shares[i])

    t0 = time.time()
    threads = [threading.Thread(target=reader, args=(i,)) for i in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.time() - t0
    return sum(got), secs, dropped


def heap_recovery_once(c, pages, scale):
    """PostgreSQL's own crash recovery of the crashed cluster c."""
    dropped = drop_caches()
    t0 = c.start(wait=False)
    t_ready, _ = c.wait_log(r"database system is ready to accept connections", fail=START_FAIL)
    redo = pg_redo(c.log)
    h = dict(scale=scale, config=f"heap_{pages}", pages=pages, start_to_open_s=t_ready - t0,
             pg_ready_s=t_ready - t0, pg_redo_s=redo["redo_s"],
             wal_bytes_replayed=redo["wal_bytes"], cache_dropped=dropped)
    say(f"  heap, {PAGE_LABEL[pages]}: ready after {h['start_to_open_s']:.2f} s, redo "
        f"{fmt(h['pg_redo_s'])} s over {mb(h['wal_bytes_replayed'] or 0):.0f} MB WAL")
    c.wait_log(r"pg_fastckpt: startup recovery finished")
    return h


def phase_recovery(facts):
    rows = []
    pool0 = hugepages_now() if IS_ROOT else None
    try:
        for scale in A.scales:
            rows += recovery_scale(scale)
    finally:
        if pool0 is not None:
            set_hugepages(pool0)
    write_recovery(rows, facts)


def recovery_scale(scale):
    mem = A.memory_mb or scale * 150 + 2048
    say(f"recovery, scale {scale}: memory_limit {mem} MB, {', '.join(PAGE_LABEL[p] for p in A.pages)}")
    c = Cluster("rec", mem, {"pg_fastckpt.checkpoint_method": A.checkpoint_method,
                             "pg_fastckpt.checkpoint_timeout": f"{A.recovery_checkpoint_timeout}s",
                             "checkpoint_timeout": f"{A.heap_checkpoint_timeout}s"})
    # the load runs on the first page kind, so its memory is in use before
    # the timed starts (on a VM, memory the guest has not touched lately
    # costs the host's faults on top, which no real machine pays)
    use_pages(c, A.pages[0])
    c.start()
    c.psql("postgres", "CREATE DATABASE fc")
    c.psql("fc", "CREATE EXTENSION pg_fastckpt")
    init_s = c.pgbench_init("fc", scale, True)
    say(f"  pgbench -i into fastckpt: {init_s:.1f} s")
    c.checkpoint("fc")
    c.psql("postgres", "CHECKPOINT")
    tps, _ = c.pgbench("fc", A.load_seconds)
    ck = c.psql("fc", "SELECT checkpoints, log_bytes_since_checkpoint FROM fastckpt_stat_checkpointer").split("|")
    nkids = c.crash()
    say(f"  fastckpt load: {tps:.0f} tps, {ck[0]} checkpoints so far, "
        f"{mb(int(ck[1])):.1f} MB log since the last; killed postmaster + {nkids} children")
    # no new checkpoint from here on: every start sees the same checkpoint and log
    c.set_conf({"pg_fastckpt.checkpoint_timeout": "0", "pg_fastckpt.max_log_size": "0"})
    runs = []
    for pages in A.pages:
        use_pages(c, pages)
        for rep in range(A.recovery_repeats):
            for workers in (1, 2):
                dropped = drop_caches()
                r = fc_recovery_once(c, workers, pages, dropped)
                r.update(scale=scale, rep=rep, load_tps=tps, init_s=init_s)
                runs.append(r)
                c.crash()
    # the disk's rate on the same bytes: the checkpoint's own chunk files, cold
    seq = runs[-1]["checkpoint_seq"]
    ckdir = os.path.join(c.data, "pg_fastckpt", "ckpt", f"{seq:016X}")
    files = sorted(p for p in glob.glob(os.path.join(ckdir, "*")) if os.path.isfile(p))
    nbytes, secs, dropped = cold_read(files)
    disk = dict(scale=scale, config="disk_cold_read", disk_bytes=nbytes, disk_s=secs,
                disk_mb_s=mb(nbytes) / secs if secs > 0 else None, cache_dropped=dropped,
                files=len(files))
    say(f"  cold sequential read of checkpoint {seq}: {mb(nbytes):.0f} MB in {secs:.2f} s "
        f"= {disk['disk_mb_s']:.0f} MB/s ({len(files)} files)")
    # and by two readers, as two loaders read: what the disk gives to two streams
    nbytes2, secs2, dropped2 = cold_read(files, readers=2)
    disk2 = dict(scale=scale, config="disk_cold_read_2", disk_bytes=nbytes2, disk_s=secs2,
                 disk_mb_s=mb(nbytes2) / secs2 if secs2 > 0 else None, cache_dropped=dropped2,
                 files=len(files))
    say(f"  the same by 2 readers: {secs2:.2f} s = {disk2['disk_mb_s']:.0f} MB/s")

    # PostgreSQL's own crash recovery after the same load, on heap, from
    # one copy of the crashed cluster per page kind
    use_pages(c, A.pages[0])
    c.start()
    c.psql("postgres", "CREATE DATABASE heap")
    c.psql("heap", "CREATE EXTENSION pg_fastckpt")
    c.psql("postgres", "DROP DATABASE fc")
    c.checkpoint("heap")     # nothing big left to load later
    hinit = c.pgbench_init("heap", scale, False)
    say(f"  pgbench -i into heap: {hinit:.1f} s")
    c.psql("postgres", "CHECKPOINT")
    w0 = c.psql("heap", "SELECT pg_current_wal_lsn()")
    htps, _ = c.pgbench("heap", A.load_seconds)
    w1 = c.psql("heap", "SELECT pg_current_wal_lsn()")
    c.crash()
    crashed = c.data + ".crashed"
    shutil.rmtree(crashed, ignore_errors=True)
    if len(A.pages) > 1:
        run(["cp", "-a", c.data, crashed], user=False)
    heap = []
    for i, pages in enumerate(A.pages):
        if i > 0:
            c.crash()
            shutil.rmtree(c.data)
            run(["cp", "-a", crashed, c.data], user=False)
        use_pages(c, pages)
        h = heap_recovery_once(c, pages, scale)
        h.update(load_wal_bytes=lsn(w1) - lsn(w0), load_tps=htps, init_s=hinit)
        heap.append(h)
    c.stop()
    shutil.rmtree(crashed, ignore_errors=True)
    shutil.rmtree(c.data, ignore_errors=True)
    return runs + [disk, disk2] + heap


def write_recovery(rows, facts):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(OUT, "ckpt_recovery.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)

    def pick(scale, config, key):
        return median([r.get(key) for r in rows if r["scale"] == scale and r["config"] == config])

    dropped_all = all(r.get("cache_dropped", True) for r in rows)
    lines = facts + [
        "",
        f"Command: `{COMMAND}`; scales {', '.join(map(str, A.scales))}. Per scale, one fresh cluster: pgbench -i into fastckpt, "
        f"a forced checkpoint, then pgbench TPC-B -c {A.clients} -j {A.jobs} -T {A.load_seconds} "
        f"with `pg_fastckpt.checkpoint_timeout={A.recovery_checkpoint_timeout}s` "
        f"(checkpoint_method={A.checkpoint_method}); at its end kill -9 of the postmaster and all its "
        "children. Then, with the checkpoint timer and size trigger off (nothing new written), for "
        "each kind of memory page and for recovery_workers=1 and 2: "
        + ("page cache dropped, " if dropped_all else "**page cache NOT dropped (not root)**, ")
        + "start, wait for the tables to open, kill -9: every start loads the same checkpoint and "
        f"replays the same log{' (repeated %d times, medians)' % A.recovery_repeats if A.recovery_repeats > 1 else ''}. "
        "Pages: \"2 MB huge pages\" is PostgreSQL's `huge_pages = on` over a hugetlb pool sized "
        "from `shared_memory_size_in_huge_pages` (vm.nr_hugepages, set by the benchmark); "
        "\"4 kB pages\" is `huge_pages = off`. The load ran on the first kind. "
        "\"Start to open\": from launching pg_ctl to fastckpt_stat_recovery.finished_at (tables "
        "open); load/replay/index/server total: fastckpt_stat_recovery. Disk: the same checkpoint's "
        "chunk files read cold by one sequential reader (4 MB reads) right after, then by two "
        "readers taking whole chunks in turn as two loaders do. Heap: the same "
        "scale and load on heap tables in the same cluster (fastckpt database dropped), CHECKPOINT "
        f"right before the load, PostgreSQL checkpoint_timeout={A.heap_checkpoint_timeout}s, "
        "max_wal_size 8GB, shared_buffers 1GB; kill -9, then for each kind of page a copy of the "
        "crashed cluster started with the cache dropped: seconds from launch to "
        "\"ready to accept connections\" and the \"redo done ... elapsed\" figure.",
        "",
    ]
    summary = ["| scale | pages | checkpoint MB | fastckpt 1 worker s | fastckpt 2 workers s | "
               "2-vs-1 load speedup | load MB/s 1w / 2w | disk MB/s 1 / 2 readers | "
               "2w % of disk (1 reader) | 2w % of 2 readers | heap recovery s | fastckpt 2w / heap |",
               "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for scale in A.scales:
        dk = pick(scale, "disk_cold_read", "disk_mb_s")
        first = f"fastckpt_1w_{A.pages[0]}"
        seqs = {r["checkpoint_seq"] for r in rows if r["scale"] == scale and "checkpoint_seq" in r}
        logs = {r["log_bytes"] for r in rows if r["scale"] == scale and "log_bytes" in r}
        lines += [f"**Scale {scale}** ({pick(scale, first, 'load_rows'):,.0f} rows loaded; "
                  f"fastckpt load {pick(scale, first, 'load_tps'):,.0f} tps, heap load "
                  f"{pick(scale, 'heap_' + A.pages[0], 'load_tps'):,.0f} tps)", "",
                  "| recovery | pages | start to open s | PostgreSQL ready s | checkpoint load s | log replay s | "
                  "index rebuild s | server total s | MB read | read MB/s | % of disk | workers used |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for pages in A.pages:
            for w in (1, 2):
                cfg = f"fastckpt_{w}w_{pages}"
                rate = pick(scale, cfg, "load_mb_s")
                lines.append(
                    f"| fastckpt, recovery_workers={w} | {PAGE_LABEL[pages]} | "
                    f"{pick(scale, cfg, 'start_to_open_s'):.2f} | {fmt(pick(scale, cfg, 'pg_ready_s'))} | "
                    f"{pick(scale, cfg, 'load_s'):.2f} | {pick(scale, cfg, 'replay_s'):.2f} | "
                    f"{pick(scale, cfg, 'index_s'):.2f} | {pick(scale, cfg, 'server_total_s'):.2f} | "
                    f"{mb(pick(scale, cfg, 'load_bytes')):.0f} | {fmt(rate, '.0f')} | "
                    f"{fmt(100 * rate / dk if rate and dk else None, '.0f')}% | {pick(scale, cfg, 'load_workers'):.0f} |")
        lines.append(f"| disk: same chunk files, cold, 1 sequential reader | - | - | - | "
                     f"{pick(scale, 'disk_cold_read', 'disk_s'):.2f} | - | - | - | "
                     f"{mb(pick(scale, 'disk_cold_read', 'disk_bytes')):.0f} | {fmt(dk, '.0f')} | 100% | - |")
        dk2 = pick(scale, "disk_cold_read_2", "disk_mb_s")
        if dk2 is not None:
            lines.append(f"| disk: same chunk files, cold, 2 readers (a chunk each in turn) | - | - | - | "
                         f"{pick(scale, 'disk_cold_read_2', 'disk_s'):.2f} | - | - | - | "
                         f"{mb(pick(scale, 'disk_cold_read_2', 'disk_bytes')):.0f} | {fmt(dk2, '.0f')} | "
                         f"{fmt(100 * dk2 / dk if dk else None, '.0f')}% | - |")
        for pages in A.pages:
            cfg = f"heap_{pages}"
            hw = pick(scale, cfg, "wal_bytes_replayed")
            lines.append(f"| PostgreSQL crash recovery, heap | {PAGE_LABEL[pages]} | "
                         f"{pick(scale, cfg, 'start_to_open_s'):.2f} | "
                         f"{pick(scale, cfg, 'pg_ready_s'):.2f} | - | {fmt(pick(scale, cfg, 'pg_redo_s'))} "
                         f"(redo) | - | - | {fmt(mb(hw) if hw is not None else None, '.0f')} WAL | - | - | - |")
        lines += ["",
                  f"fastckpt log replayed: {mb(pick(scale, first, 'log_bytes')):.1f} MB, "
                  f"{pick(scale, first, 'records_applied'):,.0f} records; "
                  + ("same checkpoint and log in every start." if len(seqs) == 1 and len(logs) == 1
                     else f"**checkpoint or log differed between starts** (seqs {sorted(seqs)}, "
                          f"log bytes {sorted(logs)}).")
                  + f" The heap load wrote {mb(pick(scale, 'heap_' + A.pages[0], 'load_wal_bytes')):.0f} MB of WAL.",
                  ""]
        for pages in A.pages:
            c1, c2 = f"fastckpt_1w_{pages}", f"fastckpt_2w_{pages}"
            l1, l2 = pick(scale, c1, "load_s"), pick(scale, c2, "load_s")
            r1, r2 = pick(scale, c1, "load_mb_s"), pick(scale, c2, "load_mb_s")
            o2, hp = pick(scale, c2, "start_to_open_s"), pick(scale, f"heap_{pages}", "start_to_open_s")
            summary.append(
                f"| {scale} | {PAGE_LABEL[pages]} | {mb(pick(scale, c1, 'load_bytes')):.0f} | "
                f"{pick(scale, c1, 'start_to_open_s'):.2f} | {o2:.2f} | "
                f"{l1 / l2 if l2 else float('nan'):.2f}x | {fmt(r1, '.0f')} / {fmt(r2, '.0f')} | "
                f"{fmt(dk, '.0f')} / {fmt(dk2, '.0f')} | "
                f"{fmt(100 * r2 / dk if r2 and dk else None, '.0f')}% | "
                f"{fmt(100 * r2 / dk2 if r2 and dk2 else None, '.0f')}% | {hp:.2f} | "
                f"{fmt(o2 / hp if hp else None)}x |")
    lines += ["**Summary**", ""] + summary + ["", "![recovery time by phase](ckpt_recovery.png)"]
    write_md("ckpt_recovery.md", lines)
    plot_recovery(rows)


def plot_recovery(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def pick(scale, config, key):
        return median([r.get(key) for r in rows if r["scale"] == scale and r["config"] == config]) or 0.0

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(14, 5), gridspec_kw={"width_ratios": [3, 2]})
    cfgs = []
    for pages in A.pages:
        cfgs += [(f"fastckpt_1w_{pages}", f"fc 1w {pages}"),
                 (f"fastckpt_2w_{pages}", f"fc 2w {pages}"),
                 (f"heap_{pages}", f"heap {pages}")]
    width = 0.8 / len(cfgs)
    x = range(len(A.scales))
    parts = [("load_s", "checkpoint load", "tab:blue"), ("replay_s", "log replay", "tab:green"),
             ("index_s", "index rebuild", "tab:purple")]
    labelled = set()
    for j, (cfg, label) in enumerate(cfgs):
        for i, scale in enumerate(A.scales):
            xpos = i + (j - (len(cfgs) - 1) / 2) * width
            total = pick(scale, cfg, "start_to_open_s")
            bottom = 0.0
            if cfg.startswith("heap"):
                redo = pick(scale, cfg, "pg_redo_s")
                segs = [(redo, "PostgreSQL redo", "tab:red"), (total - redo, "other startup", "0.8")]
            else:
                segs = [(pick(scale, cfg, k), n, col) for k, n, col in parts]
                segs.append((total - sum(s[0] for s in segs), "other startup", "0.8"))
            for h, n, col in segs:
                h = max(h, 0.0)
                ax.bar(xpos, h, width, bottom=bottom, color=col, edgecolor="black", lw=0.4,
                       hatch="//" if cfg.endswith("_4k") else None,
                       label=n if n not in labelled else None)
                labelled.add(n)
                bottom += h
            ax.text(xpos, bottom, label, ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.3)    # room for the bar labels
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"scale {s}" for s in A.scales])
    ax.set_ylabel("seconds from launch to open / ready")
    ax.set_title("Restart after kill -9, page cache dropped (hatched: 4 kB pages)")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    rates = []
    colours = {"huge": ("tab:cyan", "tab:blue"), "4k": ("wheat", "tab:orange")}
    for pages in A.pages:
        rates += [(f"fastckpt_1w_{pages}", "load_mb_s", f"load, 1 worker, {pages}", colours[pages][0]),
                  (f"fastckpt_2w_{pages}", "load_mb_s", f"load, 2 workers, {pages}", colours[pages][1])]
    rates.append(("disk_cold_read", "disk_mb_s", "disk: same files, cold", "0.4"))
    w2 = 0.8 / len(rates)
    for j, (cfg, key, label, col) in enumerate(rates):
        ax2.bar([i + (j - (len(rates) - 1) / 2) * w2 for i in x], [pick(s, cfg, key) for s in A.scales], w2,
                color=col, label=label)
    ax2.set_xticks(list(x))
    ax2.set_xticklabels([f"scale {s}" for s in A.scales])
    ax2.set_ylabel("MB/s")
    ax2.set_title("Checkpoint read rate vs the disk")
    ax2.legend(fontsize=8)
    ax2.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "ckpt_recovery.png"), dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------

def write_md(name, lines):
    with open(os.path.join(OUT, name), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def machine_facts():
    cpu = ""
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except Exception:
        pass
    ram = ""
    try:
        kb = int([l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")][0])
        ram = f"{kb / 1048576:.0f} GiB RAM, "
    except Exception:
        pass
    disk = ""
    try:
        src, fstype = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "--target", A.base],
                                     text=True, capture_output=True).stdout.split()[:2]
        dev = os.path.basename(src)
        info = subprocess.run(["lsblk", "-d", "-n", "-o", "SIZE,ROTA,MODEL", src],
                              text=True, capture_output=True).stdout.split(None, 2)
        sched = ""
        try:
            sched = re.search(r"\[(\w+)\]", open(f"/sys/block/{dev}/queue/scheduler").read()).group(1)
        except Exception:
            pass
        disk = (f"disk {src} ({fstype}, {info[0]}"
                + (", reported rotational" if info[1:2] == ["1"] else
                   ", reported non-rotational" if info[1:2] == ["0"] else "")
                + (f", {info[2].strip()}" if len(info) > 2 and info[2].strip() else "")
                + (f", scheduler {sched}" if sched else "") + ")")
    except Exception:
        pass
    pgv = run([os.path.join(A.bindir, "postgres"), "--version"])
    pgv = re.search(r"\(PostgreSQL\) (\S+)", pgv).group(1) if "(PostgreSQL)" in pgv else pgv.strip()
    return [f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores "
            f"({cpu}), {ram}{platform.system()} {platform.release()}, {disk}, PostgreSQL {pgv}."]


def main():
    global A, OUT, COMMAND
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--base", required=True, help="work directory (clusters, logs, out/)")
    ap.add_argument("--user", default="fastckpt", help="who runs PostgreSQL when run as root")
    ap.add_argument("--port", type=int, default=55510)
    ap.add_argument("--only", default="overhead,latency,recovery",
                    help="comma-separated phases: overhead, latency, recovery")
    ap.add_argument("--seconds", type=int, default=60, help="overhead/latency fastckpt runs")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scale", type=int, default=10, help="overhead/latency scale")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--heap-seconds", type=int, default=90, help="heap latency run (>= 60)")
    ap.add_argument("--checkpoint-method", default="merge", choices=["merge", "copy"])
    ap.add_argument("--scales", default="10 50 100", help="recovery scales, e.g. \"10 50 100\"")
    ap.add_argument("--load-seconds", type=int, default=30)
    ap.add_argument("--recovery-checkpoint-timeout", type=int, default=10)
    ap.add_argument("--recovery-repeats", type=int, default=1, help="1-worker/2-worker pairs per scale")
    ap.add_argument("--heap-checkpoint-timeout", type=int, default=300,
                    help="PostgreSQL checkpoint_timeout in the recovery cluster (s)")
    ap.add_argument("--pages", default="huge 4k",
                    help="recovery: kinds of memory page to start with, of \"huge\" (huge_pages=on "
                         "over a hugetlb pool the benchmark sizes; needs root) and \"4k\"")
    ap.add_argument("--memory-mb", type=int, default=0,
                    help="pg_fastckpt.memory_limit; default scale*150+2048")
    A = ap.parse_args()
    shown, skip = [], False
    for arg in sys.argv[1:]:        # the wrapper's own flags, without the plumbing
        if skip:
            skip = False
        elif arg in ("--bindir", "--base", "--user"):
            skip = True
        elif not arg.startswith(("--bindir=", "--base=", "--user=")):
            shown.append(arg)
    COMMAND = " ".join(["bash test/bench/ckpt_bench.sh"] + [shlex.quote(x) for x in shown])
    A.scales = [int(s) for s in re.split(r"[\s,]+", A.scales.strip()) if s]
    A.pages = [p for p in re.split(r"[\s,]+", A.pages.strip()) if p]
    if not A.pages or set(A.pages) - set(PAGE_LABEL) or len(set(A.pages)) != len(A.pages):
        ap.error(f"--pages takes some of: {', '.join(PAGE_LABEL)}")
    if "huge" in A.pages and not IS_ROOT:
        ap.error("--pages huge sizes the kernel's hugetlb pool, which needs root; use --pages 4k")
    phases = {p.strip() for p in A.only.split(",") if p.strip()}
    bad = phases - {"overhead", "latency", "recovery"}
    if bad:
        ap.error(f"unknown phase(s): {', '.join(sorted(bad))}")
    # a SIGTERM unwinds like ^C, so that the hugetlb pool is put back
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    user_dir(A.base)
    OUT = os.path.join(A.base, "out")
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    if "recovery" in phases and not IS_ROOT:
        say("not root: the page cache cannot be dropped; recovery figures will be warm-cache")
    facts = machine_facts()
    t0 = time.time()
    if phases & {"overhead", "latency"}:
        phase_overhead_latency("overhead" in phases, "latency" in phases, facts)
    if "recovery" in phases:
        phase_recovery(facts)
    say(f"done in {time.time() - t0:.0f} s; results in {OUT}")


if __name__ == "__main__":
    main()

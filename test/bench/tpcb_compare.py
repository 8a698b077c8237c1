"""TPC-B on heap (sync/async commit), UNLOGGED heap and durable fastckpt
(strict and early lock release), one cluster.

Run by tpcb_compare.sh as the unprivileged user.  Every configuration runs
in its own database of one cluster, so all share one machine state; with
--rounds > 1 the configurations are interleaved round by round.
"""
import argparse
import csv
import glob
import os
import platform
import re
import shutil
import subprocess
import time

CONFIGS = [
    # name, label, pgbench -i extra args, database settings, PGOPTIONS at init
    ("heap_sync", "heap, synchronous_commit=on", [], {"synchronous_commit": "on"}, ""),
    ("heap_async", "heap, synchronous_commit=off", [], {"synchronous_commit": "off"}, ""),
    ("heap_unlogged", "UNLOGGED heap", ["--unlogged-tables"], {"synchronous_commit": "on"}, ""),
    ("fastckpt_strict", "fastckpt, commit_mode=strict", [],
     {"synchronous_commit": "on", "pg_fastckpt.commit_mode": "strict"},
     "-c default_table_access_method=fastckpt"),
    ("fastckpt_elr", "fastckpt, early lock release", [],
     {"synchronous_commit": "on", "pg_fastckpt.commit_mode": "early_lock_release"},
     "-c default_table_access_method=fastckpt"),
    ("fastckpt_elr_bf", "fastckpt, early lock release, backend_flush=on", [],
     {"synchronous_commit": "on", "pg_fastckpt.commit_mode": "early_lock_release",
      "pg_fastckpt.backend_flush": "on"},
     "-c default_table_access_method=fastckpt"),
    # the access method alone (issue 2): records are built and appended, but
    # commits do not wait for the log (its writer is woken once a quarter of
    # its buffer waits); NOT durable
    ("fastckpt_am", "fastckpt, access method alone (commits not waited for: not durable)", [],
     {"synchronous_commit": "on", "pg_fastckpt.test_commit_no_wait": "on"},
     "-c default_table_access_method=fastckpt"),
    # the same with the function left unregistered: row images, no call checks
    ("fastckpt_am_rows", "fastckpt, access method alone, function not registered (not durable)", [],
     {"synchronous_commit": "on", "pg_fastckpt.test_commit_no_wait": "on"},
     "-c default_table_access_method=fastckpt"),
]
UNREGISTERED = {"fastckpt_am_rows"}

SCRIPTS = [("standard", "pgbench built-in TPC-B", []),
           ("procedure", "PL/pgSQL TPC-B function", None)]


def run(cmd, env=None, check=True, capture=True):
    res = subprocess.run(cmd, env=env, check=False, text=True,
                         stdout=subprocess.PIPE if capture else None,
                         stderr=subprocess.STDOUT if capture else None)
    if check and res.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{res.stdout}")
    return res.stdout or ""


def keep_subset(items, names, what):
    """Keep the items (tuples named by their first field) a comma list names."""
    if not names:
        return
    wanted = names.split(",")
    unknown = set(wanted) - {c[0] for c in items}
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(sorted(unknown))}")
    items[:] = [c for c in items if c[0] in wanted]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--benchdir", required=True)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--huge-pages", action="store_true",
                    help="huge_pages = on (tpcb_compare.sh sizes the hugetlb pool)")
    ap.add_argument("--configs", default="",
                    help="comma-separated subset of: " + ", ".join(c[0] for c in CONFIGS))
    ap.add_argument("--scripts", default="",
                    help="comma-separated subset of: " + ", ".join(c[0] for c in SCRIPTS))
    a = ap.parse_args()
    keep_subset(SCRIPTS, a.scripts, "scripts")
    keep_subset(CONFIGS, a.configs, "configurations")

    b = lambda p: os.path.join(a.bindir, p)
    data = os.path.join(a.base, "data")
    out = os.path.join(a.base, "out")
    sock = a.base
    port = "55498"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if os.path.exists(os.path.join(data, "postmaster.pid")):
        run([b("pg_ctl"), "-D", data, "-m", "immediate", "stop"], check=False)
    shutil.rmtree(data, ignore_errors=True)
    run([b("initdb"), "-D", data, "-A", "trust", "--no-sync"])
    # accounts ~1.2 kB per row, plus pgbench_history (emptied before each
    # run by pgbench itself) and undo: generous, the arena is reserved, not used
    mem_mb = a.scale * 150 + 4096
    with open(os.path.join(data, "postgresql.conf"), "a") as f:
        f.write(f"""
shared_preload_libraries = 'pg_fastckpt'
pg_fastckpt.memory_limit = '{mem_mb}MB'
port = {port}
unix_socket_directories = '{sock}'
listen_addresses = ''
max_connections = {max(50, a.clients + 10)}
shared_buffers = '1GB'
max_wal_size = '8GB'
checkpoint_timeout = '30min'
# the same checkpoint schedule for both engines: no timed checkpoint inside
# a run, each engine checkpointed between rounds (below)
pg_fastckpt.checkpoint_timeout = '30min'
pg_fastckpt.max_log_size = '8GB'
# nor one triggered by the count of logged calls (its default, 300000, is
# reached within one 20 s run of the procedure script at 8 clients)
pg_fastckpt.max_replay_calls = 0
huge_pages = {'on' if a.huge_pages else 'off'}
""")
    log = os.path.join(a.base, "server.log")
    run([b("pg_ctl"), "-D", data, "-l", log, "-w", "start"])
    conn = ["-h", sock, "-p", port]
    psql = lambda db, sql: run([b("psql"), "-X", "-Atq", *conn, "-d", db, "-c", sql]).strip()

    proc_setup = os.path.join(a.benchdir, "tpcb_proc_setup.sql")
    proc_register = os.path.join(a.benchdir, "tpcb_proc_register.sql")
    proc_script = os.path.join(a.benchdir, "tpcb_proc.sql")
    for name, _, init_args, settings, pgoptions in CONFIGS:
        run([b("createdb"), *conn, name])
        psql(name, "CREATE EXTENSION IF NOT EXISTS pg_fastckpt")
        for k, v in settings.items():
            psql("postgres", f"ALTER DATABASE {name} SET {k} = '{v}'")
        env = dict(os.environ, PGOPTIONS=pgoptions)
        run([b("pgbench"), *conn, "-i", "-q", "-s", str(a.scale), *init_args, name], env=env)
        run([b("psql"), "-X", "-q", *conn, "-d", name, "-f", proc_setup])
        if name.startswith("fastckpt") and name not in UNREGISTERED:
            # calls of the registered function are logged as CALL records
            run([b("psql"), "-X", "-q", *conn, "-d", name, "-f", proc_register])
    fc_db = next((c[0] for c in CONFIGS if c[0].startswith("fastckpt")), None)

    def checkpoint_both():
        psql("postgres", "CHECKPOINT")
        if fc_db:
            psql(fc_db, "SELECT fastckpt_checkpoint(true)")

    checkpoint_both()

    results = []
    for rnd in range(a.rounds):
        for script, _, _ in SCRIPTS:
            for name, label, _, _, _ in CONFIGS:
                prefix = os.path.join(out, f"{name}_{script}_{rnd}")
                extra = ["-f", proc_script] if script == "procedure" else []
                wal0 = psql(name, "SELECT wal_sync FROM pg_stat_wal")
                log_q = ("SELECT values_records + call_records, flushes, bytes, commit_waits, "
                         "commit_wait_ms, call_records FROM fastckpt_stat_log")
                log0 = [float(x) for x in psql(name, log_q).split("|")]
                # pgbench's own pre-run step: VACUUM branches/tellers, empty history
                res = run([b("pgbench"), *conn, "-c", str(a.clients), "-j", str(a.jobs),
                           "-T", str(a.seconds), "-s", str(a.scale), "-l",
                           "--log-prefix", prefix, *extra, name])
                wal1 = psql(name, "SELECT wal_sync FROM pg_stat_wal")
                log1 = [float(x) for x in psql(name, log_q).split("|")]
                d = [y - x for x, y in zip(log0, log1)]
                tps = float(re.search(r"tps = ([\d.]+)", res).group(1))
                n = int(re.search(r"actually processed: (\d+)", res).group(1))
                failed = int(re.search(r"failed transactions: (\d+)", res).group(1))
                lat = []
                for fn in glob.glob(prefix + ".*"):
                    with open(fn) as f:
                        lat.extend(int(line.split()[2]) for line in f)
                    os.remove(fn)
                lat.sort()
                pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1000.0
                results.append(dict(round=rnd, script=script, config=name, label=label,
                                    tps=tps, transactions=n, failed=failed,
                                    lat_avg_ms=sum(lat) / len(lat) / 1000.0,
                                    lat_p50_ms=pct(0.50), lat_p99_ms=pct(0.99),
                                    wal_syncs_per_txn=(int(wal1) - int(wal0)) / max(n, 1),
                                    log_commits_per_flush=d[0] / d[1] if d[1] else 0.0,
                                    log_bytes_per_txn=d[2] / max(n, 1),
                                    log_call_share=d[5] / d[0] if d[0] else 0.0,
                                    log_commit_wait_ms=d[4] / d[3] if d[3] else 0.0))
                print(f"{script:9} {name:14} {tps:9.0f} tps  p99 {pct(0.99):6.2f} ms", flush=True)
                time.sleep(2)
        checkpoint_both()

    # sanity: balances agree in every database after all runs
    checks = {}
    for name, *_ in CONFIGS:
        checks[name] = psql(name, "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = "
                                  "(SELECT sum(bbalance) FROM pgbench_branches)")
    run([b("pg_ctl"), "-D", data, "-m", "fast", "stop"])

    with open(os.path.join(out, "tpcb_results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0].keys()))
        w.writeheader()
        w.writerows(results)

    def med(script, config, key):
        vals = sorted(r[key] for r in results if r["script"] == script and r["config"] == config)
        n = len(vals)
        return vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2

    def ratios(script, config, base):
        """Per-round ratio to a baseline measured in the same round."""
        out = []
        for rnd in range(a.rounds):
            mine = [r["tps"] for r in results if r["script"] == script and r["config"] == config and r["round"] == rnd]
            ref = [r["tps"] for r in results if r["script"] == script and r["config"] == base and r["round"] == rnd]
            if mine and ref:
                out.append(mine[0] / ref[0])
        return out

    cpu = ""
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except Exception:
        pass
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores ({cpu}), "
        f"{platform.system()} {platform.release()}, PostgreSQL "
        + run([b("postgres"), "--version"]).split()[-1] + ".",
        "",
        f"Command: `bash test/bench/tpcb_compare.sh --seconds {a.seconds} --scale {a.scale} "
        f"--clients {a.clients} --rounds {a.rounds}"
        + (f" --configs {a.configs}" if a.configs else "")
        + (f" --scripts {a.scripts}" if a.scripts else "")
        + (" --huge-pages" if a.huge_pages else "") + f"`; pgbench -c {a.clients} -j {a.jobs} "
        f"-T {a.seconds}, scale {a.scale}, one cluster (shared_buffers 1GB, max_wal_size 8GB, "
        "checkpoint_timeout and pg_fastckpt.checkpoint_timeout 30min, pg_fastckpt.max_log_size 8GB, "
        "pg_fastckpt.max_replay_calls 0, "
        "both engines checkpointed after loading and after each round, "
        + ("huge_pages on: shared buffers and the fastckpt arena on 2 MB pages" if a.huge_pages
           else "huge_pages off: 4 kB pages") + "), "
        "one database per configuration; each round runs every configuration in turn. "
        "Table: medians over rounds; ratios in the table are of those medians. "
        "The PL/pgSQL function is registered (fastckpt_register_procedure) in the fastckpt "
        "databases; \"CALL records\" is the share of commits logged as one CALL record "
        "instead of row images (VALUES).",
        "",
    ]
    present = {c[0] for c in CONFIGS}
    for script, title, _ in SCRIPTS:
        unl = med(script, "heap_unlogged", "tps") if "heap_unlogged" in present else None
        syn = med(script, "heap_sync", "tps") if "heap_sync" in present else None
        asy = med(script, "heap_async", "tps") if "heap_async" in present else None
        ratio = lambda t, ref: f"{t / ref:.2f}x" if ref else "-"
        lines += [f"**{title}**", "",
                  "| configuration | tps | avg latency ms | p50 ms | p99 ms | vs UNLOGGED | vs heap sync | "
                  "vs heap async | WAL fsyncs/txn | log commits/flush | log bytes/txn | CALL records | log wait ms |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, label, *_ in CONFIGS:
            t = med(script, name, "tps")
            fc = name.startswith("fastckpt")
            lines.append(f"| {label} | {t:,.0f} | {med(script, name, 'lat_avg_ms'):.2f} | "
                         f"{med(script, name, 'lat_p50_ms'):.2f} | "
                         f"{med(script, name, 'lat_p99_ms'):.2f} | {ratio(t, unl)} | {ratio(t, syn)} | "
                         f"{ratio(t, asy)} | {med(script, name, 'wal_syncs_per_txn'):.2f} | "
                         + (f"{med(script, name, 'log_commits_per_flush'):.2f} | "
                            f"{med(script, name, 'log_bytes_per_txn'):.0f} | "
                            f"{100 * med(script, name, 'log_call_share'):.0f}% | "
                            f"{med(script, name, 'log_commit_wait_ms'):.3f} |" if fc else "- | - | - | - |"))
        lines.append("")
        for mine, base in (("fastckpt_elr", "heap_sync"), ("fastckpt_elr", "heap_async"),
                           ("fastckpt_strict", "heap_sync"), ("fastckpt_elr", "heap_unlogged"),
                           ("fastckpt_elr_bf", "heap_sync"), ("fastckpt_elr_bf", "heap_async"),
                           ("fastckpt_elr_bf", "fastckpt_elr"), ("fastckpt_am", "heap_unlogged"),
                           ("fastckpt_am", "heap_async"), ("fastckpt_am_rows", "heap_unlogged"),
                           ("fastckpt_am", "fastckpt_am_rows")):
            per_round = ratios(script, mine, base)
            if not per_round:
                continue
            lines.append(f"{mine} / {base}, round by round: "
                         + ", ".join(f"{x:.2f}" for x in per_round)
                         + f" (mean {sum(per_round) / len(per_round):.2f}).  ")
        lines.append("")
    bad = [k for k, v in checks.items() if v != "t"]
    lines.append("Balance check after the runs (sum(abalance) = sum(bbalance)): "
                 + ("passed in every database." if not bad else f"FAILED in {', '.join(bad)}."))
    with open(os.path.join(out, "tpcb_results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

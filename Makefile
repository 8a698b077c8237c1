# pg_fastckpt: PGXS build.  `make && make install`, then see README.md.

EXTENSION = pg_fastckpt
MODULE_big = pg_fastckpt
DATA = sql/pg_fastckpt--1.0.sql
PGFILEDESC = "pg_fastckpt - shared-memory table access method"

OBJS = \
	src/pg_fastckpt.o \
	src/durable_io.o \
	src/core/pingpong.o \
	src/core/crc32c.o \
	src/core/log_format.o \
	src/core/prepared_format.o \
	src/core/log_stream.o \
	src/core/ckpt_format.o \
	src/core/ckpt_scan.o \
	src/core/ckpt_policy.o \
	src/store/arena.o \
	src/store/table_store.o \
	src/store/temp_quota.o \
	src/store/row_size.o \
	src/store/undo.o \
	src/access/handler.o \
	src/access/visibility.o \
	src/access/tuple_io.o \
	src/access/scan.o \
	src/access/index_fetch.o \
	src/access/modify.o \
	src/access/old_table_ancestors.o \
	src/access/relid_cache.o \
	src/access/ssi.o \
	src/access/row_lock.o \
	src/access/tid_versions.o \
	src/access/ddl.o \
	src/access/storage_options.o \
	src/access/index_build.o \
	src/access/vacuum.o \
	src/access/utility.o \
	src/txn/write_set.o \
	src/txn/locked_rows.o \
	src/txn/prepare_locks.o \
	src/txn/prepared.o \
	src/txn/prepared_row_locks.o \
	src/txn/sequence_flush.o \
	src/txn/pending_drop.o \
	src/txn/commit.o \
	src/txn/client_output.o \
	src/txn/read_set.o \
	src/log/log_buffer.o \
	src/log/log_segment.o \
	src/log/log_self_flush.o \
	src/log/log_space.o \
	src/log/log_writer.o \
	src/ckpt/ckpt_shared.o \
	src/ckpt/ckpt_base.o \
	src/ckpt/ckpt_files.o \
	src/ckpt/ckpt_write.o \
	src/ckpt/ckpt_worker.o \
	src/ckpt/ckpt_load.o \
	src/recovery/gate.o \
	src/recovery/replay.o \
	src/recovery/replay_workers.o \
	src/recovery/call_replay.o \
	src/recovery/attempts.o \
	src/recovery/startup.o \
	src/recovery/timeline.o \
	src/recovery/worker_slots.o \
	src/procs/registry.o \
	src/procs/routine_fingerprint.o \
	src/procs/catalog_watch.o \
	src/procs/call_capture.o \
	src/procs/determinism.o \
	src/procs/folded_queries.o \
	src/procs/helpers.o \
	src/monitor/stats.o

# pg_fastckpt_verify: offline check of the checkpoints, log and prepared
# transactions' files; pure C, it links the core's codecs and no PostgreSQL
# code (own flags: PGXS's CFLAGS are the server's).
SCRIPTS_built = pg_fastckpt_verify
VERIFY_SRCS = \
	$(srcdir)/src/tools/verify_main.c \
	$(srcdir)/src/tools/verify_ckpt.c \
	$(srcdir)/src/tools/verify_log.c \
	$(srcdir)/src/tools/verify_prepared.c \
	$(srcdir)/src/core/crc32c.c \
	$(srcdir)/src/core/ckpt_format.c \
	$(srcdir)/src/core/ckpt_scan.c \
	$(srcdir)/src/core/log_format.c \
	$(srcdir)/src/core/log_stream.c \
	$(srcdir)/src/core/prepared_format.c
VERIFY_CFLAGS = -O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter

PG_CPPFLAGS = -I$(srcdir)/src
# rebuild objects whose headers changed (PGXS tracks no dependencies itself)
PG_CFLAGS = -MMD -MP

TEST_CONF = $(srcdir)/test/fastckpt_test.conf

REGRESS = setup ddl dml types indexes constraints copy truncate_drop rewrite \
	analyze_vacuum errors stats memory_formula bytes_per_char procedures call_inputs \
	call_hidden_reads \
	row_versions tablesample brin concurrent_index two_phase
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=$(TEST_CONF)

ISOLATION = read_committed repeatable_read row_locks savepoints long_scan \
	unique_insert call_read_conflict call_catalog_change partition_move \
	serializable trigger_recheck lock_upgrade foreign_keys rr_committed_update \
	concurrent_index brin_summarize two_phase prepared_row_locks
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation \
	--temp-instance=tmp_check_iso --temp-config=$(TEST_CONF)

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

EXTRA_CLEAN = tmp_check_regress tmp_check_iso output_iso $(OBJS:.o=.d)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

-include $(OBJS:.o=.d)

pg_fastckpt_verify: $(VERIFY_SRCS) $(wildcard $(srcdir)/src/tools/*.h $(srcdir)/src/core/*.h)
	$(CC) $(VERIFY_CFLAGS) -I$(srcdir)/src -o $@ $(VERIFY_SRCS)

# Property tests of the on-disk formats' codecs under ASan and UBSan.
.PHONY: fuzz-formats
fuzz-formats:
	bash $(srcdir)/test/fuzz/run.sh

# The synthetic Ping-Pong microbenchmark (no PostgreSQL needed to run it).
.PHONY: bench-pingpong
bench-pingpong:
	$(MAKE) -C $(srcdir)/test/bench/pingpong

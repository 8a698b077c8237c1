/*-------------------------------------------------------------------------
 *
 * verify_ckpt.c
 *	  pg_fastckpt_verify: the control file and every checkpoint it names.
 *
 * Checks what recovery checks when it loads a checkpoint (the control
 * file's and manifest's CRCs, every block's CRC and place, each file's
 * size, record count and CRC chain against the manifest, each chunk's live
 * rows once its deltas are applied), for the older checkpoint as well:
 * recovery falls back to it when the installed one is damaged.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ckpt_format.h"
#include "core/ckpt_scan.h"
#include "core/file_layout.h"
#include "tools/verify.h"

/* Totals of one checkpoint. */
typedef struct fc_ckpt_totals
{
	uint64_t	files;
	uint64_t	bytes;
	uint64_t	rows;
	int			damaged_chunks;
} fc_ckpt_totals;

/*
 * Read a whole small file (control file, manifest).  NULL with *missing
 * set when it does not exist; NULL after reporting any other failure.
 */
static char *
fc_read_whole(fc_verify *v, const char *path, size_t *len, int *missing)
{
	int			fd = open(path, O_RDONLY);
	struct stat st;
	char	   *buf;
	size_t		done = 0;

	*missing = 0;
	if (fd < 0)
	{
		if (errno == ENOENT)
			*missing = 1;
		else
			fc_verify_problem(v, "could not open \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		fc_verify_problem(v, "could not stat \"%s\": %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	buf = fc_verify_alloc((size_t) st.st_size + 1);
	while (done < (size_t) st.st_size)
	{
		ssize_t		got = read(fd, buf + done, (size_t) st.st_size - done);

		if (got < 0)
		{
			fc_verify_problem(v, "could not read \"%s\": %s", path, strerror(errno));
			free(buf);
			close(fd);
			return NULL;
		}
		if (got == 0)
			break;
		done += (size_t) got;
	}
	close(fd);
	*len = done;
	return buf;
}

/* A chunk being checked: its map of occupied slots, and their count. */
typedef struct fc_chunk_check
{
	const fc_ckpt_table *tab;
	uint32_t	chunkno;
	uint8_t    *present;		/* FC_CKPT_CHUNK_SLOTS bits */
	int64_t		live;
	char		problem[256];
} fc_chunk_check;

/* fc_ckpt_block_fn: apply a block's rows to the map, as a loader does. */
static const char *
fc_check_block_rows(void *arg, const char *block)
{
	fc_chunk_check *c = (fc_chunk_check *) arg;
	fc_ckpt_row_iter it;
	const fc_ckpt_row *row;
	const char *image;

	fc_ckpt_rows_begin(&it, block);
	while (fc_ckpt_rows_next(&it, &row, &image))
	{
		uint64_t	slotno = (uint64_t) c->chunkno * FC_CKPT_CHUNK_SLOTS + row->slot;
		uint8_t		bit = (uint8_t) (1u << (row->slot % 8));

		if (slotno >= c->tab->nslots ||
			(row->len != FC_CKPT_TOMBSTONE && row->len > c->tab->image_capacity))
		{
			snprintf(c->problem, sizeof(c->problem),
					 "a row of slot %llu, %u bytes, lies outside the table's %llu slots of %u bytes",
					 (unsigned long long) slotno, row->len,
					 (unsigned long long) c->tab->nslots, c->tab->image_capacity);
			return c->problem;
		}
		if (c->present[row->slot / 8] & bit)
			c->live--;
		if (row->len == FC_CKPT_TOMBSTONE)
			c->present[row->slot / 8] &= (uint8_t) ~bit;
		else
		{
			c->present[row->slot / 8] |= bit;
			c->live++;
		}
	}
	return NULL;
}

static int64_t
fc_check_read(void *arg, char *dst, size_t len)
{
	return read(*(int *) arg, dst, len);
}

/* Check one file of a chunk against the manifest; NULL, or what is wrong. */
static const char *
fc_check_chunk_file(const char *path, const fc_ckpt_file_want *want,
					fc_chunk_check *c, char *buf, char *errbuf, size_t errlen)
{
	int			fd = open(path, O_RDONLY);
	uint64_t	bytes;
	const char *problem;

	if (fd < 0)
	{
		snprintf(errbuf, errlen, "could not open: %s", strerror(errno));
		return errbuf;
	}
	problem = fc_ckpt_scan_file(fc_check_read, &fd, want, fc_check_block_rows, c,
								buf, &bytes, errbuf, errlen);
	close(fd);
	return problem;
}

/* Check every file of one table in a checkpoint. */
static void
fc_check_table(fc_verify *v, uint64_t seq, const fc_ckpt_table *tab, char *buf,
			   fc_ckpt_totals *totals)
{
	const fc_ckpt_chunk *chunks = fc_ckpt_table_chunks(tab);
	const fc_ckpt_delta *deltas = fc_ckpt_table_deltas(tab);
	uint8_t    *present = fc_verify_alloc(FC_CKPT_CHUNK_SLOTS / 8);
	uint64_t	rows = 0;
	uint64_t	bytes = 0;
	int			damaged = 0;

	for (uint32_t n = 0; n < tab->nchunks; n++)
	{
		const fc_ckpt_chunk *chunk = &chunks[n];
		const char *problem = NULL;
		fc_chunk_check check;
		char		errbuf[512];

		memset(present, 0, FC_CKPT_CHUNK_SLOTS / 8);
		check.tab = tab;
		check.chunkno = chunk->chunkno;
		check.present = present;
		check.live = 0;
		for (uint32_t layer = 0; problem == NULL && layer <= chunk->ndeltas; layer++)
		{
			fc_ckpt_file_want want;
			char	   *path;

			path = layer == 0 ?
				fc_verify_path(v, FC_CKPT_DIR "/" FC_HEX_NAME_FMT "/" FC_CKPT_CHUNK_FMT,
							   (unsigned long long) seq, tab->dbid, tab->spcid,
							   tab->relnode, chunk->chunkno) :
				fc_verify_path(v, FC_CKPT_DIR "/" FC_HEX_NAME_FMT "/" FC_CKPT_DELTA_FMT,
							   (unsigned long long) seq, tab->dbid, tab->spcid,
							   tab->relnode, chunk->chunkno, layer);
			fc_ckpt_file_wanted(tab, chunk, layer, &want);
			problem = fc_check_chunk_file(path, &want, &check, buf, errbuf, sizeof(errbuf));
			if (problem != NULL)
				fc_verify_problem(v, "checkpoint %llu: \"%s\": %s", (unsigned long long) seq,
								  path, problem);
			free(path);
			totals->files++;
		}
		if (problem == NULL && check.live != (int64_t) chunk->rows)
		{
			problem = "live rows";
			fc_verify_problem(v, "checkpoint %llu: chunk %u of relation file %u holds %lld rows once its %u deltas are applied, the manifest says %llu",
							  (unsigned long long) seq, chunk->chunkno, tab->relnode,
							  (long long) check.live, chunk->ndeltas,
							  (unsigned long long) chunk->rows);
		}
		if (problem != NULL)
			damaged++;
		rows += chunk->rows;
		bytes += chunk->bytes;
	}
	for (uint32_t k = 0; k < tab->ndeltas; k++)
		bytes += deltas[k].bytes;
	if (rows != tab->rows || bytes != tab->bytes)
		fc_verify_warning(v, "checkpoint %llu: relation file %u: its chunks hold %llu rows in %llu bytes, its manifest entry says %llu rows in %llu bytes (recovery does not use these totals)",
						  (unsigned long long) seq, tab->relnode,
						  (unsigned long long) rows, (unsigned long long) bytes,
						  (unsigned long long) tab->rows, (unsigned long long) tab->bytes);
	fc_verify_detail(v, "relation file %u_%u_%u (pg_class OID %u): %llu rows, %u chunks, %u deltas, %llu bytes, %llu slots of %u bytes%s",
					 tab->dbid, tab->spcid, tab->relnode, tab->relid,
					 (unsigned long long) tab->rows, tab->nchunks, tab->ndeltas,
					 (unsigned long long) tab->bytes, (unsigned long long) tab->nslots,
					 tab->image_capacity, damaged > 0 ? ": DAMAGED" : "");
	totals->rows += rows;
	totals->bytes += bytes;
	totals->damaged_chunks += damaged;
	free(present);
}

/* Check one checkpoint the control file names; true if recovery can load it. */
static int
fc_check_checkpoint(fc_verify *v, const fc_ckpt_ref *ref, const char *role, char *buf)
{
	char	   *path = fc_verify_path(v, FC_CKPT_DIR "/" FC_HEX_NAME_FMT "/" FC_CKPT_MANIFEST_NAME,
									  (unsigned long long) ref->seq);
	size_t		len = 0;
	int			missing;
	char	   *manifest = fc_read_whole(v, path, &len, &missing);
	const fc_ckpt_manifest *m;
	const fc_ckpt_table *tab;
	const char *problem;
	fc_ckpt_totals totals;
	char		status[64];
	int			before = v->problems;

	if (manifest == NULL)
	{
		if (missing)
			fc_verify_problem(v, "checkpoint %llu (%s): manifest \"%s\" is missing",
							  (unsigned long long) ref->seq, role, path);
		free(path);
		return 0;
	}
	problem = fc_ckpt_manifest_check(manifest, len);
	m = (const fc_ckpt_manifest *) manifest;
	if (problem == NULL &&
		(m->crc != ref->manifest_crc || m->seq != ref->seq || m->csn != ref->csn ||
		 m->start_lsn != ref->start_lsn || m->total_len != ref->manifest_len))
		problem = "it does not match the control file (CRC, number, CSN, log start or length)";
	if (problem != NULL)
	{
		fc_verify_problem(v, "checkpoint %llu (%s): manifest \"%s\": %s",
						  (unsigned long long) ref->seq, role, path, problem);
		free(manifest);
		free(path);
		return 0;
	}
	free(path);

	fc_verify_info(v, "checkpoint %llu (%s): CSN %llu, log from %llu, %u tables",
				   (unsigned long long) ref->seq, role, (unsigned long long) m->csn,
				   (unsigned long long) m->start_lsn, m->ntables);
	memset(&totals, 0, sizeof(totals));
	tab = fc_ckpt_first_table(manifest);
	for (uint32_t t = 0; t < m->ntables; t++, tab = fc_ckpt_next_table(tab))
		fc_check_table(v, ref->seq, tab, buf, &totals);
	/* totals recovery does not use: a writer's slip, not damage */
	if (totals.rows != m->rows || totals.bytes != m->bytes)
		fc_verify_warning(v, "checkpoint %llu (%s): its tables hold %llu rows in %llu bytes, the manifest header says %llu rows in %llu bytes (recovery does not use these totals)",
						  (unsigned long long) ref->seq, role,
						  (unsigned long long) totals.rows, (unsigned long long) totals.bytes,
						  (unsigned long long) m->rows, (unsigned long long) m->bytes);
	if (v->problems == before)
		snprintf(status, sizeof(status), "ok");
	else
		snprintf(status, sizeof(status), "DAMAGED (%d of its chunks)", totals.damaged_chunks);
	fc_verify_info(v, "checkpoint %llu: %llu chunks in %llu files, %llu rows, %.1f MB: %s",
				   (unsigned long long) ref->seq,
				   (unsigned long long) m->nchunks, (unsigned long long) totals.files,
				   (unsigned long long) totals.rows, (double) totals.bytes / (1024.0 * 1024.0),
				   status);
	free(manifest);
	return v->problems == before;
}

void
fc_verify_checkpoints(fc_verify *v, fc_verify_ckpt *out)
{
	char	   *path = fc_verify_path(v, FC_CKPT_CONTROL);
	size_t		len = 0;
	int			missing;
	char	   *raw = fc_read_whole(v, path, &len, &missing);
	fc_ckpt_control ctl;
	const char *problem;
	char	   *buf;
	int			usable = 0;
	int			installed_ok = 0;

	memset(out, 0, sizeof(*out));
	if (raw == NULL)
	{
		if (missing)
			fc_verify_info(v, "checkpoints: none (no control file \"%s\"): recovery replays the log from its beginning",
						   path);
		free(path);
		return;
	}
	problem = fc_ckpt_control_check((const fc_ckpt_control *) raw, len);
	if (problem != NULL)
	{
		fc_verify_problem(v, "control file \"%s\": %s; the server will not open fastckpt tables",
						  path, problem);
		free(raw);
		free(path);
		return;
	}
	memcpy(&ctl, raw, sizeof(ctl));
	free(raw);
	if (ctl.nrefs == 0)
	{
		fc_verify_problem(v, "control file \"%s\" names no checkpoint; the server will not open fastckpt tables",
						  path);
		free(path);
		return;
	}
	free(path);

	out->found = 1;
	out->installed_seq = ctl.refs[0].seq;
	out->installed_lsn = ctl.refs[0].start_lsn;
	out->oldest_seq = ctl.refs[ctl.nrefs - 1].seq;
	out->oldest_lsn = ctl.refs[ctl.nrefs - 1].start_lsn;

	buf = fc_verify_alloc(FC_CKPT_SCAN_BUFFER);
	for (uint32_t i = 0; i < ctl.nrefs; i++)
	{
		int			ok = fc_check_checkpoint(v, &ctl.refs[i],
											 i == 0 ? "installed" : "previous", buf);

		if (i == 0)
			installed_ok = ok;
		usable += ok;
	}
	free(buf);
	if (usable == 0)
		fc_verify_info(v, "checkpoints: none usable: recovery would refuse to open the tables");
	else if (!installed_ok)
		fc_verify_info(v, "checkpoints: recovery would fall back to checkpoint %llu, with a longer replay of the log",
					   (unsigned long long) ctl.refs[1].seq);
	else if (usable < (int) ctl.nrefs)
		fc_verify_info(v, "checkpoints: the installed one is usable, but there is no fallback if it is damaged later");
}

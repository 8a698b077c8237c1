/*
 * fuzz_formats.c -- property tests, under AddressSanitizer and
 * UndefinedBehaviorSanitizer, of the on-disk formats' codecs in the pure-C
 * core, the very code the server and pg_fastckpt_verify run: log records
 * (validation, entry walkers, CALL parsing), the log stream across segment
 * files, checkpoint blocks, chunk-file scans, manifests, the control
 * file and prepared transactions' files.
 *
 * Each case builds a random well-formed object and checks that it reads
 * back exactly; then damages it two ways.  Damage the CRC covers must be
 * refused.  Damage behind a recomputed CRC (what a bug in a writer, or a
 * crafted file, would leave) may be accepted, but nothing read from it may
 * point outside the object: every object lives in a buffer of exactly its
 * size, so an overrun is a sanitizer report.
 *
 *   fuzz_formats [CASES [SEED]]      prints "N cases, 0 failures"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ckpt_format.h"
#include "core/ckpt_scan.h"
#include "core/crc32c.h"
#include "core/log_format.h"
#include "core/log_stream.h"
#include "core/prepared_format.h"

static uint64_t rng_state;
static long failures;

/* damaged objects accepted behind a recomputed CRC, then walked */
static long walked_records;
static long walked_blocks;
static long walked_manifests;
static long walked_prepared;

/* inputs larger than the readers' buffers (their refill paths) */
static long long_streams;
static long long_files;

#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
		{ \
			failures++; \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

static uint64_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint32_t
below(uint32_t n)
{
	return n == 0 ? 0 : (uint32_t) (rnd() % n);
}

static void
fill_random(void *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((unsigned char *) p)[i] = (unsigned char) rnd();
}

/* A copy in a buffer of exactly len bytes (at least 1). */
static char *
exact(const void *src, size_t len)
{
	char	   *p = malloc(len ? len : 1);

	if (p == NULL)
		abort();
	memcpy(p, src, len);
	return p;
}

/* Change one byte to a different value. */
static void
flip_byte(char *buf, size_t len)
{
	size_t		at = below((uint32_t) len);

	buf[at] = (char) (buf[at] ^ (1 + below(255)));
}

/* Random damage: a few bytes, or a value planted in a 32-bit field. */
static void
scramble(char *buf, size_t len, size_t from)
{
	int			n = 1 + below(4);

	if (len <= from)
		return;
	for (int i = 0; i < n; i++)
	{
		size_t		at = from + below((uint32_t) (len - from));
		size_t		word = at - at % 4;

		if (below(3) == 0 && word >= from && word + 4 <= len)
		{
			static const uint32_t edge[] = {0, 1, 7, 8, 0x7FFFFFFF, 0xFFFFFFF0,
			0xFFFFFFF9, 0xFFFFFFFE, 0xFFFFFFFF, 65535, 65536, 1u << 20};
			uint32_t	v = edge[below(sizeof(edge) / sizeof(edge[0]))];

			memcpy(buf + word, &v, 4);
		}
		else
			buf[at] = (char) rnd();
	}
}

static int
inside(const char *p, size_t n, const char *lo, const char *hi)
{
	return p >= lo && p <= hi && (size_t) (hi - p) >= n;
}

/* ---- log records ---- */

typedef struct built_record
{
	char	   *buf;
	uint32_t	len;
	uint64_t	lsn;
} built_record;

/* big: a VALUES record of up to ~1 MB, to cross the readers' buffers */
static built_record
build_record(uint64_t lsn, int big)
{
	char	   *tmp = calloc(1, big ? FC_LOG_MAX_RECORD : 64 * 1024);
	fc_log_header *h = (fc_log_header *) tmp;
	uint32_t	pos = FC_LOG_HEADER_SIZE;
	built_record r;

	if (tmp == NULL)
		abort();
	h->csn = rnd();
	h->xid = rnd();
	h->dbid = (uint32_t) rnd();
	h->kind = big ? FC_REC_VALUES : (uint8_t) (1 + below(FC_REC_KIND_MAX));
	h->flags = (uint8_t) below(2);
	if (h->kind == FC_REC_VALUES)
	{
		h->nentries = (uint16_t) (big ? 1 + below(2) : below(9));
		for (int i = 0; i < h->nentries; i++)
		{
			fc_log_row *row = (fc_log_row *) (tmp + pos);

			row->spcid = (uint32_t) rnd();
			row->relnode = (uint32_t) rnd();
			row->slotno = rnd();
			row->len = big ? 1 + below(FC_LOG_MAX_RECORD / 2 - 64) :
				below(5) == 0 ? FC_LOG_TOMBSTONE : below(400);
			if (row->len != FC_LOG_TOMBSTONE)
				fill_random(tmp + pos + sizeof(fc_log_row), row->len);
			pos += fc_log_row_size(row->len);
		}
	}
	else if (h->kind == FC_REC_DDL)
	{
		h->nentries = (uint16_t) below(5);
		for (int i = 0; i < h->nentries; i++)
		{
			fc_log_ddl *d = (fc_log_ddl *) (tmp + pos);

			fill_random(d, sizeof(*d));
			d->op = 1 + below(3);
			pos += sizeof(fc_log_ddl);
		}
	}
	else if (h->kind == FC_REC_CALL)
	{
		fc_log_call *c = (fc_log_call *) (tmp + pos);
		uint32_t	nslots = below(6);
		uint32_t	nargs = below(5);
		uint32_t	args_len = below(100);
		uint32_t	sp_len = below(40);

		fill_random(c, sizeof(*c));
		c->nargs = (uint16_t) nargs;
		c->args_len = args_len;
		c->search_path_len = sp_len;
		h->nentries = (uint16_t) nslots;
		pos = fc_log_call_size(nslots, nargs, args_len, sp_len);
		fill_random(tmp + FC_LOG_HEADER_SIZE + sizeof(fc_log_call),
					pos - FC_LOG_HEADER_SIZE - sizeof(fc_log_call));
	}
	h->len = pos;
	fc_log_seal(tmp, lsn);
	r.buf = exact(tmp, pos);
	r.len = pos;
	r.lsn = lsn;
	free(tmp);
	return r;
}

/* Walk a record the way recovery does; nothing may point outside it. */
static void
walk_record(const fc_log_header *rec)
{
	const char *lo = (const char *) rec;
	const char *hi = lo + rec->len;
	fc_log_cursor cur;

	fc_log_cursor_init(&cur, rec);
	if (rec->kind == FC_REC_VALUES)
	{
		const fc_log_row *row;
		const char *image;

		while (fc_log_next_row(&cur, &row, &image))
		{
			CHECK(inside((const char *) row, sizeof(*row), lo, hi), "row header outside the record");
			if (row->len != FC_LOG_TOMBSTONE)
				CHECK(inside(image, row->len, lo, hi),
					  "row image of %u bytes outside a record of %u", row->len, rec->len);
		}
	}
	else if (rec->kind == FC_REC_DDL)
	{
		const fc_log_ddl *ddl;

		while (fc_log_next_ddl(&cur, &ddl))
			CHECK(inside((const char *) ddl, sizeof(*ddl), lo, hi), "DDL entry outside the record");
	}
	else if (rec->kind == FC_REC_CALL)
	{
		fc_log_call_view view;

		if (fc_log_call_parse(rec, &view))
		{
			CHECK(inside((const char *) view.call, sizeof(fc_log_call), lo, hi), "call outside");
			CHECK(inside((const char *) view.slots, (size_t) rec->nentries * sizeof(fc_log_call_slot), lo, hi),
				  "call slots outside");
			CHECK(inside((const char *) view.args, (size_t) view.call->nargs * sizeof(fc_log_call_arg), lo, hi),
				  "call arguments outside");
			CHECK(inside(view.arg_data, view.call->args_len, lo, hi), "argument data outside");
			CHECK(inside(view.search_path, view.call->search_path_len, lo, hi), "search_path outside");
		}
	}
}

static void
case_log_record(void)
{
	uint64_t	lsn = (rnd() % (1ULL << 40)) & ~7ULL;
	built_record r = build_record(lsn, 0);
	const fc_log_header *h = (const fc_log_header *) r.buf;
	uint32_t	need = 0;
	char	   *copy;

	CHECK(fc_log_validate(r.buf, r.len, lsn, FC_LOG_MAX_RECORD, &need) == FC_LOG_VALID,
		  "a sealed record of kind %d does not validate", h->kind);
	CHECK(fc_log_validate(r.buf, r.len, lsn + 8, FC_LOG_MAX_RECORD, &need) == FC_LOG_INVALID,
		  "a record validates at another position");
	if (r.len > FC_LOG_HEADER_SIZE)
		CHECK(fc_log_validate(r.buf, r.len - 1, lsn, FC_LOG_MAX_RECORD, &need) == FC_LOG_SHORT &&
			  need == r.len, "a cut record is not short");
	walk_record(h);
	if (h->kind == FC_REC_VALUES || h->kind == FC_REC_DDL)
	{
		fc_log_cursor cur;
		const fc_log_row *row;
		const fc_log_ddl *ddl;
		const char *image;
		int			n = 0;

		fc_log_cursor_init(&cur, h);
		if (h->kind == FC_REC_VALUES)
			while (fc_log_next_row(&cur, &row, &image))
				n++;
		else
			while (fc_log_next_ddl(&cur, &ddl))
				n++;
		CHECK(n == h->nentries && !cur.corrupt && cur.pos == cur.end,
			  "entries read back %d of %d, corrupt %d", n, h->nentries, cur.corrupt);
	}
	if (h->kind == FC_REC_CALL)
	{
		fc_log_call_view view;

		CHECK(fc_log_call_parse(h, &view), "a built CALL record does not parse");
	}

	/* damage under the CRC: refused */
	copy = exact(r.buf, r.len);
	flip_byte(copy, r.len);
	CHECK(fc_log_validate(copy, r.len, lsn, FC_LOG_MAX_RECORD, &need) != FC_LOG_VALID,
		  "a damaged record validates");
	free(copy);

	/* damage behind a recomputed CRC: whatever is accepted stays inside */
	copy = exact(r.buf, r.len);
	scramble(copy, r.len, 4);
	{
		fc_log_header *d = (fc_log_header *) copy;

		if (d->len >= FC_LOG_HEADER_SIZE && d->len <= r.len)
		{
			char	   *sized;

			fc_log_seal(copy, lsn);
			sized = exact(copy, d->len);
			if (fc_log_validate(sized, d->len, lsn, FC_LOG_MAX_RECORD, &need) == FC_LOG_VALID)
			{
				walk_record((const fc_log_header *) sized);
				walked_records++;
			}
			free(sized);
		}
		else
			CHECK(fc_log_validate(copy, r.len, lsn, FC_LOG_MAX_RECORD, &need) != FC_LOG_VALID,
				  "a record longer than its bytes validates");
	}
	free(copy);
	free(r.buf);
}

/* ---- the log stream across segments ---- */

typedef struct mem_log
{
	uint64_t	base;			/* position of data[0] */
	uint64_t	len;
	char	   *data;
	int			missing_seg;	/* a segment index (from base's) to hide, or -1 */
} mem_log;

static uint64_t
mem_log_read(void *arg, uint64_t segstart, uint64_t offset, char *dst, uint64_t len)
{
	mem_log    *m = (mem_log *) arg;
	uint64_t	at = segstart + offset;
	uint64_t	first_seg = m->base - m->base % FC_LOG_SEGMENT_SIZE;

	if (m->missing_seg >= 0 &&
		segstart == first_seg + (uint64_t) m->missing_seg * FC_LOG_SEGMENT_SIZE)
		return 0;
	if (at < m->base || at >= m->base + m->len)
		return 0;
	if (len > m->base + m->len - at)
		len = m->base + m->len - at;
	memcpy(dst, m->data + (at - m->base), len);
	return len;
}

static void
case_log_stream(char *buffer)
{
	/* start close to a segment boundary, so records cross it */
	uint64_t	seg = (1 + below(1000)) * (uint64_t) FC_LOG_SEGMENT_SIZE;
	uint64_t	start = seg - 8 * (1 + below(2000));
	int			big = below(20) == 0;	/* records up to 1 MB: past the 4 MB buffer */
	int			n = big ? 8 + below(8) : 1 + below(40);
	uint64_t   *lsns = malloc(sizeof(uint64_t) * (n + 1));
	mem_log		m;
	fc_log_stream s;
	const fc_log_header *rec;
	int			got = 0;
	int			damaged = below(3) == 0 ? (int) below(n) : -1;

	m.base = start;
	m.len = 0;
	m.data = malloc((size_t) (big ? FC_LOG_MAX_RECORD : 64 * 1024) * n);
	m.missing_seg = -1;
	for (int i = 0; i < n; i++)
	{
		built_record r = build_record(start + m.len, big);

		lsns[i] = r.lsn;
		memcpy(m.data + m.len, r.buf, r.len);
		memset(m.data + m.len + r.len, 0, FC_LOG_ALIGNED(r.len) - r.len);
		m.len += FC_LOG_ALIGNED(r.len);
		free(r.buf);
	}
	lsns[n] = start + m.len;
	if (m.len > FC_LOG_STREAM_CHUNK)
		long_streams++;
	if (damaged >= 0)
		m.data[lsns[damaged] - start + below(FC_LOG_HEADER_SIZE)] ^= 0x40;
	else if (below(2) == 0)
		m.len -= 1 + below(8);	/* the last record cut short */

	fc_log_stream_init(&s, buffer, mem_log_read, &m, start);
	while ((rec = fc_log_stream_next(&s)) != NULL)
	{
		CHECK(got < n && rec->lsn == lsns[got], "record %d at %llu, expected %llu", got,
			  (unsigned long long) rec->lsn, (unsigned long long) lsns[got]);
		got++;
	}
	if (damaged >= 0)
		CHECK(got == damaged && s.pos == lsns[damaged],
			  "damaged record %d: read %d, ended at %llu", damaged, got,
			  (unsigned long long) s.pos);
	else if (m.len < lsns[n] - start)
		CHECK(got == n - 1 && s.pos == lsns[n - 1], "cut last record: read %d of %d", got, n);
	else
		CHECK(got == n && s.pos == lsns[n], "read %d of %d records", got, n);
	CHECK(fc_log_stream_next(&s) == NULL, "the stream goes on past its end");

	/* with the segment at seg missing, the log ends at the first record that reaches it */
	if (damaged < 0 && m.len == lsns[n] - start && lsns[n] > seg)
	{
		int			whole = 0;

		while (whole < n && lsns[whole + 1] <= seg)
			whole++;
		m.missing_seg = 1;
		got = 0;
		fc_log_stream_init(&s, buffer, mem_log_read, &m, start);
		while (fc_log_stream_next(&s) != NULL)
			got++;
		CHECK(got == whole && s.pos == lsns[whole],
			  "missing segment: read %d records, %d lie before it", got, whole);
	}
	free(m.data);
	free(lsns);
}

/* ---- checkpoint blocks and chunk files ---- */

/* full: rows until the block is full (256 kB), to cross the scan's buffer */
static char *
build_block(uint32_t chunkno, uint32_t layer, uint32_t blockno, uint32_t *first_slot,
			uint32_t *size, int full)
{
	char	   *buf = malloc(FC_CKPT_BLOCK_SIZE);
	int			rows = full ? FC_CKPT_CHUNK_SLOTS : (int) below(30);
	char		image[2048];
	char	   *out;

	fc_ckpt_block_begin(buf, chunkno, layer, blockno);
	for (int i = 0; i < rows && *first_slot < FC_CKPT_CHUNK_SLOTS; i++)
	{
		uint32_t	len = (layer > 0 && below(4) == 0) ? FC_CKPT_TOMBSTONE : below(sizeof(image));

		fill_random(image, sizeof(image));
		if (!fc_ckpt_block_add(buf, *first_slot, image, len))
			break;
		*first_slot += full ? 1 + below(4) : 1 + below(50);
	}
	fc_ckpt_block_seal(buf);
	*size = ((fc_ckpt_block *) buf)->size;
	out = exact(buf, *size);
	free(buf);
	return out;
}

static void
walk_block(const char *block)
{
	const fc_ckpt_block *b = (const fc_ckpt_block *) block;
	fc_ckpt_row_iter it;
	const fc_ckpt_row *row;
	const char *image;

	fc_ckpt_rows_begin(&it, block);
	while (fc_ckpt_rows_next(&it, &row, &image))
		if (row->len != FC_CKPT_TOMBSTONE)
			CHECK(inside(image, row->len, block, block + b->size), "block row outside its block");
}

static void
case_ckpt_block(void)
{
	uint32_t	chunkno = below(100);
	uint32_t	layer = below(3);
	uint32_t	blockno = below(10);
	uint32_t	slot = below(100);
	uint32_t	size;
	char	   *block = build_block(chunkno, layer, blockno, &slot, &size, 0);
	char	   *copy;
	const char *problem;

	problem = fc_ckpt_block_check(block, size, chunkno, layer, blockno);
	CHECK(problem == NULL, "a sealed block fails: %s", problem);
	CHECK(fc_ckpt_block_check(block, size, chunkno + 1, layer, blockno) != NULL,
		  "a block passes as another chunk's");
	CHECK(fc_ckpt_block_check(block, size - 8, chunkno, layer, blockno) != NULL,
		  "a cut block passes");
	walk_block(block);

	copy = exact(block, size);
	flip_byte(copy, size);
	CHECK(fc_ckpt_block_check(copy, size, chunkno, layer, blockno) != NULL,
		  "a damaged block passes");
	free(copy);

	copy = exact(block, size);
	scramble(copy, size, 8);
	if (((fc_ckpt_block *) copy)->size <= size && ((fc_ckpt_block *) copy)->size >= 8)
		fc_ckpt_block_seal(copy);
	if (fc_ckpt_block_check(copy, size, chunkno, layer, blockno) == NULL)
	{
		walk_block(copy);
		walked_blocks++;
	}
	free(copy);
	free(block);
}

typedef struct mem_file
{
	const char *data;
	size_t		len;
	size_t		pos;
} mem_file;

/* Reads of random length: a scan must not depend on whole reads. */
static int64_t
mem_file_read(void *arg, char *dst, size_t len)
{
	mem_file   *f = (mem_file *) arg;
	size_t		n = f->len - f->pos;

	if (n > len)
		n = len;
	if (n > 1)
		n = 1 + below((uint32_t) n);
	memcpy(dst, f->data + f->pos, n);
	f->pos += n;
	return (int64_t) n;
}

static const char *
count_rows(void *arg, const char *block)
{
	*(uint64_t *) arg += ((const fc_ckpt_block *) block)->nrows;
	walk_block(block);
	return NULL;
}

static void
case_ckpt_scan(char *scanbuf)
{
	uint32_t	chunkno = below(10);
	uint32_t	layer = below(3);
	int			full = below(10) == 0;	/* ~4.5 MB: past the 4 MB buffer */
	int			nblocks = full ? 18 : 1 + (int) below(6);
	uint32_t	slot = 0;
	char	   *file = malloc((size_t) nblocks * FC_CKPT_BLOCK_SIZE);
	size_t		len = 0;
	uint32_t	chain = FC_CRC32C_INIT;
	fc_ckpt_file_want want;
	uint64_t	rows = 0;
	uint64_t	bytes = 0;
	char		errbuf[256];
	const char *problem;
	mem_file	f;

	want.chunkno = chunkno;
	want.layer = layer;
	want.records = 0;
	for (int i = 0; i < nblocks; i++)
	{
		uint32_t	size;
		char	   *block = build_block(chunkno, layer, (uint32_t) i, &slot, &size, full);

		memcpy(file + len, block, size);
		len += size;
		chain = fc_crc32c_update(chain, &((fc_ckpt_block *) block)->crc, 4);
		want.records += ((fc_ckpt_block *) block)->nrows;
		free(block);
	}
	want.bytes = len;
	want.crc = fc_crc32c_final(chain);
	if (len > FC_CKPT_SCAN_BUFFER)
		long_files++;

	f.data = file;
	f.len = len;
	f.pos = 0;
	problem = fc_ckpt_scan_file(mem_file_read, &f, &want, count_rows, &rows, scanbuf,
								&bytes, errbuf, sizeof(errbuf));
	CHECK(problem == NULL && rows == want.records && bytes == len,
		  "a whole chunk file fails: %s (rows %llu of %llu)", problem ? problem : "-",
		  (unsigned long long) rows, (unsigned long long) want.records);

	/* damaged, cut short, or with a block missing: refused */
	switch (below(3))
	{
		case 0:
			flip_byte(file, len);
			break;
		case 1:
			len -= 1 + below((uint32_t) (len < 64 ? len - 1 : 64));
			break;
		case 2:
			want.records++;
			break;
	}
	f.len = len;
	f.pos = 0;
	rows = 0;
	problem = fc_ckpt_scan_file(mem_file_read, &f, &want, count_rows, &rows, scanbuf,
								&bytes, errbuf, sizeof(errbuf));
	CHECK(problem != NULL, "a damaged chunk file passes");
	free(file);
}

/* ---- manifest and control file ---- */

static void
walk_manifest(const char *buf, size_t len)
{
	const fc_ckpt_manifest *m = (const fc_ckpt_manifest *) buf;
	const fc_ckpt_table *t = fc_ckpt_first_table(buf);

	for (uint32_t i = 0; i < m->ntables; i++, t = fc_ckpt_next_table(t))
	{
		const fc_ckpt_chunk *chunks = fc_ckpt_table_chunks(t);
		const fc_ckpt_delta *deltas = fc_ckpt_table_deltas(t);

		CHECK(inside((const char *) t, sizeof(*t), buf, buf + len), "table outside the manifest");
		CHECK(inside((const char *) chunks, (size_t) t->nchunks * sizeof(*chunks), buf, buf + len),
			  "chunks outside the manifest");
		CHECK(inside((const char *) deltas, (size_t) t->ndeltas * sizeof(*deltas), buf, buf + len),
			  "deltas outside the manifest");
		for (uint32_t c = 0; c < t->nchunks; c++)
			CHECK(chunks[c].first_delta + (uint64_t) chunks[c].ndeltas <= t->ndeltas,
				  "a chunk's deltas outside its table's");
	}
}

static void
case_manifest(void)
{
	char		tmp[32 * 1024];
	fc_ckpt_manifest *m = (fc_ckpt_manifest *) tmp;
	size_t		pos = sizeof(*m);
	uint32_t	ntables = below(5);
	char	   *buf;
	char	   *copy;
	const char *problem;

	memset(tmp, 0, sizeof(tmp));
	m->ntables = ntables;
	for (uint32_t i = 0; i < ntables; i++)
	{
		fc_ckpt_table *t = (fc_ckpt_table *) (tmp + pos);
		uint32_t	nchunks = below(6);
		uint32_t	ndeltas = 0;
		fc_ckpt_chunk *chunks;

		fill_random(t, sizeof(*t));
		t->nchunks = nchunks;
		pos += sizeof(*t);
		chunks = (fc_ckpt_chunk *) (tmp + pos);
		for (uint32_t c = 0; c < nchunks; c++)
		{
			fill_random(&chunks[c], sizeof(chunks[c]));
			chunks[c].chunkno = c;
			chunks[c].ndeltas = below(3);
			chunks[c].first_delta = ndeltas;
			ndeltas += chunks[c].ndeltas;
		}
		t->ndeltas = ndeltas;
		pos += nchunks * sizeof(fc_ckpt_chunk);
		fill_random(tmp + pos, ndeltas * sizeof(fc_ckpt_delta));
		pos += ndeltas * sizeof(fc_ckpt_delta);
		m->nchunks += nchunks;
	}
	m->total_len = pos;
	fc_ckpt_manifest_seal(tmp);
	buf = exact(tmp, pos);
	problem = fc_ckpt_manifest_check(buf, pos);
	CHECK(problem == NULL, "a sealed manifest fails: %s", problem);
	walk_manifest(buf, pos);

	copy = exact(buf, pos);
	flip_byte(copy, pos);
	CHECK(fc_ckpt_manifest_check(copy, pos) != NULL, "a damaged manifest passes");
	free(copy);

	copy = exact(buf, pos);
	scramble(copy, pos, 8);
	if (((fc_ckpt_manifest *) copy)->total_len == pos)
		fc_ckpt_manifest_seal(copy);
	if (fc_ckpt_manifest_check(copy, pos) == NULL)
	{
		walk_manifest(copy, pos);
		walked_manifests++;
	}
	free(copy);
	free(buf);
}

static void
case_control(void)
{
	fc_ckpt_control ctl;
	char	   *copy;

	memset(&ctl, 0, sizeof(ctl));
	fill_random(ctl.refs, sizeof(ctl.refs));
	ctl.nrefs = 1 + below(FC_CKPT_KEEP);
	fc_ckpt_control_seal(&ctl);
	copy = exact(&ctl, sizeof(ctl));
	CHECK(fc_ckpt_control_check((fc_ckpt_control *) copy, sizeof(ctl)) == NULL,
		  "a sealed control file fails");
	CHECK(fc_ckpt_control_check((fc_ckpt_control *) copy, sizeof(ctl) - 1) != NULL,
		  "a short control file passes");
	flip_byte(copy, sizeof(ctl));
	CHECK(fc_ckpt_control_check((fc_ckpt_control *) copy, sizeof(ctl)) != NULL,
		  "a damaged control file passes");
	free(copy);
}

/* ---- a prepared transaction's file ---- */

static void
walk_prepared(const fc_prepared_header *hdr)
{
	fc_prepared_cursor cur;
	const fc_prepared_slot *slot;
	const char *image;
	const uint32_t *xids = fc_prepared_xids(hdr);
	volatile uint32_t sink = 0;

	for (uint32_t i = 0; i < hdr->nxids; i++)
		sink ^= xids[i];
	fc_prepared_cursor_init(&cur, hdr);
	while (fc_prepared_next(&cur, &slot, &image))
	{
		CHECK(slot->op != FC_PREP_LOCK ||
			  (slot->len == 0 && slot->lock_mode <= FC_PREP_LOCK_EXCLUSIVE &&
			   slot->xmax_flags <= FC_PREP_LOCK_IF_NOT_COMMITTED),
			  "a lock entry with mode %d, condition %d and %u image bytes passes",
			  slot->lock_mode, slot->xmax_flags, slot->len);
		for (uint32_t i = 0; i < slot->len; i++)
			sink ^= (unsigned char) image[i];
	}
	(void) sink;
}

static void
case_prepared_file(void)
{
	uint32_t	nxids = 1 + below(8);
	uint32_t	nslots = below(12);
	size_t		cap = sizeof(fc_prepared_header) + 8 * 8 + nslots * (sizeof(fc_prepared_slot) + 512);
	char	   *buf = calloc(1, cap);
	fc_prepared_header *hdr = (fc_prepared_header *) buf;
	size_t		len = sizeof(fc_prepared_header);
	uint8_t		ops[12];
	uint32_t	lens[12];
	char	   *copy;

	if (buf == NULL)
		abort();
	hdr->magic = FC_PREPARED_MAGIC;
	hdr->version = FC_PREPARED_VERSION;
	hdr->fxid = rnd();
	hdr->nxids = nxids;
	hdr->nslots = nslots;
	snprintf(hdr->gid, sizeof(hdr->gid), "gid-%u", below(1000));
	fill_random(buf + len, nxids * 4);
	len += FC_PREPARED_ALIGNED(nxids * 4);
	for (uint32_t i = 0; i < nslots; i++)
	{
		fc_prepared_slot *s = (fc_prepared_slot *) (buf + len);

		ops[i] = (uint8_t) (FC_PREP_INSERT + below(4));
		lens[i] = (ops[i] == FC_PREP_DELETE || ops[i] == FC_PREP_LOCK) ? 0 : below(500);
		s->op = ops[i];
		s->len = lens[i];
		if (ops[i] == FC_PREP_LOCK)
		{
			s->lock_mode = (uint8_t) below(FC_PREP_LOCK_EXCLUSIVE + 1);
			s->xmax_flags = (uint16_t) below(FC_PREP_LOCK_IF_NOT_COMMITTED + 1);
		}
		s->slotno = rnd();
		fill_random(buf + len + sizeof(fc_prepared_slot), lens[i]);
		len += fc_prepared_slot_size(lens[i]);
	}
	hdr->len = (uint32_t) len;
	fc_prepared_seal(buf);

	copy = exact(buf, len);
	CHECK(fc_prepared_check(copy, len) == NULL, "a sealed prepared file fails: %s",
		  fc_prepared_check(copy, len));
	{
		fc_prepared_cursor cur;
		const fc_prepared_slot *slot;
		const char *image;
		uint32_t	n = 0;

		fc_prepared_cursor_init(&cur, (const fc_prepared_header *) copy);
		while (fc_prepared_next(&cur, &slot, &image))
		{
			CHECK(n < nslots && slot->op == ops[n] && slot->len == lens[n],
				  "slot %u reads back op %d len %u", n, slot->op, slot->len);
			n++;
		}
		CHECK(n == nslots, "%u of %u slots read back", n, nslots);
	}
	CHECK(fc_prepared_check(copy, len - 1) != NULL, "a cut prepared file passes");
	flip_byte(copy, len);
	CHECK(fc_prepared_check(copy, len) != NULL, "a damaged prepared file passes");
	free(copy);

	/* damage behind a recomputed CRC: whatever is accepted stays inside */
	copy = exact(buf, len);
	scramble(copy, len, 4);
	{
		fc_prepared_header *d = (fc_prepared_header *) copy;

		if (d->len >= sizeof(fc_prepared_header) && d->len <= len)
		{
			char	   *sized;

			fc_prepared_seal(copy);
			sized = exact(copy, d->len);
			if (fc_prepared_check(sized, d->len) == NULL)
			{
				walk_prepared((const fc_prepared_header *) sized);
				walked_prepared++;
			}
			free(sized);
		}
		else
			CHECK(fc_prepared_check(copy, len) != NULL,
				  "a prepared file whose length field lies passes");
	}
	free(copy);
	free(buf);
}

int
main(int argc, char **argv)
{
	long		cases = argc > 1 ? atol(argv[1]) : 20000;
	uint64_t	seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261125;
	char	   *stream_buf = malloc(FC_LOG_STREAM_BUFFER);
	char	   *scan_buf = malloc(FC_CKPT_SCAN_BUFFER);

	rng_state = seed * 2654435761ULL + 1;
	for (long i = 0; i < cases; i++)
	{
		case_log_record();
		case_ckpt_block();
		case_manifest();
		case_control();
		case_prepared_file();
		if (i % 10 == 0)
		{
			case_log_stream(stream_buf);
			case_ckpt_scan(scan_buf);
		}
	}
	free(stream_buf);
	free(scan_buf);
	printf("damaged behind a valid CRC, accepted and walked: %ld records, %ld blocks, %ld manifests, %ld prepared files\n",
		   walked_records, walked_blocks, walked_manifests, walked_prepared);
	printf("longer than the readers' 4 MB buffers: %ld logs, %ld chunk files\n",
		   long_streams, long_files);
	printf("%ld cases (seed %llu), %ld failures\n", cases, (unsigned long long) seed, failures);
	return failures == 0 ? 0 : 1;
}

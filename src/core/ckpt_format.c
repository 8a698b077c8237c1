/*-------------------------------------------------------------------------
 *
 * ckpt_format.c
 *	  Building and checking checkpoint blocks, manifests and the control
 *	  file (pure C).
 *
 *-------------------------------------------------------------------------
 */
#include "ckpt_format.h"

#include <string.h>

#include "crc32c.h"

void
fc_ckpt_block_begin(char *buf, uint32_t chunkno, uint32_t layer, uint32_t blockno)
{
	fc_ckpt_block *b = (fc_ckpt_block *) buf;

	memset(b, 0, sizeof(*b));
	b->magic = FC_CKPT_BLOCK_MAGIC;
	b->size = FC_CKPT_BLOCK_HEADER;
	b->chunkno = chunkno;
	b->layer = layer;
	b->blockno = blockno;
}

/*
 * Append a row (len FC_CKPT_TOMBSTONE: the slot's row was deleted, image
 * unused); 0 if the block is full (seal it and start another).
 */
int
fc_ckpt_block_add(char *buf, uint32_t slot, const void *image, uint32_t len)
{
	fc_ckpt_block *b = (fc_ckpt_block *) buf;
	uint32_t	need = FC_CKPT_ROW_SIZE(len);
	fc_ckpt_row *row;

	if (b->size + need > FC_CKPT_BLOCK_SIZE)
		return 0;
	row = (fc_ckpt_row *) (buf + b->size);
	row->slot = slot;
	row->len = len;
	if (len != FC_CKPT_TOMBSTONE)
	{
		memcpy(buf + b->size + sizeof(fc_ckpt_row), image, len);
		memset(buf + b->size + sizeof(fc_ckpt_row) + len, 0, FC_CKPT_ALIGNED(len) - len);
	}
	b->size += need;
	b->nrows++;
	return 1;
}

/* Compute the block's CRC; returns it (chunk CRCs chain the block CRCs). */
uint32_t
fc_ckpt_block_seal(char *buf)
{
	fc_ckpt_block *b = (fc_ckpt_block *) buf;

	b->crc = fc_crc32c(buf + 8, b->size - 8);
	return b->crc;
}

/*
 * Check the block at buf (avail bytes readable there) is the expected
 * block of the expected chunk, whole and undamaged.  NULL if so, else what
 * is wrong.
 */
const char *
fc_ckpt_block_check(const char *buf, size_t avail, uint32_t chunkno,
					uint32_t layer, uint32_t blockno)
{
	const fc_ckpt_block *b = (const fc_ckpt_block *) buf;
	fc_ckpt_row_iter it;
	const fc_ckpt_row *row;
	const char *image;
	uint32_t	n = 0;
	int32_t		last = -1;

	if (avail < FC_CKPT_BLOCK_HEADER)
		return "file ends inside a block header";
	if (b->magic != FC_CKPT_BLOCK_MAGIC)
		return "bad block magic number";
	if (b->size < FC_CKPT_BLOCK_HEADER || b->size > FC_CKPT_BLOCK_SIZE ||
		b->size % 8 != 0)
		return "bad block size";
	if (b->size > avail)
		return "file ends inside a block";
	if (b->crc != fc_crc32c(buf + 8, b->size - 8))
		return "block CRC mismatch";
	if (b->chunkno != chunkno || b->layer != layer || b->blockno != blockno)
		return "block belongs to another chunk, layer or position";

	fc_ckpt_rows_begin(&it, buf);
	while (fc_ckpt_rows_next(&it, &row, &image))
	{
		if ((int64_t) row->slot <= last || row->slot >= FC_CKPT_CHUNK_SLOTS)
			return "rows out of slot order";
		if (row->len == FC_CKPT_TOMBSTONE && layer == 0)
			return "a deleted row in a whole chunk";
		last = (int32_t) row->slot;
		n++;
	}
	if (n != b->nrows || it.pos != it.end)
		return "row entries do not fill the block";
	return NULL;
}

void
fc_ckpt_rows_begin(fc_ckpt_row_iter *it, const char *block)
{
	const fc_ckpt_block *b = (const fc_ckpt_block *) block;

	it->pos = block + FC_CKPT_BLOCK_HEADER;
	it->end = block + b->size;
	it->left = b->nrows;
}

int
fc_ckpt_rows_next(fc_ckpt_row_iter *it, const fc_ckpt_row **row,
				  const char **image)
{
	const fc_ckpt_row *r;

	if (it->left == 0 || it->end - it->pos < (ptrdiff_t) sizeof(fc_ckpt_row))
		return 0;
	r = (const fc_ckpt_row *) it->pos;
	if ((r->len > FC_CKPT_BLOCK_SIZE && r->len != FC_CKPT_TOMBSTONE) ||
		it->end - it->pos < (ptrdiff_t) FC_CKPT_ROW_SIZE(r->len))
		return 0;
	*row = r;
	*image = it->pos + sizeof(fc_ckpt_row);
	it->pos += FC_CKPT_ROW_SIZE(r->len);
	it->left--;
	return 1;
}

void
fc_ckpt_manifest_seal(char *buf)
{
	fc_ckpt_manifest *m = (fc_ckpt_manifest *) buf;

	m->magic = FC_CKPT_MANIFEST_MAGIC;
	m->version = FC_CKPT_VERSION;
	m->crc = fc_crc32c(buf + 8, m->total_len - 8);
}

/* NULL if buf holds a whole, undamaged manifest of len bytes. */
const char *
fc_ckpt_manifest_check(const char *buf, size_t len)
{
	const fc_ckpt_manifest *m = (const fc_ckpt_manifest *) buf;
	size_t		pos = sizeof(fc_ckpt_manifest);
	uint64_t	nchunks = 0;

	if (len < sizeof(fc_ckpt_manifest))
		return "manifest too short";
	if (m->magic != FC_CKPT_MANIFEST_MAGIC)
		return "bad manifest magic number";
	if (m->version != FC_CKPT_VERSION)
		return "written in another checkpoint format than this build of pg_fastckpt reads";
	if (m->total_len != len)
		return "manifest length mismatch";
	if (m->crc != fc_crc32c(buf + 8, len - 8))
		return "manifest CRC mismatch";
	for (uint32_t t = 0; t < m->ntables; t++)
	{
		const fc_ckpt_table *tab = (const fc_ckpt_table *) (buf + pos);
		const fc_ckpt_chunk *chunks;

		if (len - pos < sizeof(fc_ckpt_table))
			return "manifest table list truncated";
		pos += sizeof(fc_ckpt_table);
		if ((len - pos) / sizeof(fc_ckpt_chunk) < tab->nchunks)
			return "manifest chunk list truncated";
		chunks = (const fc_ckpt_chunk *) (buf + pos);
		pos += (size_t) tab->nchunks * sizeof(fc_ckpt_chunk);
		if ((len - pos) / sizeof(fc_ckpt_delta) < tab->ndeltas)
			return "manifest delta list truncated";
		pos += (size_t) tab->ndeltas * sizeof(fc_ckpt_delta);
		for (uint32_t c = 0; c < tab->nchunks; c++)
			if (chunks[c].ndeltas > FC_CKPT_MAX_DELTAS ||
				chunks[c].first_delta > tab->ndeltas ||
				tab->ndeltas - chunks[c].first_delta < chunks[c].ndeltas)
				return "manifest chunk names deltas it does not have";
		nchunks += tab->nchunks;
	}
	if (pos != len || nchunks != m->nchunks)
		return "manifest entries do not add up";
	return NULL;
}

void
fc_ckpt_control_seal(fc_ckpt_control *ctl)
{
	ctl->magic = FC_CKPT_CONTROL_MAGIC;
	ctl->version = FC_CKPT_VERSION;
	ctl->crc = fc_crc32c((const char *) ctl + 8, sizeof(*ctl) - 8);
}

const char *
fc_ckpt_control_check(const fc_ckpt_control *ctl, size_t len)
{
	if (len != sizeof(*ctl))
		return "control file has the wrong size";
	if (ctl->magic != FC_CKPT_CONTROL_MAGIC)
		return "bad control file magic number";
	if (ctl->version != FC_CKPT_VERSION)
		return "written in another checkpoint format than this build of pg_fastckpt reads";
	if (ctl->crc != fc_crc32c((const char *) ctl + 8, sizeof(*ctl) - 8))
		return "control file CRC mismatch";
	if (ctl->nrefs > FC_CKPT_KEEP)
		return "control file names too many checkpoints";
	return NULL;
}

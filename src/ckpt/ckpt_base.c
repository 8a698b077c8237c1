/*-------------------------------------------------------------------------
 *
 * ckpt_base.c
 *	  The last checkpoint as the checkpoint writer sees it: its memos of
 *	  the chunks, and a chunk's rows read back from its whole file and its
 *	  deltas (or from the copy variant's memory), newest row first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fd.h"
#include "utils/memutils.h"

#include "ckpt/ckpt_base.h"

/* Holds the copy variant's chunk bytes, which move from memo to memo. */
static MemoryContext fc_memo_data_cxt = NULL;

MemoryContext
fc_memo_data_context(void)
{
	if (fc_memo_data_cxt == NULL)
		fc_memo_data_cxt = AllocSetContextCreate(TopMemoryContext,
												 "pg_fastckpt checkpoint copy",
												 ALLOCSET_DEFAULT_SIZES);
	return fc_memo_data_cxt;
}

void
fc_memo_set_create(FcMemoSet *set)
{
	HASHCTL		info;

	set->cxt = AllocSetContextCreate(TopMemoryContext,
									 "pg_fastckpt checkpoint memos",
									 ALLOCSET_DEFAULT_SIZES);
	info.keysize = sizeof(FcChunkKey);
	info.entrysize = sizeof(FcChunkMemo);
	info.hcxt = set->cxt;
	set->chunks = hash_create("pg_fastckpt checkpoint memos", 256, &info,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Drop a set, with the copy bytes no other memo took over. */
void
fc_memo_set_destroy(FcMemoSet *set)
{
	HASH_SEQ_STATUS seq;
	FcChunkMemo *memo;

	if (set->chunks == NULL)
		return;
	hash_seq_init(&seq, set->chunks);
	while ((memo = hash_seq_search(&seq)) != NULL)
		for (int k = 0; k < FC_CKPT_LAYERS; k++)
			if (memo->data[k] != NULL)
				pfree(memo->data[k]);
	MemoryContextDelete(set->cxt);
	set->cxt = NULL;
	set->chunks = NULL;
}

static void
fc_memo_key(FcChunkKey *key, const fc_ckpt_table *tab, uint32 chunkno)
{
	memset(key, 0, sizeof(*key));
	key->dbid = tab->dbid;
	key->spcid = tab->spcid;
	key->relnode = tab->relnode;
	key->chunkno = chunkno;
	key->create_csn = tab->create_csn;
}

FcChunkMemo *
fc_memo_find(FcMemoSet *set, const fc_ckpt_table *tab, uint32 chunkno)
{
	FcChunkKey	key;

	if (set->chunks == NULL)
		return NULL;
	fc_memo_key(&key, tab, chunkno);
	return hash_search(set->chunks, &key, HASH_FIND, NULL);
}

/* A fresh memo: no row present, no copy bytes. */
FcChunkMemo *
fc_memo_enter(FcMemoSet *set, const fc_ckpt_table *tab, uint32 chunkno)
{
	FcChunkKey	key;
	FcChunkMemo *memo;
	bool		found;

	fc_memo_key(&key, tab, chunkno);
	memo = hash_search(set->chunks, &key, HASH_ENTER, &found);
	if (found)
	{
		for (int k = 0; k < FC_CKPT_LAYERS; k++)
			if (memo->data[k] != NULL)
				pfree(memo->data[k]);
	}
	else
		memo->present = MemoryContextAlloc(set->cxt, FC_CKPT_PRESENT_BYTES);
	memset(memo->present, 0, FC_CKPT_PRESENT_BYTES);
	memo->live = 0;
	memo->nlayers = 0;
	memset(memo->data, 0, sizeof(memo->data));
	memset(memo->len, 0, sizeof(memo->len));
	return memo;
}

/* ---- one file of a chunk, streamed ---- */

/*
 * What a damaged file of the installed checkpoint means for a restart.  A
 * file with another link is shared with the checkpoint kept before it
 * (unchanged chunks are hard-linked forward; the writer removed every
 * other directory before it started), so neither can be loaded.
 */
static int
fc_damaged_file_hint(const char *path)
{
	struct stat st;

	if (path == NULL || stat(path, &st) != 0 || st.st_nlink < 2)
		return 0;
	return errhint("The checkpoint kept before it shares this file, so a restart now would find no usable checkpoint "
				   "and keep the fastckpt tables closed.  Copy the fastckpt tables out (COPY or pg_dump) "
				   "while the server is up.");
}

static void
fc_base_fill(FcBaseReader *br, uint64 need)
{
	if (br->path == NULL || br->buf_len - br->buf_pos >= need || br->eof)
		return;
	memmove(br->buf, br->buf + br->buf_pos, br->buf_len - br->buf_pos);
	br->buf_len -= br->buf_pos;
	br->buf_pos = 0;
	while (br->buf_len < 2 * FC_CKPT_BLOCK_SIZE && !br->eof)
	{
		ssize_t		got = read(br->fd, br->buf + br->buf_len,
							   2 * FC_CKPT_BLOCK_SIZE - br->buf_len);

		if (got < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read checkpoint file \"%s\": %m", br->path)));
		if (got == 0)
			br->eof = true;
		br->buf_len += got;
	}
}

/*
 * Move to the next row (row NULL: end).  The image of the row before may
 * move: use a row before moving on.
 */
static void
fc_base_next(FcBaseReader *br)
{
	while (!fc_ckpt_rows_next(&br->it, &br->row, &br->image))
	{
		const char *p;
		uint64		avail;
		const char *problem;

		br->row = NULL;
		if (br->path != NULL)
		{
			fc_base_fill(br, FC_CKPT_BLOCK_HEADER);
			if (br->buf_len - br->buf_pos >= FC_CKPT_BLOCK_HEADER)
				fc_base_fill(br, Min(((const fc_ckpt_block *) (br->buf + br->buf_pos))->size,
									 FC_CKPT_BLOCK_SIZE));
			p = br->buf + br->buf_pos;
			avail = br->buf_len - br->buf_pos;
		}
		else
		{
			p = br->mem + br->buf_pos;
			avail = br->mem_len - br->buf_pos;
		}
		if (avail == 0)
			return;				/* end of the file */
		problem = fc_ckpt_block_check(p, avail, br->chunkno, br->layer, br->blockno);
		if (problem != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("fastckpt checkpoint chunk \"%s\" is damaged at block %u: %s",
							br->path ? br->path : "(in memory)", br->blockno, problem),
					 errdetail("A checkpoint cannot be merged with it; the log is kept in full until one can."),
					 fc_damaged_file_hint(br->path)));
		fc_ckpt_rows_begin(&br->it, p);
		br->buf_pos += ((const fc_ckpt_block *) p)->size;
		br->blockno++;
	}
}

static void
fc_base_open(FcBaseReader *br, uint64 seq, const fc_ckpt_table *tab,
			 uint32 chunkno, uint32 layer, const char *mem, uint64 mem_len)
{
	memset(br, 0, sizeof(*br));
	br->fd = -1;
	br->chunkno = chunkno;
	br->layer = layer;
	if (mem != NULL)
	{
		br->mem = mem;
		br->mem_len = mem_len;
		fc_base_next(br);
		return;
	}
	br->path = fc_ckpt_chunk_path(seq, tab, chunkno, layer);
	br->fd = OpenTransientFile(br->path, O_RDONLY | PG_BINARY);
	if (br->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open checkpoint file \"%s\": %m", br->path)));
	br->buf = palloc(2 * FC_CKPT_BLOCK_SIZE);
	fc_base_next(br);
}

static void
fc_base_close(FcBaseReader *br)
{
	if (br->fd >= 0)
		CloseTransientFile(br->fd);
	if (br->buf != NULL)
		pfree(br->buf);
	if (br->path != NULL)
		pfree(br->path);
}

/* ---- a chunk's files merged ---- */

/*
 * Open chunk chunkno of the last checkpoint (checkpoint seq, table entry
 * tab; NULL or past its chunks: nothing), from memory when the memo holds
 * every file's bytes.
 */
void
fc_layers_open(FcLayers *layers, uint64 seq, const fc_ckpt_table *tab,
			   uint32 chunkno, const FcChunkMemo *memo)
{
	const fc_ckpt_chunk *chunk;
	bool		in_memory;

	layers->n = 0;
	layers->next_delta_slot = 0;
	if (tab == NULL || chunkno >= tab->nchunks)
		return;
	chunk = &fc_ckpt_table_chunks(tab)[chunkno];
	in_memory = memo != NULL && memo->nlayers == chunk->ndeltas + 1;
	for (uint32 k = 0; in_memory && k <= chunk->ndeltas; k++)
		in_memory = memo->data[k] != NULL;
	for (uint32 k = 0; k <= chunk->ndeltas; k++)
	{
		fc_base_open(&layers->r[k], seq, tab, chunkno, k,
					 in_memory ? memo->data[k] : NULL,
					 in_memory ? memo->len[k] : 0);
		layers->n++;
	}
}

/*
 * The last checkpoint's row in slot off (called for increasing off): true
 * with its image, false if it had none.  The image stays valid until the
 * next call.
 */
bool
fc_layers_get(FcLayers *layers, uint32 off, const char **image, uint32 *len)
{
	FcBaseReader *base = &layers->r[0];
	bool		found = false;

	if (layers->n == 0)
		return false;
	while (base->row != NULL && base->row->slot < off)
		fc_base_next(base);
	if (base->row != NULL && base->row->slot == off)
	{
		*image = base->image;
		*len = base->row->len;
		found = true;
	}
	if (layers->n > 1 && off >= layers->next_delta_slot)
	{
		uint32		next = UINT32_MAX;

		/* later deltas win; a matched row is left current until off moves */
		for (int k = 1; k < layers->n; k++)
		{
			FcBaseReader *d = &layers->r[k];

			while (d->row != NULL && d->row->slot < off)
				fc_base_next(d);
			if (d->row == NULL)
				continue;
			if (d->row->slot == off)
			{
				found = (d->row->len != FC_CKPT_TOMBSTONE);
				*image = d->image;
				*len = d->row->len;
			}
			next = Min(next, d->row->slot);
		}
		layers->next_delta_slot = next;
	}
	return found;
}

void
fc_layers_close(FcLayers *layers)
{
	for (int k = 0; k < layers->n; k++)
		fc_base_close(&layers->r[k]);
	layers->n = 0;
}

/*
 * Learn which slots of a chunk of the last checkpoint hold a row from its
 * files (as after a restart): reading them costs far less than writing
 * the chunk whole.
 */
void
fc_memo_rebuild(FcChunkMemo *memo, uint64 seq, const fc_ckpt_table *tab,
				uint32 chunkno)
{
	const fc_ckpt_chunk *chunk = &fc_ckpt_table_chunks(tab)[chunkno];
	FcLayers   *layers = palloc(sizeof(FcLayers));
	const char *image;
	uint32		len;

	fc_layers_open(layers, seq, tab, chunkno, NULL);
	for (uint32 off = 0; off < FC_CKPT_CHUNK_SLOTS; off++)
		if (fc_layers_get(layers, off, &image, &len))
		{
			fc_memo_mark(memo->present, off, true);
			memo->live++;
		}
	fc_layers_close(layers);
	pfree(layers);
	if (memo->live != chunk->rows)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("fastckpt checkpoint %llu: chunk %u of relation file %u holds %llu rows, its manifest says %llu",
						(unsigned long long) seq, chunkno, tab->relnode,
						(unsigned long long) memo->live, (unsigned long long) chunk->rows),
				 errdetail("A checkpoint cannot be merged with it; the log is kept in full until one can.")));
	memo->nlayers = chunk->ndeltas + 1;
}

/*-------------------------------------------------------------------------
 *
 * ckpt_base.h
 *	  The last checkpoint as the checkpoint writer sees it: what it
 *	  remembers of each chunk, and the chunk's rows read back in slot order.
 *
 * Private to the checkpoint writer (ckpt_write.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CKPT_BASE_H
#define FC_CKPT_BASE_H

#include "ckpt/checkpoint.h"
#include "utils/hsearch.h"

#define FC_CKPT_LAYERS			(FC_CKPT_MAX_DELTAS + 1)
#define FC_CKPT_PRESENT_BYTES	(FC_CKPT_CHUNK_SLOTS / 8)

typedef struct FcChunkKey
{
	uint32		dbid;
	uint32		spcid;
	uint32		relnode;
	uint32		chunkno;
	uint64		create_csn;
} FcChunkKey;

/*
 * What the writer remembers of a chunk it wrote or linked: which slots hold
 * a row (so a delta knows which deletions and insertions change the live
 * count), and with checkpoint_method = copy the bytes of the chunk's files
 * (data[k] NULL: read file k instead).  Without a memo, as after a restart,
 * the first delta of a chunk rebuilds it from the chunk's files.
 */
typedef struct FcChunkMemo
{
	FcChunkKey	key;
	uint64		live;			/* slots with a row */
	uint8	   *present;		/* FC_CKPT_CHUNK_SLOTS bits */
	uint32		nlayers;		/* the whole file and its deltas */
	char	   *data[FC_CKPT_LAYERS];
	uint64		len[FC_CKPT_LAYERS];
} FcChunkMemo;

/* The memos of one checkpoint. */
typedef struct FcMemoSet
{
	MemoryContext cxt;
	HTAB	   *chunks;
} FcMemoSet;

extern void fc_memo_set_create(FcMemoSet *set);
extern void fc_memo_set_destroy(FcMemoSet *set);
extern FcChunkMemo *fc_memo_find(FcMemoSet *set, const fc_ckpt_table *tab,
								 uint32 chunkno);
extern FcChunkMemo *fc_memo_enter(FcMemoSet *set, const fc_ckpt_table *tab,
								  uint32 chunkno);
extern MemoryContext fc_memo_data_context(void);

static inline bool
fc_memo_has(const uint8 *present, uint32 off)
{
	return (present[off >> 3] & (1 << (off & 7))) != 0;
}

static inline void
fc_memo_mark(uint8 *present, uint32 off, bool has)
{
	if (has)
		present[off >> 3] |= (uint8) (1 << (off & 7));
	else
		present[off >> 3] &= (uint8) ~(1 << (off & 7));
}

/* One file of the last checkpoint's chunk, streamed (or from memory). */
typedef struct FcBaseReader
{
	char	   *path;			/* NULL: reading from memory */
	const char *mem;
	uint64		mem_len;
	int			fd;
	char	   *buf;
	uint64		buf_len;
	uint64		buf_pos;
	bool		eof;
	uint32		chunkno;
	uint32		layer;
	uint32		blockno;
	fc_ckpt_row_iter it;
	const fc_ckpt_row *row;		/* current row, NULL at the end */
	const char *image;
} FcBaseReader;

/* All files of the last checkpoint's chunk, merged: the newest row wins. */
typedef struct FcLayers
{
	int			n;
	uint32		next_delta_slot;	/* no delta has a row below it */
	FcBaseReader r[FC_CKPT_LAYERS];
} FcLayers;

extern void fc_layers_open(FcLayers *layers, uint64 seq, const fc_ckpt_table *tab,
						   uint32 chunkno, const FcChunkMemo *memo);
extern bool fc_layers_get(FcLayers *layers, uint32 off, const char **image,
						  uint32 *len);
extern void fc_layers_close(FcLayers *layers);
extern void fc_memo_rebuild(FcChunkMemo *memo, uint64 seq, const fc_ckpt_table *tab,
							uint32 chunkno);

#endif							/* FC_CKPT_BASE_H */

/*-------------------------------------------------------------------------
 *
 * ckpt_format.h
 *	  On-disk format of fastckpt checkpoints: chunk files of CRC-checked
 *	  blocks, the manifest of one checkpoint, the control file.
 *
 * A checkpoint is a directory holding, per table, one chunk file per
 * FC_CKPT_CHUNK_SLOTS slots (so recovery loads chunks in parallel and the
 * writer can merge a chunk with the same chunk of the previous checkpoint)
 * and a manifest listing the tables, their chunks and the chunks' CRCs.
 * A chunk is a whole file (layer 0: every row of its slots) followed by up
 * to FC_CKPT_MAX_DELTAS delta files (layers 1..n: the rows that changed in
 * one checkpoint, a tombstone for a deleted one), applied in order; a
 * checkpoint that found a chunk slightly changed writes only a delta.
 * The control file names the installed checkpoint and the one before it.
 *
 * Pure C: no PostgreSQL headers, so fuzzers and benchmarks link the same
 * code.  All integers are in the machine's byte order (the files never
 * leave the data directory, like PostgreSQL's own).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CKPT_FORMAT_H
#define FC_CKPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FC_CKPT_VERSION			2
#define FC_CKPT_CHUNK_SLOTS		65536
#define FC_CKPT_BLOCK_SIZE		(256 * 1024)	/* largest block */
#define FC_CKPT_ALIGNED(x)		(((x) + 7u) & ~7u)
#define FC_CKPT_MAX_DELTAS		32	/* delta layers of a chunk at most */
#define FC_CKPT_TOMBSTONE		0xFFFFFFFFu /* row len: deleted (deltas only) */

#define FC_CKPT_BLOCK_MAGIC		0x4B424346u /* "FCBK" */
#define FC_CKPT_MANIFEST_MAGIC	0x464D4346u /* "FCMF" */
#define FC_CKPT_CONTROL_MAGIC	0x43434346u /* "FCCC" */

/* A block of a chunk file: rows of slots in increasing slot order. */
typedef struct fc_ckpt_block
{
	uint32_t	magic;
	uint32_t	crc;			/* CRC-32C of bytes [8, size) */
	uint32_t	size;			/* header and rows */
	uint32_t	nrows;
	uint32_t	chunkno;		/* which chunk of its table */
	uint32_t	blockno;		/* position in the chunk file */
	uint32_t	layer;			/* 0: the whole chunk; k: its k-th delta */
	uint32_t	reserved;
} fc_ckpt_block;

/* A row in a block; its image (len bytes, padded to 8) follows. */
typedef struct fc_ckpt_row
{
	uint32_t	slot;			/* slot number within the chunk */
	uint32_t	len;			/* or FC_CKPT_TOMBSTONE, with no image */
} fc_ckpt_row;

#define FC_CKPT_BLOCK_HEADER	((uint32_t) sizeof(fc_ckpt_block))
#define FC_CKPT_ROW_SIZE(len)	((uint32_t) (sizeof(fc_ckpt_row) + \
	((len) == FC_CKPT_TOMBSTONE ? 0 : FC_CKPT_ALIGNED(len))))

/*
 * One table in a checkpoint; its chunk entries follow in chunk order, then
 * its delta entries, each chunk's in layer order.
 */
typedef struct fc_ckpt_table
{
	uint32_t	dbid;
	uint32_t	spcid;
	uint32_t	relnode;
	uint32_t	relid;
	uint32_t	image_capacity;
	uint32_t	nchunks;
	uint32_t	ndeltas;
	uint32_t	reserved;
	uint64_t	create_csn;		/* commit that created the storage */
	uint64_t	nslots;			/* slots the table had */
	uint64_t	rows;
	uint64_t	bytes;			/* bytes of all its files */
} fc_ckpt_table;

typedef struct fc_ckpt_chunk
{
	uint32_t	chunkno;
	uint32_t	crc;			/* whole file: CRC-32C over its blocks' CRCs */
	uint64_t	bytes;			/* whole file's size */
	uint64_t	base_rows;		/* rows in the whole file */
	uint64_t	rows;			/* live rows once its deltas are applied */
	uint32_t	ndeltas;
	uint32_t	first_delta;	/* its deltas in the table's delta list */
} fc_ckpt_chunk;

/* A delta file of a chunk. */
typedef struct fc_ckpt_delta
{
	uint32_t	crc;			/* CRC-32C over its blocks' CRCs */
	uint32_t	records;		/* row images and tombstones */
	uint64_t	bytes;
} fc_ckpt_delta;

/* The manifest file: this header, then each table followed by its chunks. */
typedef struct fc_ckpt_manifest
{
	uint32_t	magic;
	uint32_t	crc;			/* CRC-32C of bytes [8, total_len) */
	uint32_t	version;
	uint32_t	ntables;
	uint64_t	total_len;
	uint64_t	seq;			/* checkpoint number */
	uint64_t	csn;			/* S: holds exactly the commits with CSN < S */
	uint64_t	start_lsn;		/* replay the log from here */
	uint64_t	nchunks;
	uint64_t	rows;
	uint64_t	bytes;
	int64_t		finished_at;	/* Unix time, microseconds */
} fc_ckpt_manifest;

/* A checkpoint the control file names. */
typedef struct fc_ckpt_ref
{
	uint64_t	seq;
	uint64_t	csn;
	uint64_t	start_lsn;
	uint64_t	manifest_len;
	uint32_t	manifest_crc;
	uint32_t	reserved;
} fc_ckpt_ref;

#define FC_CKPT_KEEP			2	/* the installed one and the one before */

/* The control file: the installed checkpoint first, then the older one. */
typedef struct fc_ckpt_control
{
	uint32_t	magic;
	uint32_t	crc;			/* CRC-32C of the rest of the struct */
	uint32_t	version;
	uint32_t	nrefs;
	fc_ckpt_ref refs[FC_CKPT_KEEP];
} fc_ckpt_control;

/* blocks */
extern void fc_ckpt_block_begin(char *buf, uint32_t chunkno, uint32_t layer,
								uint32_t blockno);
extern int	fc_ckpt_block_add(char *buf, uint32_t slot, const void *image,
							  uint32_t len);
extern uint32_t fc_ckpt_block_seal(char *buf);
extern const char *fc_ckpt_block_check(const char *buf, size_t avail,
									   uint32_t chunkno, uint32_t layer,
									   uint32_t blockno);

/* Rows of a validated block, in order. */
typedef struct fc_ckpt_row_iter
{
	const char *pos;
	const char *end;
	uint32_t	left;
} fc_ckpt_row_iter;

extern void fc_ckpt_rows_begin(fc_ckpt_row_iter *it, const char *block);
extern int	fc_ckpt_rows_next(fc_ckpt_row_iter *it, const fc_ckpt_row **row,
							  const char **image);

/* Walk a manifest's tables and chunks. */
static inline const fc_ckpt_table *
fc_ckpt_first_table(const char *manifest)
{
	return (const fc_ckpt_table *) (manifest + sizeof(fc_ckpt_manifest));
}

static inline const fc_ckpt_chunk *
fc_ckpt_table_chunks(const fc_ckpt_table *tab)
{
	return (const fc_ckpt_chunk *) (tab + 1);
}

static inline const fc_ckpt_delta *
fc_ckpt_table_deltas(const fc_ckpt_table *tab)
{
	return (const fc_ckpt_delta *) (fc_ckpt_table_chunks(tab) + tab->nchunks);
}

static inline const fc_ckpt_table *
fc_ckpt_next_table(const fc_ckpt_table *tab)
{
	return (const fc_ckpt_table *) (fc_ckpt_table_deltas(tab) + tab->ndeltas);
}

/* manifest and control file */
extern void fc_ckpt_manifest_seal(char *buf);
extern const char *fc_ckpt_manifest_check(const char *buf, size_t len);
extern void fc_ckpt_control_seal(fc_ckpt_control *ctl);
extern const char *fc_ckpt_control_check(const fc_ckpt_control *ctl, size_t len);

#endif							/* FC_CKPT_FORMAT_H */

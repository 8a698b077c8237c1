/*-------------------------------------------------------------------------
 *
 * ckpt_scan.h
 *	  Reading one checkpoint chunk file (a whole chunk or one of its
 *	  deltas) block by block, checked against the manifest.
 *
 * The caller supplies the file's bytes and takes each checked block's
 * rows: recovery's loaders put them into slots, the offline verifier
 * counts them.  Pure C (no PostgreSQL headers), so both read checkpoints
 * with the same code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CKPT_SCAN_H
#define FC_CKPT_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/ckpt_format.h"

/* Bytes read per call, and the buffer a scan needs. */
#define FC_CKPT_SCAN_BUFFER		(4 * 1024 * 1024)

/* Read up to len bytes of the file: bytes read, 0 at its end, -1 (errno). */
typedef int64_t (*fc_ckpt_read_fn) (void *arg, char *dst, size_t len);

/*
 * Take the rows of one checked block: NULL, or what is wrong with them
 * (a string of its own: the scan quotes it into its error buffer).
 */
typedef const char *(*fc_ckpt_block_fn) (void *arg, const char *block);

/* What the manifest says the file holds. */
typedef struct fc_ckpt_file_want
{
	uint32_t	chunkno;
	uint32_t	layer;			/* 0: the whole chunk; k: its k-th delta */
	uint64_t	bytes;
	uint32_t	crc;			/* over its blocks' CRCs */
	uint64_t	records;		/* row images and tombstones */
} fc_ckpt_file_want;

/* What the manifest says file `layer' of a chunk of tab holds. */
extern void fc_ckpt_file_wanted(const fc_ckpt_table *tab, const fc_ckpt_chunk *chunk,
								uint32_t layer, fc_ckpt_file_want *want);

/*
 * Scan a file: check every block's CRC and place, hand its rows to take,
 * and compare size, records and CRC chain with want.  buf holds
 * FC_CKPT_SCAN_BUFFER bytes.  Returns NULL if all is well, else what is
 * wrong (in errbuf, or a constant); *bytes_read counts what was read.
 */
extern const char *fc_ckpt_scan_file(fc_ckpt_read_fn read, void *read_arg,
									 const fc_ckpt_file_want *want,
									 fc_ckpt_block_fn take, void *take_arg,
									 char *buf, uint64_t *bytes_read,
									 char *errbuf, size_t errlen);

#endif							/* FC_CKPT_SCAN_H */

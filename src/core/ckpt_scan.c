/*-------------------------------------------------------------------------
 *
 * ckpt_scan.c
 *	  Reading one checkpoint chunk file block by block (see ckpt_scan.h).
 *
 *-------------------------------------------------------------------------
 */
#include "core/ckpt_scan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/crc32c.h"

void
fc_ckpt_file_wanted(const fc_ckpt_table *tab, const fc_ckpt_chunk *chunk,
					uint32_t layer, fc_ckpt_file_want *want)
{
	want->chunkno = chunk->chunkno;
	want->layer = layer;
	if (layer == 0)
	{
		want->bytes = chunk->bytes;
		want->crc = chunk->crc;
		want->records = chunk->base_rows;
	}
	else
	{
		const fc_ckpt_delta *d = &fc_ckpt_table_deltas(tab)[chunk->first_delta + layer - 1];

		want->bytes = d->bytes;
		want->crc = d->crc;
		want->records = d->records;
	}
}

const char *
fc_ckpt_scan_file(fc_ckpt_read_fn read, void *read_arg,
				  const fc_ckpt_file_want *want,
				  fc_ckpt_block_fn take, void *take_arg,
				  char *buf, uint64_t *bytes_read, char *errbuf, size_t errlen)
{
	uint64_t	have = 0;
	uint64_t	pos = 0;
	uint64_t	total = 0;
	uint64_t	records = 0;
	uint32_t	blockno = 0;
	uint32_t	chain = FC_CRC32C_INIT;
	int			eof = 0;
	const char *problem = NULL;

	for (;;)
	{
		const fc_ckpt_block *b;

		/* keep at least one whole block in the buffer */
		if (!eof && have - pos < FC_CKPT_BLOCK_SIZE)
		{
			memmove(buf, buf + pos, have - pos);
			have -= pos;
			pos = 0;
			while (!eof && have < FC_CKPT_SCAN_BUFFER)
			{
				int64_t		got = read(read_arg, buf + have, FC_CKPT_SCAN_BUFFER - have);

				if (got < 0)
				{
					snprintf(errbuf, errlen, "could not read: %s", strerror(errno));
					*bytes_read = total;
					return errbuf;
				}
				if (got == 0)
					eof = 1;
				have += (uint64_t) got;
				total += (uint64_t) got;
			}
		}
		if (pos == have)
			break;
		problem = fc_ckpt_block_check(buf + pos, have - pos, want->chunkno, want->layer,
									  blockno);
		if (problem != NULL)
		{
			snprintf(errbuf, errlen, "block %u (byte %llu): %s", blockno,
					 (unsigned long long) (total - (have - pos)), problem);
			problem = errbuf;
			break;
		}
		b = (const fc_ckpt_block *) (buf + pos);
		chain = fc_crc32c_update(chain, &b->crc, sizeof(b->crc));
		records += b->nrows;
		problem = take(take_arg, buf + pos);
		if (problem != NULL)
		{
			snprintf(errbuf, errlen, "block %u: %s", blockno, problem);
			problem = errbuf;
			break;
		}
		pos += b->size;
		blockno++;
	}
	*bytes_read = total;
	if (problem != NULL)
		return problem;
	if (total != want->bytes || records != want->records)
	{
		snprintf(errbuf, errlen,
				 "%llu bytes with %llu records, the manifest says %llu bytes with %llu",
				 (unsigned long long) total, (unsigned long long) records,
				 (unsigned long long) want->bytes, (unsigned long long) want->records);
		return errbuf;
	}
	if (fc_crc32c_final(chain) != want->crc)
		return "the CRC over its blocks differs from the manifest's";
	return NULL;
}

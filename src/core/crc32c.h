/*-------------------------------------------------------------------------
 *
 * crc32c.h
 *	  CRC-32C (Castagnoli) for log records and checkpoint blocks.
 *
 * Pure C with no PostgreSQL headers, so that fuzzers and benchmarks link
 * the very code the extension runs.  Uses the SSE 4.2 instruction when the
 * CPU has it, a slicing-by-8 table otherwise.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CRC32C_H
#define FC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define FC_CRC32C_INIT		0xFFFFFFFFu

/* Feed len bytes into a running CRC (start from FC_CRC32C_INIT). */
extern uint32_t fc_crc32c_update(uint32_t crc, const void *data, size_t len);

static inline uint32_t
fc_crc32c_final(uint32_t crc)
{
	return crc ^ 0xFFFFFFFFu;
}

static inline uint32_t
fc_crc32c(const void *data, size_t len)
{
	return fc_crc32c_final(fc_crc32c_update(FC_CRC32C_INIT, data, len));
}

#endif							/* FC_CRC32C_H */

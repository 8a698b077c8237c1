/*-------------------------------------------------------------------------
 *
 * crc32c.c
 *	  CRC-32C, hardware-accelerated where available.
 *
 *-------------------------------------------------------------------------
 */
#include "crc32c.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define FC_CRC_HAVE_SSE42_PATH 1
#endif

/* Reflected polynomial 0x1EDC6F41. */
#define FC_CRC32C_POLY		0x82F63B78u

static uint32_t fc_crc_table[8][256];
static int	fc_crc_impl;		/* 0: not chosen yet, 1: table, 2: sse4.2 */

static void
fc_crc_build_table(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ FC_CRC32C_POLY : c >> 1;
		fc_crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			fc_crc_table[t][i] = (fc_crc_table[t - 1][i] >> 8) ^
				fc_crc_table[0][fc_crc_table[t - 1][i] & 0xFF];
}

static uint32_t
fc_crc_sb8(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len > 0 && ((uintptr_t) p & 7) != 0)
	{
		crc = (crc >> 8) ^ fc_crc_table[0][(crc ^ *p++) & 0xFF];
		len--;
	}
	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		w ^= crc;
		crc = fc_crc_table[7][w & 0xFF] ^
			fc_crc_table[6][(w >> 8) & 0xFF] ^
			fc_crc_table[5][(w >> 16) & 0xFF] ^
			fc_crc_table[4][(w >> 24) & 0xFF] ^
			fc_crc_table[3][(w >> 32) & 0xFF] ^
			fc_crc_table[2][(w >> 40) & 0xFF] ^
			fc_crc_table[1][(w >> 48) & 0xFF] ^
			fc_crc_table[0][(w >> 56) & 0xFF];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		crc = (crc >> 8) ^ fc_crc_table[0][(crc ^ *p++) & 0xFF];
	return crc;
}

#ifdef FC_CRC_HAVE_SSE42_PATH
__attribute__((target("sse4.2")))
static uint32_t
fc_crc_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t	c = crc;

	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t) c;
	while (len-- > 0)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

static void
fc_crc_choose(void)
{
	int			impl = 1;

#ifdef FC_CRC_HAVE_SSE42_PATH
	unsigned int eax,
				ebx,
				ecx,
				edx;

	if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2))
		impl = 2;
#endif
	if (impl == 1)
		fc_crc_build_table();
	__atomic_store_n(&fc_crc_impl, impl, __ATOMIC_RELEASE);
}

uint32_t
fc_crc32c_update(uint32_t crc, const void *data, size_t len)
{
	int			impl = __atomic_load_n(&fc_crc_impl, __ATOMIC_ACQUIRE);

	if (impl == 0)
	{
		fc_crc_choose();
		impl = fc_crc_impl;
	}
#ifdef FC_CRC_HAVE_SSE42_PATH
	if (impl == 2)
		return fc_crc_sse42(crc, data, len);
#endif
	return fc_crc_sb8(crc, data, len);
}

/*-------------------------------------------------------------------------
 *
 * bitarray.c
 *	  Bulk operations on packed bit arrays (pure C).
 *
 * Loops are plain word loops over restrict pointers so that the compiler
 * vectorises them; the point is that a bulk reset or negation of the dirty
 * metadata of a few hundred MB of state touches only a few MB.
 *
 *-------------------------------------------------------------------------
 */
#include "bitarray.h"

#include <string.h>

void
fc_bits_fill(uint64_t *bits, size_t nbits, bool value)
{
	memset(bits, value ? 0xff : 0, fc_bits_nwords(nbits) * sizeof(uint64_t));
}

void
fc_bits_negate(uint64_t *restrict dst, const uint64_t *restrict src,
			   size_t nbits)
{
	size_t		n = fc_bits_nwords(nbits);

	for (size_t w = 0; w < n; w++)
		dst[w] = ~src[w];
}

size_t
fc_bits_count(const uint64_t *bits, size_t nbits)
{
	size_t		full = nbits / FC_BITS_PER_WORD;
	size_t		count = 0;

	for (size_t w = 0; w < full; w++)
		count += (size_t) __builtin_popcountll(bits[w]);
	if (nbits % FC_BITS_PER_WORD)
		count += (size_t) __builtin_popcountll(bits[full] &
											   (fc_bits_mask(nbits) - 1));
	return count;
}

void
fc_bitpair_fill(uint64_t *pair, size_t nbits, int half, bool value)
{
	size_t		n = fc_bitpair_nwords(nbits);
	uint64_t	v = value ? ~(uint64_t) 0 : 0;

	for (size_t line = 0; line < n; line += FC_BITPAIR_LINE_WORDS)
		for (int w = 0; w < FC_BITPAIR_HALF_WORDS; w++)
			pair[line + half * FC_BITPAIR_HALF_WORDS + w] = v;
}

/*
 * Half `to` := NOT half `from`, line by line.  Both halves of a line are
 * adjacent, so this streams through the array once.
 */
void
fc_bitpair_negate(uint64_t *pair, size_t nbits, int from, int to)
{
	size_t		n = fc_bitpair_nwords(nbits);
	int			fo = from * FC_BITPAIR_HALF_WORDS;
	int			to_off = to * FC_BITPAIR_HALF_WORDS;

	for (size_t line = 0; line < n; line += FC_BITPAIR_LINE_WORDS)
	{
		uint64_t   *l = pair + line;

		l[to_off + 0] = ~l[fo + 0];
		l[to_off + 1] = ~l[fo + 1];
		l[to_off + 2] = ~l[fo + 2];
		l[to_off + 3] = ~l[fo + 3];
	}
}

size_t
fc_bitpair_count(uint64_t *pair, size_t nbits, int half)
{
	size_t		count = 0;

	for (size_t i = 0; i < nbits; i += FC_BITS_PER_WORD)
	{
		uint64_t	w = *fc_bitpair_word(pair, i, half);

		if (nbits - i < FC_BITS_PER_WORD)
			w &= fc_bits_mask(nbits) - 1;
		count += (size_t) __builtin_popcountll(w);
	}
	return count;
}

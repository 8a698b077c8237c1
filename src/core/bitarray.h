/*-------------------------------------------------------------------------
 *
 * bitarray.h
 *	  Packed bit arrays with word-at-a-time bulk operations, pure C.
 *
 * Two layouts:
 *
 *	flat	bit i lives in word i / 64 of a uint64_t array.  Bulk clear, fill
 *			and negate run one 64-bit word at a time.
 *
 *	pair	two bit arrays A (half 0) and B (half 1) share cache lines: each
 *			64-byte line holds 256 bits of A in its first 32 bytes and the
 *			same 256 bit positions of B in its last 32.  Code that touches
 *			bit i of both arrays (Zigzag's MR/MW, Copy-on-Update's dirty and
 *			lock bits) then misses at most once, and a bulk pass over one
 *			half still runs on whole words (Cao et al. 2011, sections 4.1
 *			and 4.2, "bit-array packed" variants).
 *
 * Arrays must be 64-byte aligned for the pair layout to fall on lines.
 * Bulk operations work on whole words, so bits past nbits in the last word
 * (or line) are unspecified; the count functions ignore them.
 * No PostgreSQL header: the extension and the benchmarks share this code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_BITARRAY_H
#define FC_BITARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FC_BITS_PER_WORD		64
#define FC_BITPAIR_LINE_BITS	256 /* bits of each half per 64-byte line */
#define FC_BITPAIR_LINE_WORDS	8	/* uint64_t words per line, both halves */
#define FC_BITPAIR_HALF_WORDS	4

/* ---- flat layout ---- */

static inline size_t
fc_bits_nwords(size_t nbits)
{
	return (nbits + FC_BITS_PER_WORD - 1) / FC_BITS_PER_WORD;
}

static inline uint64_t
fc_bits_mask(size_t i)
{
	return (uint64_t) 1 << (i & (FC_BITS_PER_WORD - 1));
}

static inline bool
fc_bits_test(const uint64_t *bits, size_t i)
{
	return (bits[i / FC_BITS_PER_WORD] & fc_bits_mask(i)) != 0;
}

static inline void
fc_bits_set(uint64_t *bits, size_t i)
{
	bits[i / FC_BITS_PER_WORD] |= fc_bits_mask(i);
}

static inline void
fc_bits_clear(uint64_t *bits, size_t i)
{
	bits[i / FC_BITS_PER_WORD] &= ~fc_bits_mask(i);
}

/*
 * Atomic test-and-set / clear, for bits used as locks.  Returns the old
 * value.  Acquire on set and release on clear, so the bit brackets the
 * accesses it protects.
 */
static inline bool
fc_bits_test_and_set_atomic(uint64_t *bits, size_t i)
{
	uint64_t	m = fc_bits_mask(i);

	return (__atomic_fetch_or(&bits[i / FC_BITS_PER_WORD], m,
							  __ATOMIC_ACQUIRE) & m) != 0;
}

static inline void
fc_bits_clear_atomic(uint64_t *bits, size_t i)
{
	__atomic_fetch_and(&bits[i / FC_BITS_PER_WORD], ~fc_bits_mask(i),
					   __ATOMIC_RELEASE);
}

extern void fc_bits_fill(uint64_t *bits, size_t nbits, bool value);
extern void fc_bits_negate(uint64_t *dst, const uint64_t *src, size_t nbits);
extern size_t fc_bits_count(const uint64_t *bits, size_t nbits);

/* ---- pair layout ---- */

/* uint64_t words needed for nbits bits of each of the two arrays. */
static inline size_t
fc_bitpair_nwords(size_t nbits)
{
	return ((nbits + FC_BITPAIR_LINE_BITS - 1) / FC_BITPAIR_LINE_BITS) *
		FC_BITPAIR_LINE_WORDS;
}

/* The word holding bit i of half `half` (0 = A, 1 = B). */
static inline uint64_t *
fc_bitpair_word(uint64_t *pair, size_t i, int half)
{
	return pair + (i / FC_BITPAIR_LINE_BITS) * FC_BITPAIR_LINE_WORDS +
		half * FC_BITPAIR_HALF_WORDS +
		(i / FC_BITS_PER_WORD) % FC_BITPAIR_HALF_WORDS;
}

static inline bool
fc_bitpair_test(uint64_t *pair, size_t i, int half)
{
	return (*fc_bitpair_word(pair, i, half) & fc_bits_mask(i)) != 0;
}

/* Bit i of half `to` := bit i of half `from`, without a branch. */
static inline void
fc_bitpair_copy_bit(uint64_t *pair, size_t i, int from, int to)
{
	uint64_t   *src = fc_bitpair_word(pair, i, from);
	uint64_t   *dst = src + (to - from) * FC_BITPAIR_HALF_WORDS;
	uint64_t	m = fc_bits_mask(i);

	*dst = (*dst & ~m) | (*src & m);
}

/*
 * Bit i of half `half` used as a spin lock: set with acquire, clear with
 * release.  Returns the old value of the bit.
 */
static inline bool
fc_bitpair_test_and_set_atomic(uint64_t *pair, size_t i, int half)
{
	uint64_t	m = fc_bits_mask(i);

	return (__atomic_fetch_or(fc_bitpair_word(pair, i, half), m,
							  __ATOMIC_ACQUIRE) & m) != 0;
}

static inline void
fc_bitpair_clear_atomic(uint64_t *pair, size_t i, int half)
{
	__atomic_fetch_and(fc_bitpair_word(pair, i, half), ~fc_bits_mask(i),
					   __ATOMIC_RELEASE);
}

extern void fc_bitpair_fill(uint64_t *pair, size_t nbits, int half,
							bool value);
extern void fc_bitpair_negate(uint64_t *pair, size_t nbits, int from, int to);
extern size_t fc_bitpair_count(uint64_t *pair, size_t nbits, int half);

#endif							/* FC_BITARRAY_H */

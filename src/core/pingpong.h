/*-------------------------------------------------------------------------
 *
 * pingpong.h
 *	  Wait-Free Ping-Pong primitives (Cao et al., SIGMOD 2011), pure C.
 *
 * This header deliberately includes no PostgreSQL header: the extension,
 * the synthetic microbenchmark and any fuzzer link the very same code.
 *
 * Vocabulary (paper section 3.3):
 *	AS		the live application state (here: a row's live image);
 *	odd/even	the two shadow images; commits write the *current* one and
 *			mark it dirty, the asynchronous writer consumes the *previous*
 *			one and clears its mark;
 *	phase	a counter whose low bit says which shadow image is current.
 *
 * Interleaved layout (IPP, paper section 4.3): one slot holds, contiguously,
 * a caller-defined header (which embeds fc_pp_marks), the live image and
 * the two shadow images, so the extra writes of a commit land on the same
 * or adjacent cache lines as the write to the live image.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_PINGPONG_H
#define FC_PINGPONG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FC_PP_CACHE_LINE	64

/* State of one shadow image of one slot. */
#define FC_PP_CLEAN			0	/* nothing new since the writer last took it */
#define FC_PP_DIRTY			1	/* holds a committed row image */
#define FC_PP_TOMBSTONE		2	/* the row was deleted */
#define FC_PP_STATE_MASK	0x03

/*
 * The writer does not reset a mark it consumes to CLEAN but tags it TAKEN,
 * with one bit of the phase it consumed it in: if writing the checkpoint
 * fails, the same pass can be run again (same phase, same images) and
 * still finds what it took.  The next pass over this image runs two phases
 * later, with the other epoch bit, reads the tag as CLEAN and makes it so
 * (the bit repeats every four phases).  A commit installing into the image
 * overwrites the tag.
 */
#define FC_PP_TAKEN			0x80
#define FC_PP_EPOCH			0x40

/* Per-slot marks of the two shadow images; lives inside the slot header. */
typedef struct fc_pp_marks
{
	uint8_t		state[2];		/* FC_PP_* of shadow image 0 and 1 */
	uint16_t	reserved;
	uint32_t	len[2];			/* valid bytes of shadow image 0 and 1 */
} fc_pp_marks;

/* Byte offsets of the parts of an interleaved slot. */
typedef struct fc_pp_layout
{
	uint32_t	header_size;	/* caller's header, rounded up to 8 */
	uint32_t	image_capacity; /* bytes one image can hold, multiple of 8 */
	uint32_t	live_offset;
	uint32_t	shadow_offset[2];
	uint32_t	stride;			/* bytes from one slot to the next */
} fc_pp_layout;

#define FC_PP_ALIGN8(x)		(((x) + 7u) & ~7u)

/* Which shadow image commits write during a phase, and which one the
 * writer consumes. */
static inline uint32_t
fc_pp_current_image(uint64_t phase)
{
	return (uint32_t) (phase & 1);
}

static inline uint32_t
fc_pp_previous_image(uint64_t phase)
{
	return (uint32_t) ((phase & 1) ^ 1);
}

/*
 * Flip the phase: O(1) whatever the state size.  The caller guarantees a
 * point of consistency (no commit install in flight) and that the writer
 * has finished with the previous image.  Returns the new phase.
 */
static inline uint64_t
fc_pp_flip(uint64_t *phase)
{
	return __atomic_add_fetch(phase, 1, __ATOMIC_SEQ_CST);
}

static inline uint64_t
fc_pp_read_phase(const uint64_t *phase)
{
	return __atomic_load_n(phase, __ATOMIC_ACQUIRE);
}

extern void fc_pp_layout_init(fc_pp_layout *layout, uint32_t header_size,
							  uint32_t image_capacity);

static inline char *
fc_pp_live(char *slot, const fc_pp_layout *layout)
{
	return slot + layout->live_offset;
}

static inline char *
fc_pp_shadow(char *slot, const fc_pp_layout *layout, uint32_t image)
{
	return slot + layout->shadow_offset[image];
}

/*
 * Commit side: copy a committed row image into the current shadow image and
 * mark it dirty.  The mark is published with release semantics after the
 * bytes, so a writer that sees DIRTY sees the whole image.
 */
static inline void
fc_pp_install(fc_pp_marks *marks, char *slot, const fc_pp_layout *layout,
			  uint64_t phase, const void *image, uint32_t len)
{
	uint32_t	cur = fc_pp_current_image(phase);

	memcpy(slot + layout->shadow_offset[cur], image, len);
	marks->len[cur] = len;
	__atomic_store_n(&marks->state[cur], FC_PP_DIRTY, __ATOMIC_RELEASE);
}

/* Commit side: record that the row was deleted. */
static inline void
fc_pp_install_tombstone(fc_pp_marks *marks, uint64_t phase)
{
	uint32_t	cur = fc_pp_current_image(phase);

	marks->len[cur] = 0;
	__atomic_store_n(&marks->state[cur], FC_PP_TOMBSTONE, __ATOMIC_RELEASE);
}

static inline uint8_t
fc_pp_taken_tag(uint64_t phase)
{
	return (uint8_t) (FC_PP_TAKEN | (((phase >> 1) & 1) ? FC_PP_EPOCH : 0));
}

/* Does a mark hold a committed change the writer has not taken yet? */
static inline int
fc_pp_is_pending(uint8_t state)
{
	return (state & FC_PP_TAKEN) == 0 && state != FC_PP_CLEAN;
}

/*
 * Writer side: does the previous-phase image of a slot hold something to
 * take?  A mark taken by an earlier pass is made clean on the way: the
 * writer reuses a chunk without taking its images when this finds nothing,
 * and a tag left there would, four phases on, carry the same epoch bit as
 * that pass and be taken again as its retry, bringing back an image two
 * updates old.  A mark taken by this pass (a retry) is still to take.
 */
static inline int
fc_pp_previous_settle(fc_pp_marks *marks, uint64_t phase)
{
	uint32_t	prev = fc_pp_previous_image(phase);
	uint8_t		state = __atomic_load_n(&marks->state[prev], __ATOMIC_ACQUIRE);

	if (state & FC_PP_TAKEN)
	{
		if ((state & (FC_PP_TAKEN | FC_PP_EPOCH)) == fc_pp_taken_tag(phase))
			return 1;
		__atomic_store_n(&marks->state[prev], FC_PP_CLEAN, __ATOMIC_RELAXED);
		return 0;
	}
	return state != FC_PP_CLEAN;
}

/*
 * Writer side: take the previous-phase image of a slot if it is marked, and
 * tag the mark taken.  Returns FC_PP_CLEAN, FC_PP_DIRTY (with *image / *len
 * set) or FC_PP_TOMBSTONE.  Safe without locks because no commit writes the
 * previous image until the next flip, which waits for the writer.
 */
static inline int
fc_pp_take_previous(fc_pp_marks *marks, char *slot, const fc_pp_layout *layout,
					uint64_t phase, const char **image, uint32_t *len)
{
	uint32_t	prev = fc_pp_previous_image(phase);
	uint8_t		state;

	if (!fc_pp_previous_settle(marks, phase))
		return FC_PP_CLEAN;
	state = __atomic_load_n(&marks->state[prev], __ATOMIC_ACQUIRE) & FC_PP_STATE_MASK;
	*image = slot + layout->shadow_offset[prev];
	*len = marks->len[prev];
	__atomic_store_n(&marks->state[prev], (uint8_t) (fc_pp_taken_tag(phase) | state),
					 __ATOMIC_RELAXED);
	return state;
}

/* Reset both marks of a slot (slot reuse, table creation). */
static inline void
fc_pp_reset(fc_pp_marks *marks)
{
	marks->state[0] = marks->state[1] = FC_PP_CLEAN;
	marks->len[0] = marks->len[1] = 0;
}

#endif							/* FC_PINGPONG_H */

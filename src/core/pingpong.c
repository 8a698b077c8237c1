/*-------------------------------------------------------------------------
 *
 * pingpong.c
 *	  Interleaved slot layout for Wait-Free Ping-Pong (pure C).
 *
 *-------------------------------------------------------------------------
 */
#include "pingpong.h"

/*
 * Lay out header, live image and the two shadow images back to back.  The
 * images are 8-byte aligned so row images can be read in place; no padding
 * to cache lines, because for rows of a few hundred bytes padding would cost
 * more memory than the misses it saves (the images are adjacent anyway).
 */
void
fc_pp_layout_init(fc_pp_layout *layout, uint32_t header_size,
				  uint32_t image_capacity)
{
	layout->header_size = FC_PP_ALIGN8(header_size);
	layout->image_capacity = FC_PP_ALIGN8(image_capacity);
	layout->live_offset = layout->header_size;
	layout->shadow_offset[0] = layout->live_offset + layout->image_capacity;
	layout->shadow_offset[1] = layout->shadow_offset[0] + layout->image_capacity;
	layout->stride = layout->shadow_offset[1] + layout->image_capacity;
}

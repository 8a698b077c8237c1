/*-------------------------------------------------------------------------
 *
 * row_size.h
 *	  Slot image size of a table, from its column types.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_ROW_SIZE_H
#define FC_ROW_SIZE_H

#include "postgres.h"

#include "access/tupdesc.h"

/*
 * The settings slot images are sized by: pg_fastckpt.default_row_size and
 * bytes_per_char, or a table's own (storage_options.c).
 */
typedef struct FcSizing
{
	int			row_size;		/* bytes, for columns without a length limit */
	int			bytes_per_char; /* for char(n) and varchar(n); 0: encoding's */
} FcSizing;

/*
 * Image capacity for rows of this shape.  *exact (if not NULL) says whether
 * every column has a bounded size; otherwise sizing->row_size was used.
 */
extern uint32 fc_row_image_capacity_desc(TupleDesc desc, const FcSizing *sizing,
										 bool *exact);

extern uint32 fc_row_image_need_desc(TupleDesc desc, const FcSizing *sizing);

#endif							/* FC_ROW_SIZE_H */

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
#include "utils/rel.h"

/*
 * Image capacity for rows of this shape.  *exact (if not NULL) says whether
 * every column has a bounded size; otherwise pg_fastckpt.default_row_size
 * was used.
 */
extern uint32 fc_row_image_capacity_desc(TupleDesc desc, bool *exact);

static inline uint32
fc_row_image_capacity(Relation rel, bool *exact)
{
	return fc_row_image_capacity_desc(RelationGetDescr(rel), exact);
}

#endif							/* FC_ROW_SIZE_H */

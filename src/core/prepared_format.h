/*-------------------------------------------------------------------------
 *
 * prepared_format.h
 *	  On-disk format of a prepared transaction's fastckpt rows (one file
 *	  per transaction under pg_fastckpt/prepared, named by its full xid).
 *
 * PREPARE TRANSACTION writes the file, durably, before PostgreSQL writes
 * its own PREPARE record; COMMIT or ROLLBACK PREPARED removes it.  Startup
 * recovery puts the rows of a transaction that is still prepared back into
 * their slots as that transaction's uncommitted versions.
 *
 * The file holds the transaction's xids (its own and those of its
 * subtransactions that wrote) and one entry per slot it changed, with the
 * net effect of all its writes there: a row it inserted, a row that existed
 * before it and that it updated in place, or one it deleted (or moved
 * away); then one entry per row it holds locked (version 2), with the
 * strongest lock mode.  A CRC-32C covers everything after the CRC field.
 *
 * Pure C: no PostgreSQL headers, so fuzzers link the same code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_PREPARED_FORMAT_H
#define FC_PREPARED_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FC_PREPARED_MAGIC		0x46435032	/* "FCP2" */
#define FC_PREPARED_VERSION		2	/* 1: no lock entries */
#define FC_PREPARED_GID_SIZE	200 /* PostgreSQL's GIDSIZE */

/* net effect of a transaction on one slot */
#define FC_PREP_INSERT			1	/* a row it inserted: the image */
#define FC_PREP_UPDATE			2	/* an older row updated in place: the image */
#define FC_PREP_DELETE			3	/* an older row deleted or moved away */
#define FC_PREP_LOCK			4	/* a row it holds locked: lock_mode */

/* lock modes, as PostgreSQL's LockTupleMode numbers them */
#define FC_PREP_LOCK_KEY_SHARE	0
#define FC_PREP_LOCK_EXCLUSIVE	3

/*
 * A lock entry's condition (in xmax_flags): a row that a transaction still
 * prepared (lock_mover) was moving when the locker prepared lives in its
 * old slot if that one does not commit, in its new slot if it does.
 */
#define FC_PREP_LOCK_ALWAYS				0
#define FC_PREP_LOCK_IF_COMMITTED		1
#define FC_PREP_LOCK_IF_NOT_COMMITTED	2

typedef struct fc_prepared_header
{
	uint32_t	crc;			/* CRC-32C of bytes [4, len) */
	uint32_t	magic;
	uint32_t	version;
	uint32_t	len;			/* whole file */
	uint64_t	fxid;			/* full transaction id */
	uint32_t	dbid;
	uint32_t	owner;			/* role that prepared it */
	uint32_t	nxids;			/* xids that follow the header */
	uint32_t	nslots;			/* slot entries after the xids, lock
								 * entries included */
	char		gid[FC_PREPARED_GID_SIZE];
} fc_prepared_header;

/*
 * A slot entry; an image of len bytes, padded to 8, follows INSERT/UPDATE.
 * Lock entries come after the others.
 */
typedef struct fc_prepared_slot
{
	uint32_t	spcid;
	uint32_t	relnode;
	uint64_t	slotno;
	uint8_t		op;				/* FC_PREP_* */
	uint8_t		lock_mode;		/* LOCK: FC_PREP_LOCK_KEY_SHARE .. EXCLUSIVE */
	uint16_t	xmax_flags;		/* DELETE: how the row went (moved, keys);
								 * LOCK: its condition */
	uint16_t	moved_from;		/* INSERT: tag of the slot it moved from */
	uint16_t	next_tid[3];	/* DELETE: where it moved (block hi, lo, offset) */
	uint32_t	len;			/* image bytes (0 for DELETE) */
	uint32_t	lock_mover;		/* LOCK: the xid its condition names */
} fc_prepared_slot;

#define FC_PREPARED_ALIGNED(x)	((((uint64_t) (x)) + 7) & ~(uint64_t) 7)

/* Bytes a slot entry takes, its image included. */
static inline uint64_t
fc_prepared_slot_size(uint32_t image_len)
{
	return sizeof(fc_prepared_slot) + FC_PREPARED_ALIGNED(image_len);
}

/* Set the CRC of a file built in memory (its header's len set). */
extern void fc_prepared_seal(void *file);

/*
 * Check a file read into memory (size bytes): NULL if it is whole, else
 * what is wrong with it.
 */
extern const char *fc_prepared_check(const void *file, size_t size);

/* Walk the slot entries of a checked file. */
typedef struct fc_prepared_cursor
{
	const char *pos;
	const char *end;
	uint32_t	left;
} fc_prepared_cursor;

extern const uint32_t *fc_prepared_xids(const fc_prepared_header *hdr);
extern void fc_prepared_cursor_init(fc_prepared_cursor *cur,
									const fc_prepared_header *hdr);
extern int	fc_prepared_next(fc_prepared_cursor *cur,
							 const fc_prepared_slot **slot, const char **image);

#endif							/* FC_PREPARED_FORMAT_H */

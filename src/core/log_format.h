/*-------------------------------------------------------------------------
 *
 * log_format.h
 *	  On-disk format of fastckpt's logical log: records and their entries.
 *
 * The log is one byte stream; a position in it (LSN) is a byte offset.
 * Each record carries its own position, so a record read from the wrong
 * place (a stale or torn tail) never validates, and a CRC-32C over all of
 * it.  One committing transaction appends one record (VALUES or CALL), or
 * several when it is too large for one, all with its CSN and xid.
 *
 * Pure C: no PostgreSQL headers, so fuzzers link the same code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_LOG_FORMAT_H
#define FC_LOG_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FC_LOG_ALIGN			8
/* in 64 bits: a 32-bit length near its maximum must not wrap to 0 */
#define FC_LOG_ALIGNED(x)		((((uint64_t) (x)) + (FC_LOG_ALIGN - 1)) & ~((uint64_t) FC_LOG_ALIGN - 1))
#define FC_LOG_SEGMENT_SIZE		(16 * 1024 * 1024)
#define FC_LOG_MAX_RECORD		(1024 * 1024)

/* record kinds */
#define FC_REC_VALUES			1	/* row images of one transaction */
#define FC_REC_CALL				2	/* one call of a registered procedure */
#define FC_REC_DDL				3	/* storages created or dropped */
#define FC_REC_ABORT			4	/* earlier records with this CSN are void */
#define FC_REC_KIND_MAX			4

/* record flags */
#define FC_REC_NEEDS_CLOG		0x01	/* replay only if PostgreSQL says the
										 * xid committed */

typedef struct fc_log_header
{
	uint32_t	crc;			/* CRC-32C of bytes [4, len) */
	uint32_t	len;			/* whole record, header included */
	uint64_t	lsn;			/* where the record starts */
	uint64_t	csn;			/* commit sequence number */
	uint64_t	xid;			/* full transaction id */
	uint32_t	dbid;
	uint8_t		kind;
	uint8_t		flags;
	uint16_t	nentries;		/* entries that follow (VALUES, DDL) */
} fc_log_header;

#define FC_LOG_HEADER_SIZE		((uint32_t) sizeof(fc_log_header))

/* A VALUES entry; the image (len bytes, padded to 8) follows. */
typedef struct fc_log_row
{
	uint32_t	spcid;
	uint32_t	relnode;
	uint64_t	slotno;
	uint32_t	len;			/* FC_LOG_TOMBSTONE: the row was deleted */
	uint32_t	reserved;
} fc_log_row;

#define FC_LOG_TOMBSTONE		UINT32_MAX

/* DDL entry ops */
#define FC_DDL_CREATE			1	/* new storage (CREATE, TRUNCATE, rewrite) */
#define FC_DDL_DROP				2	/* storage dropped */
#define FC_DDL_DROP_DATABASE	3	/* every storage of dbid */

typedef struct fc_log_ddl
{
	uint32_t	op;
	uint32_t	dbid;
	uint32_t	spcid;
	uint32_t	relnode;
	uint32_t	relid;			/* pg_class OID at creation (CREATE) */
	uint32_t	image_capacity; /* slot image size (CREATE) */
} fc_log_ddl;

/*
 * A CALL record: one committed call of a registered routine.  After the
 * fixed part come nentries slot hints (the slots the call's inserts were
 * given, in allocation order, so that replay puts every row where later
 * records expect it), nargs argument descriptors, the serialized argument
 * values and the session the call ran with (its search_path, then
 * DateStyle, IntervalStyle and TimeZone, then name and value of each
 * carried setting not at replay's value, each after a NUL; records of
 * earlier builds hold the search_path alone, or no pairs), each padded to
 * 8 bytes.
 * The digest covers the final image of every slot the call wrote; replay
 * recomputes it and refuses to go on if they differ.
 */
typedef struct fc_log_call
{
	uint32_t	funcid;
	uint32_t	definition;		/* pg_proc row version (xmin) called */
	uint32_t	roleid;			/* replay runs as this role */
	uint32_t	inputcollid;
	int64_t		txn_time;		/* what fastckpt_txn_time() returned */
	uint64_t	seed;			/* fastckpt_random()'s seed */
	uint64_t	digest;			/* of the written slots' final images */
	uint32_t	nwritten;		/* distinct slots written */
	uint16_t	nargs;
	uint8_t		is_procedure;	/* CALL p(...), else SELECT f(...) */
	uint8_t		variadic;		/* last argument is the variadic array */
	uint32_t	args_len;
	uint32_t	search_path_len;	/* of the whole session part */
} fc_log_call;

typedef struct fc_log_call_slot
{
	uint32_t	spcid;
	uint32_t	relnode;
	uint64_t	slotno;
} fc_log_call_slot;

typedef struct fc_log_call_arg
{
	uint32_t	type;
	uint32_t	collation;
} fc_log_call_arg;

/* A CALL record taken apart (pointers into the record). */
typedef struct fc_log_call_view
{
	const fc_log_call *call;
	const fc_log_call_slot *slots;	/* header's nentries of them */
	const fc_log_call_arg *args;
	const char *arg_data;
	const char *search_path;	/* not terminated */
} fc_log_call_view;

/* Bytes a CALL record needs, header included. */
extern uint32_t fc_log_call_size(uint32_t nslots, uint32_t nargs,
								 uint32_t args_len, uint32_t search_path_len);

/* Take a valid CALL record apart; 0 if its parts overrun it. */
extern int	fc_log_call_parse(const fc_log_header *rec, fc_log_call_view *view);

/* What fc_log_validate found at a position. */
typedef enum fc_log_check
{
	FC_LOG_VALID,
	FC_LOG_SHORT,				/* fewer bytes than the record needs */
	FC_LOG_INVALID				/* end of the log: torn, zero or foreign */
} fc_log_check;

/* Seal a record built in memory: set its position and CRC. */
extern void fc_log_seal(void *record, uint64_t lsn);

/*
 * Is there a valid record of at most max_len bytes at position lsn, given
 * avail bytes at buf?  With FC_LOG_SHORT, *need is how many bytes to read.
 */
extern fc_log_check fc_log_validate(const void *buf, size_t avail,
									uint64_t lsn, uint32_t max_len,
									uint32_t *need);

/*
 * Walk the entries of a VALUES or DDL record.  Returns false at the end,
 * or if an entry would overrun the record (then *corrupt is set).
 */
typedef struct fc_log_cursor
{
	const char *pos;
	const char *end;
	int			left;
	int			corrupt;
} fc_log_cursor;

extern void fc_log_cursor_init(fc_log_cursor *cur, const fc_log_header *rec);
extern int	fc_log_next_row(fc_log_cursor *cur, const fc_log_row **row,
							const char **image);
extern int	fc_log_next_ddl(fc_log_cursor *cur, const fc_log_ddl **ddl);

/* Bytes an entry takes in a record (64 bits: a damaged length may be huge). */
static inline uint64_t
fc_log_row_size(uint32_t image_len)
{
	return sizeof(fc_log_row) +
		(image_len == FC_LOG_TOMBSTONE ? 0 : FC_LOG_ALIGNED(image_len));
}

#endif							/* FC_LOG_FORMAT_H */

-- Register the TPC-B function of tpcb_proc_setup.sql, so that its calls on
-- fastckpt tables are logged as CALL records instead of row images.
SELECT fastckpt_register_procedure('tpcb(int, int, int, int)');

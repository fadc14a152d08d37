/*
 * fuzz_partial.c - a partial file's record and log as the next copy with
 * --partial reads them (io_root_partial): files beneath a root that anyone
 * with write access to the receiver's directory could have changed.
 *
 * Design: a root holding the partial data file of one file "f" of three
 * chunks (fuzz.h's fuzz_part_data); the input is written as its record and
 * as its log, and io_root_partial judges both against the manifest's entry
 * for "f". The seeds are a true record and a true log from gen_corpus
 * (io__partial_record_write's and io__partial_log_open's own bytes, chunks
 * 0 and 2 landed).
 *
 * Checked: whatever they say, no more than the file's three chunks and
 * their bytes are held (only chunks whose bytes hash to what is claimed;
 * gen_corpus checks that each seed holds exactly the two it names).
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "io/io_int.h"
#include "tests/fuzz/fuzz.h"

#include <sys/stat.h>

static struct io_root *root;
static struct io_extent ext = {0, FUZZ_PART_CHUNK *FUZZ_PART_CHUNKS};
static struct io_entry e = {.path = "f",
			    .type = IO_FILE,
			    .mode = 0644,
			    .size = FUZZ_PART_CHUNK * FUZZ_PART_CHUNKS,
			    .mtime_ns = FUZZ_PART_MTIME,
			    .ext = &ext,
			    .n_ext = 1,
			    .data_bytes = FUZZ_PART_CHUNK * FUZZ_PART_CHUNKS};
static char rec_path[4200], log_path[4200];

static void setup(void)
{
	char dir[4200], data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN],
		path[4300];
	static uint8_t buf[FUZZ_PART_CHUNK * FUZZ_PART_CHUNKS];

	snprintf(dir, sizeof(dir), "%s/root", fuzz_tmpdir());
	FUZZ_CHECK(mkdir(dir, 0755) == 0);
	FUZZ_CHECK(io_root_open(dir, 0, &root) == 0);
	io__partial_names("f", data, rec, log);
	fuzz_part_data(buf);
	snprintf(path, sizeof(path), "%s/%s", dir, data);
	fuzz_write_file(path, buf, sizeof(buf));
	snprintf(rec_path, sizeof(rec_path), "%s/%s", dir, rec);
	snprintf(log_path, sizeof(log_path), "%s/%s", dir, log);
	rcp_log_set_level(RCP_LOG_SILENT); /* a notice for every input that is ignored */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct io_partial *p;
	uint64_t k, held = 0;

	if (!root)
		setup();
	fuzz_write_file(rec_path, data, size);
	fuzz_write_file(log_path, data, size);
	p = io_root_partial(root, &e, FUZZ_PART_CHUNK);
	for (k = 0; k < FUZZ_PART_CHUNKS + 2; k++)
		held += io_partial_has(p, k);
	FUZZ_CHECK(held <= FUZZ_PART_CHUNKS && !io_partial_has(p, FUZZ_PART_CHUNKS));
	FUZZ_CHECK(io__partial_bytes(p) == held * FUZZ_PART_CHUNK);
	io_partial_destroy(p);
	return 0;
}

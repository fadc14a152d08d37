/*
 * fuzz_profile.c - the text files railcp reads: a profile (topology/
 * profile.c, parsed and checked against a machine) and a key file
 * (engine/session/auth.c), and the lists a profile's values use.
 *
 * The input is written to a file in the harness's temporary directory and
 * loaded as a profile against a machine of tests/fixtures (two sockets with
 * four NICs for inputs of even length, an eight-GPU server for odd ones),
 * then, if it loads, again with option overrides.
 * A profile that loads must give a sound plan, and saving that plan and
 * loading it again must give the same plan. The same file is loaded as a
 * key file. The input as one string is parsed as a CPU list
 * (topo_bitmap_parse, which must read back what it formats) and as a rail
 * list (topo_opts_parse_rails).
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "engine/session/auth.h"
#include "topology/topology.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_plan.h"

#include <stdbool.h>
#include <sys/stat.h>

static struct topo_machine *machine[2];
static char profile_path[4200], saved_path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const xml[] = {"topo_2s_4nic.xml", "topo_gpu8.xml"};
	char path[4200];
	size_t i;
	int err;

	(void)argc;
	(void)argv;
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", RAILCP_FIXTURES, xml[i]);
		if ((err = topo_machine_create(path, NULL, &machine[i])) != 0) {
			fprintf(stderr, "fuzz_profile: cannot load %s: %s\n", path,
				rcp_err_msg(err));
			abort();
		}
	}
	snprintf(profile_path, sizeof(profile_path), "%s/profile", fuzz_tmpdir());
	snprintf(saved_path, sizeof(saved_path), "%s/saved", fuzz_tmpdir());
	return 0;
}

static void sound_plan(const struct topo_plan *p, const struct topo_machine *m)
{
	size_t w, r;

	FUZZ_CHECK(p->n_workers >= 1 && p->n_workers <= TOPO_MAX_NODES);
	FUZZ_CHECK(p->n_rails <= TOPO_MAX_RAILS);
	FUZZ_CHECK(p->qps_per_rail >= 1 && p->qps_per_rail <= TOPO_MAX_QPS_PER_RAIL);
	for (w = 0; w < p->n_workers; w++) {
		FUZZ_CHECK(topo_machine_node_index(m, p->worker[w].node) >= 0);
		FUZZ_CHECK(p->worker[w].first_rail + p->worker[w].n_rails <= p->n_rails);
		FUZZ_CHECK(p->worker[w].buffer_bytes > 0);
	}
	for (r = 0; r < p->n_rails; r++) {
		FUZZ_CHECK(p->rail[r].worker < p->n_workers);
		FUZZ_CHECK(topo_machine_rail_index(m, p->rail[r].dev, p->rail[r].port) >= 0);
	}
}

/* Load the profile against m (with opts); 0 if it loaded. */
static int profile(const struct topo_machine *m, const struct topo_opts *opts)
{
	struct topo_plan *p = NULL, *again = NULL;
	int err = topo_profile_load(profile_path, m, opts, &p);

	if (err) {
		FUZZ_CHECK(p == NULL && err < 0);
		return err;
	}
	sound_plan(p, m);
	FUZZ_CHECK(topo_profile_save(p, m, saved_path) == 0);
	FUZZ_CHECK(topo_profile_load(saved_path, m, NULL, &again) == 0);
	fuzz_same_plan(p, again);
	topo_plan_destroy(again);
	topo_plan_destroy(p);
	return 0;
}

static void lists(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), back[8192];
	struct topo_bitmap b, b2;
	struct topo_opts *o = calloc(1, sizeof(*o));

	if (!text || !o)
		goto out;
	memcpy(text, data, size);
	text[size] = '\0';
	if (topo_bitmap_parse(text, &b) == 0) {
		topo_bitmap_format(&b, back, sizeof(back));
		if (topo_bitmap_count(&b) == 0)
			FUZZ_CHECK(!strcmp(back, "none"));
		else
			FUZZ_CHECK(topo_bitmap_parse(back, &b2) == 0 && topo_bitmap_equal(&b, &b2));
	}
	if (topo_opts_parse_rails(text, o) == 0)
		FUZZ_CHECK(o->n_rails <= TOPO_MAX_RAILS);
out:
	free(o);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct topo_opts over = {.qps_per_rail = 3, .buffer_mib = 5};
	struct eng_auth_key *key = malloc(sizeof(*key));

	/*
	 * One machine per input, by the parity of its length: each load
	 * callocs a parse state of about 300 KiB, which ASan maps and unmaps
	 * each time, so loading against both would halve the rate.
	 */
	const struct topo_machine *m = machine[size & 1];

	fuzz_write_file(profile_path, data, size);
	if (profile(m, NULL) == 0)
		profile(m, &over);
	if (key) {
		if (eng__auth_key_load(profile_path, key) == 0)
			FUZZ_CHECK(key->len >= ENG_AUTH_KEY_MIN && key->len < ENG_AUTH_KEY_MAX);
		free(key);
	}
	lists(data, size);
	return 0;
}

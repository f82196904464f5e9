/* lowercheck.c — an SPMD program must compute what it was lowered from.
 *
 * Runs the partitioned (global) program in the reference interpreter and
 * its SPMD program on simulated devices (spmd/simulate.c), on the same seeded
 * inputs, and compares the results (tensor_results_agree).
 */
#include "check/check.h"

gboolean check_lowering(const Func *g, const Func *spmd, gint64 seed,
                        GString *out, Diag *diag, GError **error) {
  if (g->spmd) {
    diag_reason(diag,
                "--simulate compares with the program an SPMD program was "
                "lowered from: give that program, not the SPMD text");
    return FALSE;
  }
  if (!interp_check(g, diag))
    return FALSE;
  Tensor **in = g_new0(Tensor *, (gsize)g->nargs + 1);
  for (int i = 0; i < g->nargs; i++)
    in[i] = interp_random_input(g, i, seed);
  GPtrArray *want = interp_run(g, in, error);
  GPtrArray *got = want ? spmd_simulate(spmd, in, diag, error) : NULL;
  gboolean ok = got != NULL;
  if (ok) {
    ok = tensor_results_agree(want, got, diag);
    if (!ok)
      diag_prefix(diag, "the simulated SPMD program disagrees with the "
                        "interpreter: ");
  }
  if (ok) {
    int64_t ndev = mesh_devices(&spmd->spmd->mesh);
    g_string_append_printf(out,
                           "simulated on %" G_GINT64_FORMAT
                           " devices: the results agree with the "
                           "interpreter (seed %" G_GINT64_FORMAT ")\n",
                           ndev, seed);
  }
  if (want)
    g_ptr_array_unref(want);
  if (got)
    g_ptr_array_unref(got);
  for (int i = 0; i < g->nargs; i++)
    tensor_unref(in[i]);
  g_free(in);
  return ok;
}

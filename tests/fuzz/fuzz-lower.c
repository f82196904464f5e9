/* fuzz-lower — lowering and redistribution fusion checked on simulated
 * devices (spmd/lower.c, redistribute.c, simulate.c, cost.c;
 * check/lowercheck.c).
 *
 * Input: a small partitioned program, optionally headed by a line
 * "// mesh SPEC" naming the mesh (a comment, so the input stays a .pir
 * file).  Without one the mesh is read off the program: each axis a
 * tile or sum is bound to gets that range's number of parts (axes
 * mesh_parse would refuse are left out).  Programs
 * that do not parse, are too large to run quickly, or need more than 8
 * devices are skipped.  The program is lowered (pipeline_lower) and
 * costed on hw/cpu2.hw, its SPMD text must print and parse back to the
 * same text, and check_lowering runs it in the interpreter and on
 * simulated devices on the same seeded inputs: a diagnostic (the mesh
 * does not fit, a value the interpreter refuses) is fine, results that
 * disagree are a crash.  SPMD text given as input is run on simulated
 * devices on seeded inputs of its global shapes, where only a crash is
 * a failure.
 */
#include "fuzz.h"

#include <string.h>

#define LOWER_MAX_INPUT 8192 /* bytes */
#define LOWER_MAX_DEVICES 8
#define LOWER_MAX_ELEMS ((int64_t)1 << 14) /* of any one value */
#define LOWER_MAX_WORK 4e6   /* elements and FLOPs, loops counted */
#define LOWER_MAX_TERMS 2000 /* distinct terms */
#define MESH_LINE "// mesh "

typedef struct Size {
  double work;
  GHashTable *seen; /* Term* already counted */
  Mesh axes;        /* each axis bound, with its range's number of parts */
} Size;

/* Adds the work of 't' run 'times' times to 'sz' (each term once: the
 * interpreter computes a shared value once); FALSE once it is too
 * large. */
static gboolean measure(const Term *t, double times, Size *sz) {
  if (!g_hash_table_add(sz->seen, (gpointer)t))
    return TRUE;
  if (g_hash_table_size(sz->seen) > LOWER_MAX_TERMS)
    return FALSE;
  if (t->type && t->type->kind == TY_TENSOR) {
    int64_t n = type_numel(t->type);
    if (n > LOWER_MAX_ELEMS)
      return FALSE;
    sz->work += (double)n * times;
  }
  if (t->kind == TM_OP)
    sz->work += op_flops(t) * times;
  if (sz->work > LOWER_MAX_WORK)
    return FALSE;
  double inner = times;
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    int64_t parts = t->range->w > 0 ? t->range->n / t->range->w : 1;
    inner *= (double)MAX(parts, 1);
    /* only what mesh_parse would accept */
    if (t->axis && mesh_axis_name_ok(t->axis) && parts <= (1 << 20) &&
        mesh_axis_index(&sz->axes, t->axis) < 0 &&
        sz->axes.naxes < MESH_MAX_AXES) {
      sz->axes.names[sz->axes.naxes] = t->axis;
      sz->axes.sizes[sz->axes.naxes++] = MAX(parts, 1);
    }
  }
  for (int i = 0; i < t->nargs; i++)
    if (!measure(t->args[i], inner, sz))
      return FALSE;
  return TRUE;
}

/* The mesh of the input: its "// mesh" line, else the axes 'sz' saw. */
static gboolean pick_mesh(const char *text, const Size *sz, Mesh *out) {
  if (!g_str_has_prefix(text, MESH_LINE)) {
    *out = sz->axes;
    return TRUE;
  }
  const char *spec = text + strlen(MESH_LINE);
  g_autofree char *line = g_strndup(spec, strcspn(spec, "\r\n"));
  g_autoptr(Diag) why = diag_new(NULL);
  return mesh_parse(g_strstrip(line), out, why);
}

/* print(parse(print(spmd))) must be print(spmd). */
static void check_spmd_text(const Func *spmd) {
  g_autoptr(GString) once = g_string_new(NULL);
  print_func(once, NULL, spmd);
  module_free(fuzz_reparse("lowered.pir", once, FALSE));
}

/* Runs SPMD text 'f' on simulated devices on seeded inputs of its global
 * shapes; a diagnostic is fine. */
static void simulate_text(const Func *f) {
  const Mesh *mesh = &f->spmd->mesh;
  if (mesh_devices(mesh) > LOWER_MAX_DEVICES)
    return;
  g_autoptr(GPtrArray) in =
      g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  GRand *rng = g_rand_new_with_seed(1);
  for (int i = 0; i < f->nargs; i++) {
    const Type *local = f->arg_types[i];
    const Dist *d = &f->spmd->arg_dists[i];
    int64_t dims[PARTIR_MAX_RANK];
    double numel = 1;
    for (int k = 0; k < local->rank && numel <= LOWER_MAX_ELEMS; k++) {
      int64_t parts = k < d->rank ? MAX(dist_parts(d, mesh, k), 1) : 1;
      numel *= (double)local->dims[k] * (double)parts;
      dims[k] = numel <= LOWER_MAX_ELEMS ? local->dims[k] * parts : 0;
    }
    if (numel > LOWER_MAX_ELEMS)
      break;
    Tensor *t = tensor_new(type_tensor(local->dtype, local->rank, dims));
    tensor_fill_random(t, rng);
    g_ptr_array_add(in, t);
  }
  g_rand_free(rng);
  if ((int)in->len < f->nargs)
    return;
  g_autoptr(Diag) why = diag_new(NULL);
  GError *error = NULL;
  GPtrArray *out = spmd_simulate(f, (Tensor *const *)in->pdata, why, &error);
  if (out)
    g_ptr_array_unref(out);
  g_clear_error(&error);
}

static void fuzz_lower(const uint8_t *data, size_t size) {
  if (size > LOWER_MAX_INPUT)
    return;
  g_autofree char *text = fuzz_text(data, size);
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m =
      pipeline_read_program("input.pir", (const char *)data, size, errors);
  if (!m)
    return;
  Func *g = module_entry(m);
  Size sz = {.seen = g_hash_table_new(NULL, NULL)};
  gboolean small = measure(g->body, 1, &sz);
  g_hash_table_unref(sz.seen);
  if (!small)
    return;
  if (g->spmd) {
    simulate_text(g);
    return;
  }
  Mesh mesh;
  if (!pick_mesh(text, &sz, &mesh) || mesh_devices(&mesh) > LOWER_MAX_DEVICES)
    return;

  g_auto(Lowered) l = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  if (!pipeline_lower(fuzz_rules(), m, g, &mesh, &l, why)) {
    if (!diag_any(why))
      fuzz_fail("lowering fails without a reason");
    return;
  }
  check_spmd_text(l.spmd);

  static Hardware cpu2;
  static gboolean have_cpu2;
  if (!have_cpu2) {
    g_autofree char *path = fuzz_srcpath("hw/cpu2.hw");
    GError *error = NULL;
    if (!hw_load(path, &cpu2, &error))
      fuzz_fail("%s", error->message);
    have_cpu2 = TRUE;
  }
  g_auto(CostReport) cost = {0};
  g_autoptr(Diag) cost_why = diag_new(NULL);
  pipeline_cost(&l, &cpu2, &cost, cost_why);

  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(Diag) diag = diag_new(NULL);
  GError *error = NULL;
  if (check_lowering(g, l.spmd, 1, out, diag, &error))
    return;
  if (error) { /* interrupted: not the program's fault */
    g_error_free(error);
    return;
  }
  if (g_str_has_prefix(diag_text(diag), "the simulated SPMD program disagrees"))
    fuzz_fail("%s\nprogram:\n%s", diag_text(diag), text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_lower, data, size);
}

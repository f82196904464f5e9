/* test-sharding — shardings read and written as JAX writes them.
 *
 * tests/fixtures/stablehlo/shardings.table (gen_jax.py made it with JAX)
 * lists, for meshes and PartitionSpecs of a 16x8 argument, the Shardy
 * text and the GSPMD string JAX writes for it.  Each Shardy text must
 * read into the sharding whose GSPMD string (on that mesh) is JAX's, and
 * each GSPMD string, mapped onto the mesh, into the sharding whose Shardy
 * text is JAX's: the two forms are checked against each other by JAX,
 * not by this code.  Then device grids written by hand: explicit device
 * lists, and grids that no split over the mesh's axes gives.
 */
#include "import/import.h"

#include <string.h>

static char *fixture(const char *name) {
  const char *top = g_getenv("top_srcdir");
  if (top)
    return g_build_filename(top, "tests", "fixtures", "stablehlo", name,
                            NULL);
  return g_test_build_filename(G_TEST_DIST, "fixtures", "stablehlo", name,
                               NULL);
}

/* A text to read, on a Source of its own. */
typedef struct Text {
  Source *src;
  Diag *diag;
  ShardingText t;
} Text;

static void text_init(Text *x, const char *s) {
  x->src = source_new("(test)", s, strlen(s));
  x->diag = diag_new(x->src);
  x->t = (ShardingText){.src = x->src,
                        .text = x->src->text,
                        .len = x->src->len,
                        .at = {1, 1, 0},
                        .exact = TRUE,
                        .diag = x->diag};
}

static void text_clear(Text *x) {
  diag_free(x->diag);
  source_free(x->src);
}

static void read_sdy(const char *s, Sharding *out) {
  Text x;
  text_init(&x, s);
  ShardingMeshRef ref;
  gboolean ok = sharding_read_sdy(&x.t, out, &ref);
  if (!ok)
    g_printerr("%s", diag_text(x.diag));
  g_assert_true(ok);
  g_assert_cmpstr(ref.name, ==, "mesh");
  sharding_mesh_ref_clear(&ref);
  text_clear(&x);
}

/* The sharding GSPMD string 's' means on 'mesh' for rank 'rank'; FALSE
 * with the reason in 'why' when it is none. */
static gboolean read_gspmd(const char *s, const Mesh *mesh, int rank,
                           Sharding *out, char **why) {
  Text x;
  text_init(&x, s);
  Gspmd g;
  gboolean read = sharding_read_gspmd(&x.t, &g);
  if (!read)
    g_printerr("%s", diag_text(x.diag));
  g_assert_true(read);
  gboolean ok = sharding_from_gspmd(&g, mesh, rank, out, why);
  gspmd_clear(&g);
  text_clear(&x);
  return ok;
}

/* Every line of the table, both ways. */
static void test_jax_table(void) {
  g_autofree char *path = fixture("shardings.table");
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  int checked = 0;
  for (char **l = lines; *l; l++) {
    if (!**l)
      continue;
    g_auto(GStrv) f = g_strsplit(*l, "\t", -1);
    g_assert_cmpuint(g_strv_length(f), ==, 3);
    Mesh mesh;
    g_autoptr(Diag) why = diag_new(NULL);
    g_assert_true(mesh_parse(f[0], &mesh, why));
    /* Shardy -> GSPMD */
    Sharding s;
    read_sdy(f[1], &s);
    g_autoptr(GString) gspmd = g_string_new(NULL);
    sharding_print_gspmd(gspmd, &s, &mesh);
    g_assert_cmpstr(gspmd->str, ==, f[2]);
    /* GSPMD -> Shardy */
    Sharding t;
    g_autofree char *reason = NULL;
    g_assert_true(read_gspmd(f[2], &mesh, 2, &t, &reason));
    g_autoptr(GString) sdy = g_string_new(NULL);
    sharding_print_sdy(sdy, &t, "mesh");
    g_assert_cmpstr(sdy->str, ==, f[1]);
    checked++;
  }
  g_assert_cmpint(checked, >=, 20);
}

/* Explicit device lists: [2,2] holding devices 0,2,1,3 on x=2,y=2 steps
 * through x along dimension 1 and y along dimension 0 (device d sits at
 * x = d / 2, y = d % 2). */
static void test_device_lists(void) {
  Mesh mesh;
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_true(mesh_parse("x=2,y=2", &mesh, why));
  struct {
    const char *gspmd, *sdy;
  } cases[] = {
      {"{devices=[2,2]0,2,1,3}", "#sdy.sharding<@mesh, [{\"y\"}, {\"x\"}]>"},
      {"{devices=[2,2]0,1,2,3}", "#sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>"},
      {"{devices=[4,1]0,2,1,3}", "#sdy.sharding<@mesh, [{\"y\", \"x\"}, {}]>"},
      {"{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}",
       "#sdy.sharding<@mesh, [{}, {\"x\"}]>"},
      {"{replicated}", "#sdy.sharding<@mesh, [{}, {}]>"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    Sharding s;
    g_autofree char *reason = NULL;
    g_assert_true(read_gspmd(cases[i].gspmd, &mesh, 2, &s, &reason));
    g_autoptr(GString) sdy = g_string_new(NULL);
    sharding_print_sdy(sdy, &s, "mesh");
    g_assert_cmpstr(sdy->str, ==, cases[i].sdy);
  }
}

/* Grids that are no split over the axes, or not over all the devices,
 * and the forms partir does not take. */
static void test_refusals(void) {
  Mesh mesh;
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_true(mesh_parse("x=2,y=2", &mesh, why));
  struct {
    const char *gspmd, *why;
  } cases[] = {
      /* 0 -> 3 moves along both axes at once */
      {"{devices=[4,1]0,3,1,2}", "no split over the axes"},
      {"{devices=[2,1]<=[2]}", "2 devices but the mesh (x=2,y=2) has 4"},
      {"{devices=[2,2,1]<=[4]}", "a grid of 3 dimensions"},
      {"{maximal device=1}", "the whole value on device 1 alone"},
      {"{manual}", "per device"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    Sharding s;
    g_autofree char *reason = NULL;
    g_assert_false(read_gspmd(cases[i].gspmd, &mesh, 2, &s, &reason));
    if (!strstr(reason, cases[i].why))
      g_error("%s: '%s' does not say '%s'", cases[i].gspmd, reason,
              cases[i].why);
  }
}

/* Syntax errors point at their column. */
static void test_positions(void) {
  struct {
    const char *text, *want;
    gboolean gspmd;
  } cases[] = {
      {"#sdy.sharding<@mesh, [{\"x\"}, {]>", "1:31: error: expected an axis",
       FALSE},
      {"#sdy.sharding<@mesh, [{\"x\":(1)2}]>", "1:27: error: a sub-axis", FALSE},
      {"#sdy.sharding<@mesh, [{}], unreduced={\"x\"}>", "1:28: error: 'unreduced'",
       FALSE},
      {"{devices=[2,1]<=[3]}", "1:15: error: the iota", TRUE},
      {"{{replicated}, {replicated}}", "1:2: error: a tuple", TRUE},
      {"{devices=[2]0,0}", "1:13: error: the grid does not hold", TRUE},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    Text x;
    text_init(&x, cases[i].text);
    gboolean ok;
    if (cases[i].gspmd) {
      Gspmd g;
      ok = sharding_read_gspmd(&x.t, &g);
      gspmd_clear(&g);
    } else {
      Sharding s;
      ShardingMeshRef ref;
      ok = sharding_read_sdy(&x.t, &s, &ref);
      sharding_mesh_ref_clear(&ref);
    }
    g_assert_false(ok);
    if (!strstr(diag_text(x.diag), cases[i].want))
      g_error("'%s': got '%s', wanted '%s'", cases[i].text, diag_text(x.diag),
              cases[i].want);
    text_clear(&x);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sharding/jax-table", test_jax_table);
  g_test_add_func("/sharding/device-lists", test_device_lists);
  g_test_add_func("/sharding/refusals", test_refusals);
  g_test_add_func("/sharding/positions", test_positions);
  return g_test_run();
}

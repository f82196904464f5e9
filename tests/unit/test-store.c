/* test-store — the term store: hash-consing, binders, shifting,
 * collection. */
#include "core/core.h"

#include <string.h>

static const Type *f32(int64_t a, int64_t b) {
  int64_t dims[2] = {a, b};
  return type_tensor(DT_F32, 2, dims);
}

static const Term *op2(Op op, const Term *a, const Term *b) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *args[2] = {a, b};
  const Term *t = term_op(op, 2, args, attrs_empty(), NULL, err);
  g_assert_nonnull(t);
  return t;
}

/* Building the same term twice gives the same pointer. */
static void test_hash_consing(void) {
  const Term *x = term_arg(0, f32(16, 256));
  const Term *w = term_arg(1, f32(256, 256));
  const Term *a = op2(OP_MATMUL, op2(OP_MATMUL, x, w), w);
  size_t before = term_store_size();
  const Term *b = op2(OP_MATMUL, op2(OP_MATMUL, x, w), w);
  g_assert_true(a == b);
  g_assert_cmpuint(term_store_size(), ==, before); /* nothing new stored */
  g_assert_true(a->args[0] == b->args[0]);
  /* a different operand order is a different term */
  const Term *y = term_arg(1, f32(16, 256));
  g_assert_true(op2(OP_ADD, x, y) != op2(OP_ADD, y, x));
  /* types are interned: equal types are one pointer */
  g_assert_true(f32(3, 4) == f32(3, 4));
  g_assert_true(f32(3, 4) != f32(4, 3));
  g_assert_true(a->type == f32(16, 256));
}

/* Attributes take part in identity; equal dictionaries are one. */
static void test_attrs_identity(void) {
  const Term *x = term_arg(0, f32(4, 6));
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *sums[3];
  for (int i = 0; i < 3; i++) {
    const char **keys = g_new(const char *, 1);
    keys[0] = g_intern_string("dims");
    AttrValue *vals = g_new0(AttrValue, 1);
    vals[0].kind = AV_LIST;
    vals[0].count = 1;
    vals[0].items = g_new0(AttrValue, 1);
    vals[0].items[0].kind = AV_INT;
    vals[0].items[0].i = i < 2 ? 1 : 0;
    const Term *args[1] = {x};
    sums[i] =
        term_op(OP_REDUCE_SUM, 1, args, attrs_intern(1, keys, vals), NULL, err);
    g_assert_nonnull(sums[i]);
  }
  g_assert_true(sums[0] == sums[1]);
  g_assert_true(sums[0] != sums[2]);
  g_assert_cmpint(sums[0]->type->dims[0], ==, 4);
  g_assert_cmpint(sums[2]->type->dims[0], ==, 6);
}

/* tile 0 (\r:range<16,8> -> slice 0 x[r]): binders are de Bruijn indices,
 * so two tiles that differ only in the binder's name are one term. */
static void test_binders(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *x = term_arg(0, f32(16, 4));
  const Type *range = type_range(16, 8);
  const Term *r = term_bvar(0, range);
  const Term *s = term_slice(0, x, r, err);
  g_assert_nonnull(s);
  g_assert_cmpint(s->type->dims[0], ==, 8);
  g_assert_cmpuint(s->loose, ==, 1); /* uses index 0 */
  const Term *t1 = term_tile(0, range, NULL, s, 0, err);
  const Term *t2 = term_tile(0, range, NULL, term_slice(0, x, r, err), 0, err);
  g_assert_true(t1 == t2);
  g_assert_true(term_is_closed(t1));
  g_assert_cmpint(t1->type->dims[0], ==, 16);
  /* the axis is part of the term */
  const Term *t3 = term_tile(0, range, g_intern_string("batch"), s, 0, err);
  g_assert_true(t3 != t1);
  /* a tile whose body has the wrong width is refused with the reason */
  g_assert_null(term_tile(0, range, NULL, x, 0, err));
  g_assert_nonnull(strstr(diag_text(err), "yields size 16"));
}

/* Binders are levels: a value used inside a nested region is the same
 * term as outside it, and a region is built at its home level. */
static void test_levels(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *x = term_arg(0, f32(8, 8));
  const Type *range = type_range(8, 4);
  /* xs uses level 0: computed in the region at depth 1 */
  const Term *xs = term_slice(0, x, term_bvar(0, range), err);
  g_assert_cmpuint(xs->loose, ==, 1);
  g_assert_cmpint(term_home(xs), ==, 1);
  /* a tile nested in level 0's region uses xs as it is (no shifted copy):
   * its binder is level 1, its body uses levels 0 and 1 */
  const Term *inner = op2(OP_ADD, term_slice(1, xs, term_bvar(1, range), err),
                          term_slice(1, xs, term_bvar(1, range), err));
  const Term *tile = term_tile(1, range, NULL, inner, 1, err);
  g_assert_nonnull(tile);
  g_assert_cmpint(tile->binder, ==, 1);
  g_assert_cmpuint(tile->loose, ==, 1); /* level 0 is used from outside */
  g_assert_true(tile->args[0]->args[0]->args[0] == xs);
  /* a body given with its binder at a level higher than its home (here
   * 5, as a parser sees it five regions deep) moves to the home: level 1 */
  const Term *deep = op2(OP_ADD, term_slice(1, xs, term_bvar(5, range), err),
                         term_slice(1, xs, term_bvar(5, range), err));
  g_assert_true(term_tile(1, range, NULL, deep, 5, err) == tile);
  /* a closed body's region sits at the top: level 0 */
  const Term *top = term_tile(
      1, range, NULL, term_slice(1, x, term_bvar(3, range), err), 3, err);
  g_assert_cmpint(top->binder, ==, 0);
  g_assert_true(term_is_closed(top));
  /* renaming level 0 to 2 moves the nested tile to level 3 */
  const Term *moved = term_rename_level(tile, 0, 2, err);
  g_assert_nonnull(moved);
  g_assert_cmpint(moved->binder, ==, 3);
  g_assert_cmpuint(moved->loose, ==, 4);
  g_assert_true(term_rename_level(moved, 2, 0, err) == tile);
  /* terms that do not use the renamed level are returned as they are */
  g_assert_true(term_rename_level(x, 0, 3, err) == x);
  g_assert_true(term_rename_level(tile, 1, 4, err) == tile); /* 1 is bound */
  /* the nesting limit counts levels, and says so */
  const Term *far = term_slice(0, x, term_bvar(PARTIR_MAX_REGIONS, range), err);
  const Term *farther =
      term_slice(1, far, term_bvar(PARTIR_MAX_REGIONS + 1, range), err);
  g_assert_nonnull(farther);
  g_assert_null(
      term_tile(1, range, NULL, farther, PARTIR_MAX_REGIONS + 1, err));
  g_assert_nonnull(strstr(diag_text(err), "nest deeper than"));
}

/* A range value picks one of its range's parts: a slice takes that part
 * of a dimension of any size the parts divide (a reshape carries a split
 * so), and renaming a binder into one of another range with as many
 * parts retypes its variables (fusion across a reshape). */
static void test_slice_parts(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *x = term_arg(0, f32(16, 128));
  const Type *heads = type_range(4, 2), *cols = type_range(128, 64);
  /* 2 parts of 4 heads cut 128 columns in 2 parts of 64 */
  const Term *s = term_slice(1, x, term_bvar(0, heads), err);
  g_assert_nonnull(s);
  g_assert_cmpint(s->type->dims[1], ==, 64);
  /* 4 parts do not divide 6 */
  g_assert_null(term_slice(1, term_arg(1, f32(16, 6)),
                           term_bvar(0, type_range(4, 1)), err));
  g_assert_nonnull(strstr(diag_text(err), "has 4 parts, which do not divide "
                                          "dimension 1 of size 6"));
  /* level 0 over columns renamed to level 1 over heads: the same slice as
   * one built by heads at level 1 */
  const Term *by_cols = op2(OP_ADD, term_slice(1, x, term_bvar(0, cols), err),
                            term_slice(1, x, term_bvar(0, cols), err));
  Relevel *rl = relevel_new();
  relevel_map_range(rl, 0, 1, heads);
  const Term *by_heads = relevel_apply(rl, by_cols, err);
  relevel_free(rl);
  const Term *want = op2(OP_ADD, term_slice(1, x, term_bvar(1, heads), err),
                         term_slice(1, x, term_bvar(1, heads), err));
  g_assert_true(by_heads == want);
  /* ... and the plain renaming cache is not fooled by the retyped one */
  g_assert_true(term_rename_level(by_cols, 0, 1, err)->args[0]->args[1] ==
                term_bvar(1, cols));
}

/* body_k of a nest D deep: slices by levels k and k-1, and two regions
 * (a tile along each dimension) at level k+1 over the same body_(k+1):
 * every body is reached along 2^k paths. */
static const Term *shared_nest(const Term *x, int k, int depth) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Type *whole = type_range(8, 8);
  const Term *here = term_slice(0, x, term_bvar(k, whole), err);
  if (k > 0)
    here = op2(OP_ADD, here, term_slice(1, x, term_bvar(k - 1, whole), err));
  if (k == depth)
    return here;
  const Term *inner = shared_nest(x, k + 1, depth);
  const Term *a = term_tile(0, whole, NULL, inner, k + 1, err);
  const Term *b = term_tile(1, whole, NULL, inner, k + 1, err);
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  g_assert_cmpint(a->binder, ==, k + 1);
  return op2(OP_ADD, here, op2(OP_ADD, a, b));
}

/* Renaming a level moves every region of such a nest: the renaming costs
 * what it builds (a few terms per level), never a walk of every path
 * (2^30 here), and the store's ceiling stops one that would build too
 * much, with the reason. */
static void test_relevel_shared_nest(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const int depth = 30;
  const Term *x = term_arg(0, f32(8, 8));
  const Term *nest = shared_nest(x, 0, depth);
  g_assert_cmpuint(nest->loose, ==, 1); /* level 0 is free */
  size_t before = term_store_size();
  const Term *moved = term_rename_level(nest, 0, 3, err);
  g_assert_nonnull(moved);
  /* per level: two slices, two adds, two tiles, one add, bvars */
  g_assert_cmpuint(term_store_size() - before, <=, 10 * (depth + 1));
  g_assert_cmpuint(moved->loose, ==, 8);
  g_assert_cmpint(moved->args[1]->args[0]->binder, ==, 4);
  g_assert_true(term_rename_level(moved, 3, 0, err) == nest);
  /* past the ceiling, a renaming fails and says why */
  size_t ceiling = term_store_ceiling(term_store_size() + 5);
  g_assert_cmpuint(ceiling, ==, 0);
  g_assert_null(term_rename_level(nest, 0, 4, err));
  g_assert_nonnull(strstr(diag_text(err), "would build more than"));
  term_store_ceiling(0);
  g_assert_nonnull(term_rename_level(nest, 0, 4, err));
}

/* term_store_collect frees what no root reaches, keeps what one does,
 * and drops the name entries of what it frees. */
static void test_collect(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *x = term_arg(0, f32(6, 10)); /* shapes no other test uses */
  const Term *y = term_arg(1, f32(10, 6));
  const Term *root = op2(OP_MATMUL, x, y);
  const Term *garbage = op2(OP_MATMUL, y, x);
  /* nested tiles: the inner body slices x by the outer binder (level 0),
   * a term inside the outer region that names know */
  const Type *r6 = type_range(6, 3), *r10 = type_range(10, 5);
  const Term *xs = term_slice(0, x, term_bvar(0, r6), err);
  const Term *inner = term_tile(
      1, r10, NULL, term_slice(1, xs, term_bvar(1, r10), err), 1, err);
  const Term *nest = term_tile(0, r6, NULL, inner, 0, err);
  g_assert_nonnull(nest);
  const Term *placed = xs;
  g_autoptr(GHashTable) names = g_hash_table_new(NULL, NULL);
  g_hash_table_insert(names, (gpointer)root, "r");
  g_hash_table_insert(names, (gpointer)garbage, "g");
  g_hash_table_insert(names, (gpointer)placed, "xs");
  const Term *roots[2] = {root, nest};
  GHashTable *tables[1] = {names};
  size_t freed = term_store_collect(roots, 2, tables, 1);
  g_assert_cmpuint(freed, >=, 1);
  g_assert_true(g_hash_table_contains(names, root));
  g_assert_true(g_hash_table_contains(names, placed));
  g_assert_false(g_hash_table_contains(names, garbage));
  /* what stayed is still the one term of its content */
  size_t live = term_store_size();
  g_assert_true(
      op2(OP_MATMUL, term_arg(0, f32(6, 10)), term_arg(1, f32(10, 6))) == root);
  g_assert_true(term_slice(0, x, term_bvar(0, r6), err) == placed);
  g_assert_cmpuint(term_store_size(), ==, live);
  /* what went is made anew */
  op2(OP_MATMUL, y, x);
  g_assert_cmpuint(term_store_size(), ==, live + 1);
  /* marks are cleared: a second collection with every term a root of
   * the first frees only the new garbage */
  g_assert_cmpuint(term_store_collect(roots, 2, tables, 1), ==, 1);
  g_assert_cmpuint(term_store_collect(roots, 2, tables, 1), ==, 0);
}

/* "did you mean": the nearest name within two edits (Levenshtein). */
static void test_nearest(void) {
  const char *names[] = {"propagate",     "fuse",   "simplify", "matmul-sum",
                         "matmul-tile-0", "résumé", NULL};
  g_assert_cmpstr(diag_nearest("propagte", names), ==, "propagate"); /* del */
  g_assert_cmpstr(diag_nearest("fusee", names), ==, "fuse");         /* ins */
  g_assert_cmpstr(diag_nearest("matmul-sun", names), ==, "matmul-sum");
  g_assert_cmpstr(diag_nearest("smiplify", names), ==, "simplify"); /* 2 */
  g_assert_cmpstr(diag_nearest("resume", names), ==, "résumé");     /* chars */
  g_assert_null(diag_nearest("simpfly", names)); /* 3 edits */
  g_assert_null(diag_nearest("fuse", names));    /* itself: no hint */
  g_assert_null(diag_nearest("f", names));       /* too short to guess */
  g_assert_null(diag_nearest("", names));
  /* the first of two equally near names */
  const char *two[] = {"ab", "ac", NULL};
  g_assert_cmpstr(diag_nearest("aa", two), ==, "ab");
  g_autofree char *hint = diag_did_you_mean("fusse", names);
  g_assert_cmpstr(hint, ==, " (did you mean 'fuse'?)");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/diag/nearest", test_nearest);
  g_test_add_func("/store/hash-consing", test_hash_consing);
  g_test_add_func("/store/attrs", test_attrs_identity);
  g_test_add_func("/store/binders", test_binders);
  g_test_add_func("/store/levels", test_levels);
  g_test_add_func("/store/slice-parts", test_slice_parts);
  g_test_add_func("/store/relevel-shared-nest", test_relevel_shared_nest);
  g_test_add_func("/store/collect", test_collect);
  return g_test_run();
}

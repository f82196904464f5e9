/* conflict.c — two splits over one mesh axis meeting at an operator.
 *
 * Propagation pulls the tile of an operator's operand out of it: the
 * operator is then tiled (or summed) over the tile's axis along the index
 * of its tiling spec that the operand's dimension carries.  Another
 * operand split over the same axis along a dimension that carries a
 * different index (rows of one, columns of the other) cannot keep its
 * split there: a device has one index along an axis.  That is a conflict.
 * Propagation can follow one split only, and the other operand is then
 * redistributed where the operator reads it: re-split by an all_to_all
 * into the kept split's dimension, or, when it has no such dimension (the
 * weight of a matmul split by rows), gathered whole by an all_gather.
 *
 * Shardy and GSPMD resolve such conflicts by a heuristic and say nothing.
 * partir names them instead (propagate fails with both sides, each with
 * the value and dimension its split came from: Shardy's "sharding
 * origins"), and 'propagate --resolve' (resolve.c) keeps the side whose
 * program the cost model prices fastest.
 *
 * A Conflict is keyed by the operator term where the splits meet, with
 * its operands as the pass met them: a propagation of the same program
 * that makes the same decisions before meets the same term, so a
 * decision (Conflicts.prefer) is found again.
 *
 * What is not a conflict: two splits over different axes (propagate.c
 * notes the axis it drops), a tile kept whole by design (its body
 * computes, and computing it once per chunk of the other side would
 * repeat work: the lowering gathers it), and a redistribution the program
 * has already (conflicts_written): PartIR's incremental rule, the split
 * made first stays, and a later split of a value that a region over the
 * axis reads in chunks is the user's explicit redistribution.
 */
#include "rewrite/rewrite.h"

#include <string.h>

/* Where an operand's dimension sits in its operator's tiling spec: the
 * result dimension it carries, or the reduction it runs over. */
typedef enum { AT_NONE, AT_OUT, AT_RED } AtKind;
typedef struct SpecAt {
  AtKind kind;
  int index; /* result dimension or reduction index */
} SpecAt;

static SpecAt spec_at(const TileSpec *spec, int operand, int dim) {
  for (int d = 0; d < spec->nout; d++)
    if (spec->out[d][operand] == dim)
      return (SpecAt){AT_OUT, d};
  for (int k = 0; k < spec->nred; k++)
    if (spec->red[k][operand] == dim)
      return (SpecAt){AT_RED, k};
  return (SpecAt){AT_NONE, -1};
}

/* The dimension of 'operand' that carries 'at' (-1: it has none). */
static int dim_at(const TileSpec *spec, SpecAt at, int operand) {
  if (at.kind == AT_OUT)
    return spec->out[at.index][operand];
  if (at.kind == AT_RED)
    return spec->red[at.index][operand];
  return -1;
}

/* ------------------------------------------------------------- origins */

/* Values a search for an origin looks at, at most (a region's body is
 * searched in operand order; the chunk it takes is near its top). */
#define ORIGIN_BUDGET 4096
/* Tiles of chunks of tiles followed back, at most. */
#define ORIGIN_DEPTH 16

/* "%x" for an argument or a value the user named; NULL otherwise. */
static char *value_name(const Conflicts *cx, GHashTable *names, const Term *v) {
  if (v->kind == TM_ARG && v->index < cx->nargs)
    return g_strdup_printf("%%%s", cx->arg_names[v->index]);
  const char *name = names ? g_hash_table_lookup(names, v) : NULL;
  return name ? g_strdup_printf("%%%s", name) : NULL;
}

static gboolean value_name_known(GHashTable *names, const Term *v) {
  return names && g_hash_table_contains(names, v);
}

/* The first chunk that region 'r' takes by its own binder ('slice d
 * X[r]'), in operand order; NULL when none is near enough. */
static const Term *first_chunk(const Term *r) {
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_ptr_array_add(todo, (gpointer)r->args[0]);
  for (int budget = ORIGIN_BUDGET; todo->len > 0 && budget > 0; budget--) {
    const Term *u = g_ptr_array_steal_index(todo, todo->len - 1);
    if (!term_uses(u, r->binder) || !g_hash_table_add(seen, (gpointer)u))
      continue;
    if (u->kind == TM_SLICE && u->args[1]->kind == TM_BVAR &&
        u->args[1]->index == r->binder)
      return u;
    for (int i = u->nargs - 1; i >= 0; i--) /* operand 0 on top */
      g_ptr_array_add(todo, (gpointer)u->args[i]);
  }
  return NULL;
}

/* Where the split of 'v' along 'dim' comes from: the argument or named
 * value that a tile's chunks are taken of, followed back through tiles
 * of chunks (a tile propagation pulled out of an operator takes its
 * chunks of the operand it came from).  Sets '*from' to that value's
 * name ("%x", or "'exp'" for an unnamed result) and returns its
 * dimension. */
static int origin_of(const Conflicts *cx, GHashTable *names, const Term *v,
                     int dim, char **from) {
  for (int depth = 0;; depth++) {
    const Term *chunk =
        v->kind == TM_TILE && v->index == dim && depth < ORIGIN_DEPTH
            ? first_chunk(v)
            : NULL;
    if (chunk) {
      v = chunk->args[0];
      dim = chunk->index;
      continue;
    }
    if (v->kind == TM_SLICE && v->index != dim) { /* a chunk of a chunk */
      v = v->args[0];
      continue;
    }
    /* a tile along another dimension, or a sum: its body has 'dim' too
     * (unless the user named the value) */
    gboolean through =
        (v->kind == TM_TILE && v->index != dim) || v->kind == TM_SUM;
    if (through && depth < ORIGIN_DEPTH && !value_name_known(names, v)) {
      v = v->args[0];
      continue;
    }
    *from = value_name(cx, names, v);
    if (!*from)
      *from = v->kind == TM_OP ? g_strdup_printf("'%s'", op_name(v->op))
                               : g_strdup("a value");
    return dim;
  }
}

/* ----------------------------------------------------------- conflicts */

static void conflict_free(Conflict *c) {
  for (int i = 0; i < c->nsides; i++) {
    g_free(c->sides[i].origin);
    g_free(c->sides[i].value);
  }
  g_free(c->name);
  g_free(c);
}

void conflicts_init(Conflicts *cx, const State *s, GHashTable *prefer) {
  *cx = (Conflicts){
      .prefer = prefer,
      .found = g_ptr_array_new_with_free_func((GDestroyNotify)conflict_free),
      .seen = g_hash_table_new(NULL, NULL),
      .arg_names = s->func.arg_names,
      .nargs = s->func.nargs,
  };
}

void conflicts_clear(Conflicts *cx) {
  g_clear_pointer(&cx->found, g_ptr_array_unref);
  g_clear_pointer(&cx->seen, g_hash_table_unref);
}

GPtrArray *conflicts_open(const Conflicts *cx) {
  GPtrArray *open = g_ptr_array_new();
  for (guint i = 0; i < cx->found->len; i++) {
    Conflict *c = g_ptr_array_index(cx->found, i);
    if (!cx->prefer || !g_hash_table_contains(cx->prefer, c->at))
      g_ptr_array_add(open, c);
  }
  return open;
}

/* Fills side 's' for operand 'i' of 't'. */
static void side_init(ConflictSide *s, const Conflicts *cx, GHashTable *names,
                      const Term *t, int i) {
  const Term *tile = t->args[i];
  s->operand = i;
  s->dim = tile->index;
  char *from = NULL;
  int dim = origin_of(cx, names, tile, tile->index, &from);
  s->origin = g_strdup_printf("%s dimension %d", from, dim);
  /* what moves is the operand's value: its own name, or its origin's */
  s->value = value_name(cx, names, tile);
  if (!s->value)
    s->value = from;
  else
    g_free(from);
}

gboolean conflicts_note(Conflicts *cx, const Term *t, const TileSpec *spec,
                        int kept, const char *name, GHashTable *names,
                        gboolean (*gathered)(const Term *tile)) {
  const Term *a = t->args[kept];
  if (a->kind != TM_TILE || !a->axis)
    return FALSE;
  SpecAt at = spec_at(spec, kept, a->index);
  gboolean member[SPEC_MAX_OPERANDS] = {FALSE};
  int others = 0;
  for (int j = 0; j < t->nargs && j < SPEC_MAX_OPERANDS; j++) {
    const Term *b = t->args[j];
    if (j == kept || b->kind != TM_TILE || b->axis != a->axis)
      continue;
    SpecAt bt = spec_at(spec, j, b->index);
    if (bt.kind == AT_NONE || (bt.kind == at.kind && bt.index == at.index))
      continue; /* a split the operator cannot follow, or the same one */
    if (dim_at(spec, at, j) < 0 && gathered(b))
      continue; /* gathered whole by design */
    member[j] = TRUE;
    others++;
  }
  if (others == 0)
    return FALSE;
  if (g_hash_table_contains(cx->seen, t))
    return TRUE; /* met again in another context */
  member[kept] = TRUE;
  Conflict *c = g_new0(Conflict, 1);
  c->at = t;
  c->axis = a->axis;
  c->spec = *spec;
  c->name = name ? g_strdup_printf("%%%s (%s)", name, op_name(t->op))
                 : g_strdup_printf("'%s'", op_name(t->op));
  for (int i = 0; i < t->nargs && i < SPEC_MAX_OPERANDS; i++) {
    if (!member[i])
      continue;
    if (i == kept)
      c->kept = c->nsides;
    side_init(&c->sides[c->nsides++], cx, names, t, i);
  }
  g_ptr_array_add(cx->found, c);
  g_hash_table_insert(cx->seen, (gpointer)t, c);
  return TRUE;
}

char *conflict_text(const Conflict *c) {
  GString *s = g_string_new(NULL);
  g_string_printf(s, "axis \"%s\" at %s: ", c->axis, c->name);
  for (int i = 0; i < c->nsides; i++) {
    const ConflictSide *side = &c->sides[i];
    g_string_append_printf(s, "%soperand %d %salong dimension %d (from %s)",
                           i ? ", " : "", side->operand + 1, i ? "" : "split ",
                           side->dim, side->origin);
  }
  return g_string_free(s, FALSE);
}

char *conflict_moves(const Conflict *c, int kept) {
  const ConflictSide *k = &c->sides[kept];
  SpecAt at = spec_at(&c->spec, k->operand, k->dim);
  GString *s = g_string_new(NULL);
  for (int i = 0; i < c->nsides; i++) {
    if (i == kept)
      continue;
    const ConflictSide *q = &c->sides[i];
    int to = dim_at(&c->spec, at, q->operand);
    if (s->len)
      g_string_append(s, " and ");
    if (to >= 0)
      g_string_append_printf(s, "all_to_all of %s from dimension %d to %d",
                             q->value, q->dim, to);
    else
      g_string_append_printf(s, "all_gather of %s along dimension %d", q->value,
                             q->dim);
  }
  return g_string_free(s, FALSE);
}

/* Conflicts an error names, at most (then "and N more"). */
#define CONFLICTS_SHOWN 3

void conflicts_error(GPtrArray *open, Diag *why) {
  g_assert(open->len > 0);
  GString *s = g_string_new("conflicting splits: ");
  for (guint i = 0; i < open->len; i++) {
    if (i == CONFLICTS_SHOWN) {
      g_string_append_printf(s, "; and %u more", open->len - i);
      break;
    }
    g_autofree char *text = conflict_text(g_ptr_array_index(open, i));
    g_string_append_printf(s, "%s%s", i ? "; " : "", text);
  }
  g_string_append(s, " (one axis splits one dimension of a value: "
                     "'propagate --resolve' keeps the split the cost model "
                     "prices fastest and redistributes the other)");
  diag_reason(why, "%s", s->str);
  g_string_free(s, TRUE);
}

/* ------------------------------------------- redistributions written */

static void mark_written(GHashTable *written, const Term *tile, int dim) {
  guint mask = GPOINTER_TO_UINT(g_hash_table_lookup(written, tile));
  g_hash_table_insert(written, (gpointer)tile,
                      GUINT_TO_POINTER(mask | 1u << (dim + 1)));
}

GHashTable *conflicts_written(const Term *body) {
  GHashTable *written = g_hash_table_new(NULL, NULL);
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)body);
  while (todo->len > 0) {
    const Term *u = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)u))
      continue;
    if (u->kind == TM_SLICE && u->args[0]->kind == TM_TILE &&
        u->args[0]->axis && u->args[0]->index != u->index &&
        u->args[1]->kind == TM_BVAR)
      mark_written(written, u->args[0], u->index);
    for (int i = 0; u->kind == TM_OP && i < u->nargs; i++)
      if (u->args[i]->kind == TM_TILE && u->args[i]->axis &&
          term_home(u) > term_home(u->args[i]))
        mark_written(written, u->args[i], -1);
    for (int i = 0; i < u->nargs; i++)
      g_ptr_array_add(todo, (gpointer)u->args[i]);
  }
  return written;
}

gboolean conflicts_written_has(GHashTable *written, const Term *tile, int dim) {
  guint mask = GPOINTER_TO_UINT(g_hash_table_lookup(written, tile));
  return (mask >> (dim + 1)) & 1;
}

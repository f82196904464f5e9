/* memo.c — what lowering and redistribution fusion remember between calls.
 *
 * The agent protocol costs every state it makes, and a state is its
 * parent with one action applied: the values upstream of the action are
 * the same terms, and so are most of their lowerings.  Lowering a closed
 * value, or a value inside regions under the same binders (lower.c:
 * a data-parallel state has most of its values in one region), taking a local
 * value to the [spmd] rules' fixed point (rw_fixpoint_memo), narrowing it
 * (narrow.c), regathering chunks and receiving arguments sharded
 * (redistribute.c: the latter for one map of shards to arguments per round)
 * each give a term a result that depends on that term alone, for one rule set
 * and mesh; hash-consing makes equal terms one pointer, so a table keyed by
 * pointer answers for every program that holds the term.  Kept across calls,
 * those tables make a lowering cost what is new in the program.
 *
 * The tables hold terms, and a collection (collect.c) frees the terms no
 * state reaches, keys and results alike: a freed key's address can come
 * back as another term.  So every use starts with spmd_memo_check, which
 * empties the tables when the store has been collected since they were
 * last emptied; between collections they hold only terms of the store,
 * so they grow no larger than it.  Keeping the entries of live terms
 * across a collection instead (weak tables, marked from what the states
 * reach) was measured on the 12-layer walk of tests/bench/bench-walk.py:
 * a collection then marks and keeps every live state's lowering, and
 * cost twice the instructions it had (0.77 G against 0.39 G in 300
 * steps), more than the relowerings it saved (0.20 G).
 */
#include "spmd/spmd.h"

#include <string.h>

SpmdMemo *spmd_memo_new(const RuleSet *rs, const Mesh *mesh) {
  SpmdMemo *m = g_new0(SpmdMemo, 1);
  m->rs = rs;
  m->mesh = *mesh;
  m->collected = collect_freed();
  m->lower = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  m->regions = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                                     (GDestroyNotify)g_bytes_unref,
                                     (GDestroyNotify)g_hash_table_unref);
  m->fixpoint = g_hash_table_new(NULL, NULL);
  m->narrow = g_hash_table_new(NULL, NULL);
  m->regather = g_hash_table_new(NULL, NULL);
  for (int i = 0; i < SPMD_SWAP_ROUNDS; i++) {
    m->swap_map[i] = g_hash_table_new(NULL, NULL);
    m->swap[i] = g_hash_table_new(NULL, NULL);
  }
  return m;
}

void spmd_memo_free(SpmdMemo *m) {
  if (!m)
    return;
  g_hash_table_unref(m->lower);
  g_hash_table_unref(m->regions);
  g_hash_table_unref(m->fixpoint);
  g_hash_table_unref(m->narrow);
  g_hash_table_unref(m->regather);
  for (int i = 0; i < SPMD_SWAP_ROUNDS; i++) {
    g_hash_table_unref(m->swap_map[i]);
    g_hash_table_unref(m->swap[i]);
  }
  g_free(m);
}

gboolean spmd_memo_fits(const SpmdMemo *m, const RuleSet *rs,
                        const Mesh *mesh) {
  if (m->rs != rs || m->mesh.naxes != mesh->naxes)
    return FALSE;
  for (int k = 0; k < mesh->naxes; k++)
    if (strcmp(m->mesh.names[k], mesh->names[k]) != 0 ||
        m->mesh.sizes[k] != mesh->sizes[k])
      return FALSE;
  return TRUE;
}

void spmd_memo_check(SpmdMemo *m) {
  if (m->collected == collect_freed())
    return;
  m->collected = collect_freed();
  g_hash_table_remove_all(m->lower);
  g_hash_table_remove_all(m->regions);
  g_hash_table_remove_all(m->fixpoint);
  g_hash_table_remove_all(m->narrow);
  g_hash_table_remove_all(m->regather);
  for (int i = 0; i < SPMD_SWAP_ROUNDS; i++) {
    g_hash_table_remove_all(m->swap_map[i]);
    g_hash_table_remove_all(m->swap[i]);
  }
}

/* check.h — the checking layer: rules and lowerings against the
 * interpreter.
 *
 * Above spmd (docs/architecture.md): every check here runs both sides of
 * something — a rule, a random rewrite sequence, a lowering — through
 * the reference interpreter (or simulated devices) on the same random
 * data and compares.  Nothing below calls it; the pipeline runs the
 * load-time rule checks, and 'partir check-rules', 'walk' and 'lower
 * --simulate' run the others.
 *
 *   rulecheck.c   check-rules, random walks, load-time type checks
 *   spmdrules.c   [spmd] rules on simulated devices
 *   lowercheck.c  a lowering against the interpreter
 */
#ifndef PARTIR_CHECK_H
#define PARTIR_CHECK_H

#include "spmd/spmd.h"

/* ------------------------------------------------------------ rulecheck.c */

/* Instantiates every rule on random programs and compares both sides
 * with the interpreter; one line per rule into 'out'. */
gboolean check_rules(const RuleSet *rs, guint32 seed, int tries, GString *out);
/* Finds instances of the written rules on random programs and returns in
 * 'errors' a diagnostic for each rule whose right side has another type
 * than its left side; FALSE if there is any. */
gboolean check_rule_types(const RuleSet *rs, Diag *errors);
/* 'walks' seeded sequences of 'steps' random legal rewrites from 'm';
 * every state must type-check (by re-parsing its print) and compute what
 * 'm' computes.  Failures go to 'out'. */
gboolean check_walks(const RuleSet *rs, Module *m, guint32 seed, int walks,
                     int steps, GString *out);

/* A program of one application of 'op' to new arguments, of random
 * shapes and attributes (the generator check-rules instantiates rules
 * on; seeded), or NULL where 'op' has none (constants, iotas,
 * collectives). */
Module *check_random_op(Op op, guint32 seed);

/* ------------------------------------------------------------- gradcheck.c */

/* Each vjp rule against central finite differences of the interpreter in
 * f64, on 'tries' random applications of its operator; one line per rule
 * into 'out'. */
gboolean check_vjps(const RuleSet *rs, guint32 seed, int tries, GString *out);
/* The written vjp rules applied to random instances of their operators:
 * a diagnostic at the rule for each whose cotangent does not have its
 * operand's type; FALSE if there is any. */
gboolean check_vjp_types(const RuleSet *rs, Diag *errors);

/* ------------------------------------------------------------ spmdrules.c */

/* Checks [spmd] rule 'r' on up to 'tries' random instances run on
 * simulated devices; the number checked, or -1 after writing the failing
 * instance to 'out'. */
int check_spmd_rule(const Rule *r, GRand *rng, int tries, GString *out);
/* TRUE, with "T becomes U" in 'msg', when an instance of [spmd] rule 'r'
 * has a right side of another type than its left. */
gboolean check_spmd_rule_type(const Rule *r, GRand *rng, Diag *msg);

/* ----------------------------------------------------------- lowercheck.c */

/* Runs 'g' in the interpreter and its lowering 'spmd' on simulated
 * devices on the same seeded inputs; a line saying they agree goes to
 * 'out'.  FALSE with the reason in 'diag' when they disagree or the
 * programs cannot be run, or with 'error' set when a run fails
 * (interrupted). */
gboolean check_lowering(const Func *g, const Func *spmd, gint64 seed,
                        GString *out, Diag *diag, GError **error);

#endif

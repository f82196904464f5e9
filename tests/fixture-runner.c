/* fixture-runner — runs text fixtures and prints TAP.
 *
 *   fixture-runner FILE.test...      stanza files (below)
 *   fixture-runner --roundtrip FILE.pir...
 *   fixture-runner --npy-close A.npy B.npy RTOL ATOL
 *   fixture-runner --npy-near GOT.npy WANT.npy REL
 *                  every |got - want| <= REL * max|want| (NaN where want
 *                  is NaN, infinities equal; integers exactly equal);
 *                  prints the largest error in units of max|want|
 *
 * Stanzas, many per file ('#' lines between stanzas are comments):
 *
 *   %%TEST name            a program, then either
 *   %%EXPECT               its canonical print, or
 *   %%FAIL                 the exact diagnostics (source named input.pir)
 *   %%END
 *
 *   %%RUN name             a program, run by the interpreter (arguments, if
 *   %%RESULT I TYPE        any, get seeded random values), then for each
 *   v v v ...              result I its type and row-major values
 *   %%END                  (nan, inf, -inf allowed; i1 as 0/1)
 *
 *   %%REWRITE name         a program, then the engine commands
 *   %%DO cmd; cmd          (one line), then
 *   %%EXPECT               the canonical print of the result, or
 *   %%FAIL                 the exact reason the script fails
 *   %%REPORT               (optional) what propagate reported
 *   %%CHOICES              (optional) what propagate --resolve chose (cpu2)
 *   %%END                  The result must compute what the program does.
 *
 *   %%RULES name           a rule file (loaded after the shipped ones,
 *   %%FAIL                 named input.rules), then its exact diagnostics
 *   %%END                  (or %%EXPECT: the names of its rules, one a line)
 *
 * Every program that parses is also checked to round-trip: printing it,
 * parsing the print and printing again gives the same text and the very
 * same term (hash-consing makes that a pointer comparison).
 */
#include "pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int test_no;
static int failures;

static void tap(gboolean ok, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void tap(gboolean ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, msg);
  if (!ok)
    failures++;
}

/* Prints 'text' as TAP diagnostics. */
static void diag_lines(const char *label, const char *text) {
  printf("# %s:\n", label);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l; l++)
    printf("#   |%s\n", *l);
}

/* Checks print(parse(print(m))) == print(m) and the terms are the same. */
static gboolean check_roundtrip(const char *name, Module *m, Diag *why) {
  g_autoptr(GString) once = g_string_new(NULL);
  print_module(once, m);
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) again =
      parse_text(name, once->str, strlen(once->str), errors);
  if (!again) {
    diag_reason(why, "the print does not parse:\n%s\nprint:\n%s",
                diag_text(errors), once->str);
    return FALSE;
  }
  g_autoptr(GString) twice = g_string_new(NULL);
  print_module(twice, again);
  if (strcmp(once->str, twice->str) != 0) {
    diag_reason(why, "print is not stable:\n%s\nthen:\n%s", once->str,
                twice->str);
    return FALSE;
  }
  for (guint i = 0; i < m->funcs->len; i++) {
    Func *a = g_ptr_array_index(m->funcs, i),
         *b = g_ptr_array_index(again->funcs, i);
    if (a->body != b->body) {
      diag_reason(why, "function @%s reparses to a different term", a->name);
      return FALSE;
    }
  }
  return TRUE;
}

typedef struct Stanza {
  char *kind; /* TEST or RUN */
  char *name;
  GString *program;
  GString *expect; /* EXPECT text or FAIL text */
  gboolean fail;
  GPtrArray *results; /* RUN: "I TYPE\nvalues" strings */
  char *script;       /* REWRITE: the %%DO line */
  GString *report;    /* REWRITE: %%REPORT text, or NULL */
  GString *choices;   /* REWRITE: %%CHOICES text, or NULL */
  int line;
} Stanza;

static void stanza_clear(Stanza *s) {
  g_free(s->kind);
  g_free(s->name);
  if (s->program)
    g_string_free(s->program, TRUE);
  if (s->expect)
    g_string_free(s->expect, TRUE);
  if (s->results)
    g_ptr_array_unref(s->results);
  g_free(s->script);
  if (s->report)
    g_string_free(s->report, TRUE);
  if (s->choices)
    g_string_free(s->choices, TRUE);
  memset(s, 0, sizeof *s);
}

static void run_test_stanza(const Stanza *s) {
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m =
      parse_text("input.pir", s->program->str, strlen(s->program->str), errors);
  if (s->fail) {
    gboolean ok = !m && strcmp(diag_text(errors), s->expect->str) == 0;
    tap(ok, "%s: fails with the expected diagnostic", s->name);
    if (!ok) {
      diag_lines("expected", s->expect->str);
      diag_lines("got", m ? "(parsed without error)" : diag_text(errors));
    }
    return;
  }
  if (!m) {
    tap(FALSE, "%s: parses", s->name);
    diag_lines("diagnostic", diag_text(errors));
    return;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  print_module(out, m);
  gboolean ok = strcmp(out->str, s->expect->str) == 0;
  tap(ok, "%s: canonical print", s->name);
  if (!ok) {
    diag_lines("expected", s->expect->str);
    diag_lines("got", out->str);
  }
  g_autoptr(Diag) why = diag_new(NULL);
  ok = check_roundtrip("input.pir", m, why);
  tap(ok, "%s: round trip", s->name);
  if (!ok)
    diag_lines("why", diag_text(why));
}

/* Tolerance for comparing a computed value with an expected one. */
static gboolean close_enough(DType dt, double got, double want) {
  if (isnan(want))
    return isnan(got);
  if (isinf(want))
    return got == want;
  double rel = dt == DT_F64 ? 1e-12 : dt == DT_BF16 ? 1.0 / 128 : 2.5e-7;
  return fabs(got - want) <= rel * fabs(want) + rel * 1e-3;
}

static gboolean check_result(const Stanza *s, GPtrArray *results,
                             const char *spec, Diag *why) {
  const char *nl = strchr(spec, '\n');
  g_autofree char *head =
      g_strndup(spec, nl ? (gsize)(nl - spec) : strlen(spec));
  char *type_text = NULL;
  long index = strtol(head, &type_text, 10);
  type_text = g_strstrip(type_text);
  if (index < 0 || (guint)index >= results->len) {
    diag_reason(why, "no result %ld", index);
    return FALSE;
  }
  const Tensor *t = g_ptr_array_index(results, index);
  g_autofree char *ty = type_to_string(t->type);
  if (strcmp(ty, type_text) != 0) {
    diag_reason(why, "result %ld has type %s, expected %s", index, ty,
                type_text);
    return FALSE;
  }
  g_auto(GStrv) words = g_strsplit_set(nl ? nl + 1 : "", " \t\n,[]", -1);
  int64_t n = type_numel(t->type), k = 0;
  for (char **w = words; *w; w++) {
    if (!**w)
      continue;
    if (k >= n) {
      diag_reason(why,
                  "more expected values than the %" G_GINT64_FORMAT " elements",
                  n);
      return FALSE;
    }
    double want = strcmp(*w, "nan") == 0    ? NAN
                  : strcmp(*w, "inf") == 0  ? INFINITY
                  : strcmp(*w, "-inf") == 0 ? -INFINITY
                                            : g_ascii_strtod(*w, NULL);
    double got = tensor_get_double(t, k);
    if (dtype_is_float(t->type->dtype)
            ? !close_enough(t->type->dtype, got, want)
            : got != want) {
      diag_reason(why, "element %" G_GINT64_FORMAT ": got %.17g, expected %s",
                  k, got, *w);
      return FALSE;
    }
    k++;
  }
  if (k != n) {
    diag_reason(why,
                "%" G_GINT64_FORMAT " expected values for %" G_GINT64_FORMAT
                " elements",
                k, n);
    return FALSE;
  }
  return TRUE;
}

static void run_run_stanza(const Stanza *s) {
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m =
      parse_text("input.pir", s->program->str, strlen(s->program->str), errors);
  if (!m) {
    tap(FALSE, "%s: parses", s->name);
    diag_lines("diagnostic", diag_text(errors));
    return;
  }
  g_autoptr(Diag) why = diag_new(NULL);
  gboolean ok = check_roundtrip("input.pir", m, why);
  tap(ok, "%s: round trip", s->name);
  if (!ok)
    diag_lines("why", diag_text(why));
  Func *f = module_entry(m);
  Tensor **inputs = g_new0(Tensor *, (gsize)f->nargs + 1);
  GRand *rng = g_rand_new_with_seed(0);
  for (int i = 0; i < f->nargs; i++) {
    inputs[i] = tensor_new(f->arg_types[i]);
    tensor_fill_random(inputs[i], rng);
  }
  g_rand_free(rng);
  GError *error = NULL;
  g_autoptr(GPtrArray) results =
      interp_check(f, why) ? interp_run(f, inputs, &error) : NULL;
  for (int i = 0; i < f->nargs; i++)
    tensor_unref(inputs[i]);
  g_free(inputs);
  if (!results) {
    tap(FALSE, "%s: runs (%s)", s->name,
        error ? error->message : diag_text(why));
    g_clear_error(&error);
    return;
  }
  for (guint i = 0; i < s->results->len; i++) {
    const char *spec = g_ptr_array_index(s->results, i);
    diag_reset(why);
    ok = check_result(s, results, spec, why);
    tap(ok, "%s: result %c", s->name, spec[0]);
    if (!ok)
      diag_lines("why", diag_text(why));
  }
}

static RuleSet *shipped_rules;

/* Runs 'f' and 'g' on the same seeded inputs; TRUE when the results
 * agree (tensor_results_agree). */
static gboolean same_meaning(const Func *f, const Func *g, Diag *why) {
  if (!interp_check(f, why) || !interp_check(g, why))
    return FALSE;
  GError *error = NULL;
  g_autoptr(GPtrArray) a = interp_run_seeded(f, 7, &error);
  g_autoptr(GPtrArray) b = a ? interp_run_seeded(g, 7, &error) : NULL;
  if (!b) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
    return FALSE;
  }
  return tensor_results_agree(a, b, why);
}

static void run_rewrite_stanza(const Stanza *s) {
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m =
      parse_text("input.pir", s->program->str, strlen(s->program->str), errors);
  if (!m || !shipped_rules) {
    tap(FALSE, "%s: parses and rules load", s->name);
    diag_lines("diagnostic", diag_text(errors));
    return;
  }
  g_autoptr(State) s0 = state_new(m);
  g_autoptr(Diag) why = diag_new(NULL);
  g_autoptr(GString) report = g_string_new(NULL);
  g_autoptr(GString) choices = g_string_new(NULL);
  RewriteContext cx = {.report = report, .choices = choices};
  g_autoptr(State) s1 =
      pipeline_rewrite(shipped_rules, s0, s->script, &cx, why);
  if (s->fail) {
    g_autofree char *got = g_strconcat(diag_text(why), "\n", NULL);
    gboolean ok = !s1 && strcmp(got, s->expect->str) == 0;
    tap(ok, "%s: fails with the expected reason", s->name);
    if (!ok) {
      diag_lines("expected", s->expect->str);
      diag_lines("got", s1 ? "(succeeded)" : diag_text(why));
    }
    return;
  }
  if (!s1) {
    tap(FALSE, "%s: script runs", s->name);
    diag_lines("why", diag_text(why));
    return;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  state_print(out, s1, FALSE);
  gboolean ok = strcmp(out->str, s->expect->str) == 0;
  tap(ok, "%s: result", s->name);
  if (!ok) {
    diag_lines("expected", s->expect->str);
    diag_lines("got", out->str);
  }
  if (s->report) {
    ok = strcmp(report->str, s->report->str) == 0;
    tap(ok, "%s: propagate report", s->name);
    if (!ok) {
      diag_lines("expected", s->report->str);
      diag_lines("got", report->str);
    }
  }
  if (s->choices) {
    ok = strcmp(choices->str, s->choices->str) == 0;
    tap(ok, "%s: what propagate --resolve chose", s->name);
    if (!ok) {
      diag_lines("expected", s->choices->str);
      diag_lines("got", choices->str);
    }
  }
  diag_reset(why);
  ok = same_meaning(&s0->func, &s1->func, why);
  tap(ok, "%s: computes what the original does", s->name);
  if (!ok)
    diag_lines("why", diag_text(why));
  /* the printed result parses back to the same term */
  g_autoptr(Module) again =
      parse_text("result.pir", out->str, strlen(out->str), errors);
  ok = again && module_entry(again)->body == s1->func.body;
  tap(ok, "%s: result round trip", s->name);
  if (!ok)
    diag_lines("why",
               again ? "reparses to a different term" : diag_text(errors));
}

static void run_rules_stanza(const Stanza *s) {
  g_autoptr(Source) src =
      source_new("input.rules", s->program->str, s->program->len);
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(RuleSet) rs = pipeline_load_rules(NULL, src, errors);
  if (s->fail) {
    gboolean ok = !rs && strcmp(diag_text(errors), s->expect->str) == 0;
    tap(ok, "%s: refused with the expected diagnostic", s->name);
    if (!ok) {
      diag_lines("expected", s->expect->str);
      diag_lines("got", rs ? "(loaded)" : diag_text(errors));
    }
    return;
  }
  if (!rs) {
    tap(FALSE, "%s: loads", s->name);
    diag_lines("diagnostic", diag_text(errors));
    return;
  }
  g_autoptr(GString) names = g_string_new(NULL);
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    if (r->kind == RULE_PATTERN && g_str_has_prefix(r->origin, "input.rules"))
      g_string_append_printf(names, "%s\n", r->name);
  }
  gboolean ok = strcmp(names->str, s->expect->str) == 0;
  tap(ok, "%s: loads these rules", s->name);
  if (!ok) {
    diag_lines("expected", s->expect->str);
    diag_lines("got", names->str);
  }
}

static void run_stanza(const Stanza *s) {
  if (strcmp(s->kind, "REWRITE") == 0)
    run_rewrite_stanza(s);
  else if (strcmp(s->kind, "RULES") == 0)
    run_rules_stanza(s);
  else if (strcmp(s->kind, "RUN") == 0)
    run_run_stanza(s);
  else
    run_test_stanza(s);
}

static gboolean run_file(const char *path) {
  g_autofree char *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error)) {
    tap(FALSE, "%s: %s", path, error->message);
    g_error_free(error);
    return FALSE;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  Stanza s = {0};
  GString *into = NULL; /* where plain lines go */
  for (int ln = 0; lines[ln]; ln++) {
    const char *l = lines[ln];
    static const char *const kinds[] = {"TEST", "RUN", "REWRITE", "RULES"};
    const char *kind = NULL;
    for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++)
      if (g_str_has_prefix(l, "%%") && g_str_has_prefix(l + 2, kinds[k]) &&
          l[2 + strlen(kinds[k])] == ' ')
        kind = kinds[k];
    if (kind) {
      if (s.kind) {
        tap(FALSE, "%s:%d: stanza '%s' has no %%%%END", path, s.line, s.name);
        stanza_clear(&s);
      }
      s.kind = g_strdup(kind);
      s.name = g_strstrip(g_strdup(l + 3 + strlen(kind)));
      s.program = g_string_new(NULL);
      s.results = g_ptr_array_new_with_free_func(g_free);
      s.line = ln + 1;
      into = s.program;
    } else if (!s.kind) {
      continue; /* comments and blank lines between stanzas */
    } else if (g_str_has_prefix(l, "%%DO ")) {
      s.script = g_strdup(l + 5);
      into = NULL;
    } else if (strcmp(l, "%%REPORT") == 0) {
      s.report = g_string_new(NULL);
      into = s.report;
    } else if (strcmp(l, "%%CHOICES") == 0) {
      s.choices = g_string_new(NULL);
      into = s.choices;
    } else if (strcmp(l, "%%EXPECT") == 0 || strcmp(l, "%%FAIL") == 0) {
      s.fail = strcmp(l, "%%FAIL") == 0;
      s.expect = g_string_new(NULL);
      into = s.expect;
    } else if (g_str_has_prefix(l, "%%RESULT ")) {
      GString *spec = g_string_new(l + 9);
      g_string_append_c(spec, '\n');
      g_ptr_array_add(s.results, spec->str);
      g_string_free(spec, FALSE);
      into = NULL;
    } else if (strcmp(l, "%%END") == 0) {
      run_stanza(&s);
      stanza_clear(&s);
      into = NULL;
    } else if (into) {
      g_string_append(into, l);
      g_string_append_c(into, '\n');
    } else if (s.results->len > 0) {
      /* values of the last %%RESULT */
      char *last = g_ptr_array_index(s.results, s.results->len - 1);
      char *joined = g_strconcat(last, l, "\n", NULL);
      g_free(last);
      s.results->pdata[s.results->len - 1] = joined;
    }
  }
  if (s.kind)
    tap(FALSE, "%s:%d: stanza '%s' has no %%%%END", path, s.line, s.name);
  stanza_clear(&s);
  return TRUE;
}

static void roundtrip_file(const char *path) {
  g_autofree char *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error)) {
    tap(FALSE, "%s: %s", path, error->message);
    g_error_free(error);
    return;
  }
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m = parse_text(path, text, strlen(text), errors);
  tap(m != NULL, "%s: parses", path);
  if (!m) {
    diag_lines("diagnostic", diag_text(errors));
    return;
  }
  g_autoptr(Diag) why = diag_new(NULL);
  gboolean ok = check_roundtrip(path, m, why);
  tap(ok, "%s: round trip", path);
  if (!ok)
    diag_lines("why", diag_text(why));
}

typedef struct Args {
  int argc;
  char **argv;
} Args;

/* TAP line: the two .npy files hold the same shape and values within
 * rtol/atol (NumPy's allclose rule). */
static void npy_close(const char *a, const char *b, double rtol, double atol) {
  GError *error = NULL;
  Tensor *x = NULL, *y = NULL;
  if (!npy_read(a, &x, &error) || !npy_read(b, &y, &error)) {
    tap(FALSE, "%s ~ %s: %s", a, b, error->message);
    g_error_free(error);
  } else if (x->type != y->type || !dtype_is_float(x->type->dtype)) {
    tap(FALSE, "%s ~ %s: types differ or are not floating", a, b);
  } else {
    int64_t n = type_numel(x->type), bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
      if (!(fabs(tensor_get_float(x, i) - tensor_get_float(y, i)) <=
            atol + rtol * fabs(tensor_get_float(y, i))))
        bad = i;
    tap(bad < 0, "%s ~ %s", a, b);
    if (bad >= 0)
      printf("# element %" G_GINT64_FORMAT ": %.9g vs %.9g\n", bad,
             tensor_get_float(x, bad), tensor_get_float(y, bad));
  }
  if (x)
    tensor_unref(x);
  if (y)
    tensor_unref(y);
}

/* --npy-near: 'got' within 'rel' of the largest magnitude of 'want'
 * (errors of a sum are bounded relative to its terms, not its result). */
static void npy_near(const char *got, const char *want, double rel) {
  GError *error = NULL;
  Tensor *x = NULL, *y = NULL;
  if (!npy_read(got, &x, &error) || !npy_read(want, &y, &error)) {
    tap(FALSE, "%s ~ %s: %s", got, want, error->message);
    g_error_free(error);
  } else if (x->type != y->type) {
    tap(FALSE, "%s ~ %s: their types differ", got, want);
  } else {
    int64_t n = type_numel(x->type), bad = -1;
    gboolean is_float = dtype_is_float(x->type->dtype);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++)
      if (is_float && isfinite(tensor_get_double(y, i)))
        scale = MAX(scale, fabs(tensor_get_double(y, i)));
    for (int64_t i = 0; i < n && bad < 0; i++) {
      double a = tensor_get_double(x, i), b = tensor_get_double(y, i);
      double err = fabs(a - b);
      gboolean same = a == b || (isnan(a) && isnan(b));
      if (!same && (!is_float || !isfinite(b) || !(err <= rel * scale)))
        bad = i;
      else if (!same)
        worst = MAX(worst, err / scale);
    }
    tap(bad < 0, "%s ~ %s: largest error %.3g of max|want| (allowed %.3g)", got,
        want, worst, rel);
    if (bad >= 0)
      printf("# element %" G_GINT64_FORMAT ": %.9g, want %.9g\n", bad,
             tensor_get_double(x, bad), tensor_get_double(y, bad));
  }
  if (x)
    tensor_unref(x);
  if (y)
    tensor_unref(y);
}

static int run_all(void *data) {
  Args *a = data;
  gboolean roundtrip = FALSE;
  for (int i = 1; i < a->argc; i++) {
    if (strcmp(a->argv[i], "--roundtrip") == 0) {
      roundtrip = TRUE;
    } else if (strcmp(a->argv[i], "--npy-close") == 0 && i + 4 < a->argc) {
      npy_close(a->argv[i + 1], a->argv[i + 2],
                g_ascii_strtod(a->argv[i + 3], NULL),
                g_ascii_strtod(a->argv[i + 4], NULL));
      i += 4;
    } else if (strcmp(a->argv[i], "--npy-near") == 0 && i + 3 < a->argc) {
      npy_near(a->argv[i + 1], a->argv[i + 2],
               g_ascii_strtod(a->argv[i + 3], NULL));
      i += 3;
    } else if (roundtrip) {
      roundtrip_file(a->argv[i]);
    } else {
      run_file(a->argv[i]);
    }
  }
  printf("1..%d\n", test_no);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  Args a = {argc, argv};
  g_autoptr(Diag) errors = diag_new(NULL);
  shipped_rules = pipeline_load_rules(NULL, NULL, errors);
  int status = partir_call_with_stack(run_all, &a);
  ruleset_free(shipped_rules);
  return status;
}
